import { assert, describe, it } from "@effect/vitest"
import { appProfileRouting, tableSchema } from "../../../../src/internal/bigtable/admin/adminCalls.ts"

describe("adminCalls", () => {
  it("tableSchema reads value types and which families carry a GC rule", () => {
    const schema = tableSchema({
      columnFamilies: {
        m: { gcRule: null, valueType: null },
        empty: { gcRule: {} },
        zero: { gcRule: { maxNumVersions: 0 } },
        versions: { gcRule: { maxNumVersions: 1 } },
        age: { gcRule: { maxAge: { seconds: 60 } } },
        union: { gcRule: { union: { rules: [] } } },
        sum: { valueType: { aggregateType: { sum: {} } } }
      }
    })
    assert.deepStrictEqual([...(schema.withGcRule ?? [])].toSorted(), ["age", "union", "versions"])
    assert.strictEqual(schema.columnFamilies.get("sum"), "INT64_SUM")
    assert.strictEqual(schema.columnFamilies.get("m"), "RAW")
  })

  it("appProfileRouting reads single-cluster routing and transactional writes", () => {
    assert.deepStrictEqual(
      appProfileRouting({ singleClusterRouting: { clusterId: "c1", allowTransactionalWrites: true } }),
      { _tag: "SingleCluster", clusterId: "c1", allowTransactionalWrites: true }
    )
    assert.deepStrictEqual(
      appProfileRouting({ singleClusterRouting: { clusterId: "c1" } }),
      { _tag: "SingleCluster", clusterId: "c1", allowTransactionalWrites: false }
    )
    assert.deepStrictEqual(appProfileRouting({ multiClusterRoutingUseAny: {} }), { _tag: "Other" })
    assert.deepStrictEqual(appProfileRouting(undefined), { _tag: "Other" })
  })
})
