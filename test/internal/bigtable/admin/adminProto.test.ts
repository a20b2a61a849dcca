/**
 * The hand-encoded admin messages against the official protos (protobufjs over the descriptors of
 * `@google-cloud/bigtable-api`, a devDependency): what we encode decodes there to the same message,
 * and what they encode we decode.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { createRequire } from "node:module"
import protobuf from "protobufjs"
import type { ColumnFamilyProto, GcRuleProto, ValueTypeProto } from "../../../../src/Bigtable/BigtableClient.ts"
import * as proto from "../../../../src/internal/bigtable/admin/adminProto.ts"

const require = createRequire(import.meta.url)
const root = protobuf.Root.fromJSON(
  require("@google-cloud/bigtable-api/build/protos/protos.json") as protobuf.INamespace
)
const v2 = "google.bigtable.admin.v2."
const CreateTableRequest = root.lookupType(`${v2}CreateTableRequest`)
const GetTableRequest = root.lookupType(`${v2}GetTableRequest`)
const ModifyColumnFamiliesRequest = root.lookupType(`${v2}ModifyColumnFamiliesRequest`)
const GetAppProfileRequest = root.lookupType(`${v2}GetAppProfileRequest`)
const Table = root.lookupType(`${v2}Table`)
const AppProfile = root.lookupType(`${v2}AppProfile`)

const asObject = (type: protobuf.Type, bytes: Uint8Array): unknown =>
  type.toObject(type.decode(bytes), { longs: Number, enums: String, defaults: false })

/** GC rules as the sink builds them: positive versions, whole-millisecond ages, nested sets of two or more. */
const gcRule: fc.Arbitrary<GcRuleProto> = fc.letrec<{ rule: GcRuleProto }>((tie) => ({
  rule: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.integer({ min: 1, max: 2_147_483_647 }).map((maxNumVersions) => ({ maxNumVersions })),
    fc.record({ seconds: fc.integer({ min: 0, max: 315_576_000_000 }), nanos: fc.integer({ min: 0, max: 999 }) })
      .map(({ nanos, seconds }) => ({ maxAge: { seconds, nanos: nanos * 1_000_000 } })),
    fc.array(tie("rule"), { minLength: 2, maxLength: 3 }).map((rules) => ({ union: { rules } })),
    fc.array(tie("rule"), { minLength: 2, maxLength: 3 }).map((rules) => ({ intersection: { rules } }))
  )
})).rule

const int64: ValueTypeProto = { int64Type: { encoding: { bigEndianBytes: {} } } }
const valueType: fc.Arbitrary<ValueTypeProto | undefined> = fc.constantFrom(
  undefined,
  { aggregateType: { inputType: int64, sum: {} } },
  { aggregateType: { inputType: int64, min: {} } },
  { aggregateType: { inputType: int64, max: {} } },
  { aggregateType: { inputType: int64, hllppUniqueCount: {} } }
)
const family: fc.Arbitrary<ColumnFamilyProto> = fc.record(
  { gcRule, valueType: valueType.filter((t) => t !== undefined) },
  { requiredKeys: [] }
)
const families = fc.dictionary(fc.stringMatching(/^[-_.a-zA-Z0-9]{1,8}$/), family, { minKeys: 1, maxKeys: 4 })

/** What protobufjs gives back for a family we sent: empty messages stay empty objects, zero fields drop out. */
const normalizedRule = (rule: GcRuleProto): unknown => {
  if (rule.maxNumVersions != null) return { maxNumVersions: rule.maxNumVersions }
  if (rule.maxAge != null) {
    const { nanos, seconds } = rule.maxAge
    return { maxAge: { ...(seconds ? { seconds } : {}), ...(nanos ? { nanos } : {}) } }
  }
  if (rule.union != null) return { union: { rules: (rule.union.rules ?? []).map(normalizedRule) } }
  return { intersection: { rules: (rule.intersection?.rules ?? []).map(normalizedRule) } }
}
const normalizedFamily = (f: ColumnFamilyProto): unknown => ({
  ...(f.gcRule == null ? {} : { gcRule: normalizedRule(f.gcRule) }),
  ...(f.valueType == null ? {} : { valueType: f.valueType })
})
/**
 * What the decoder keeps of a family protobufjs encoded: the rule as given (protobufjs writes a zero
 * it was given), and of a value type its aggregator (not its input type).
 */
const decodedFamily = (f: ColumnFamilyProto): unknown => {
  const { inputType: _, ...aggregator } = f.valueType?.aggregateType ?? {}
  return {
    ...(f.gcRule == null ? {} : { gcRule: f.gcRule }),
    ...(f.valueType == null ? {} : { valueType: { aggregateType: aggregator } })
  }
}

describe("adminProto", () => {
  it("CreateTableRequest decodes with the official protos to what was asked", () => {
    fc.assert(fc.property(families, (columnFamilies) => {
      const bytes = proto.encodeCreateTable({ parent: "projects/p/instances/i", tableId: "t", columnFamilies })
      assert.deepStrictEqual(asObject(CreateTableRequest, bytes), {
        parent: "projects/p/instances/i",
        tableId: "t",
        table: {
          columnFamilies: Object.fromEntries(
            Object.entries(columnFamilies).map(([name, f]) => [name, normalizedFamily(f)])
          )
        }
      })
    }))
  })

  it("ModifyColumnFamiliesRequest creates each family in one request", () => {
    fc.assert(fc.property(families, (create) => {
      const bytes = proto.encodeModifyColumnFamilies({ name: "projects/p/instances/i/tables/t", create })
      assert.deepStrictEqual(asObject(ModifyColumnFamiliesRequest, bytes), {
        name: "projects/p/instances/i/tables/t",
        modifications: Object.entries(create).map(([id, f]) => ({ id, create: normalizedFamily(f) }))
      })
    }))
  })

  it("GetTableRequest asks for the schema view; GetAppProfileRequest names the profile", () => {
    assert.deepStrictEqual(asObject(GetTableRequest, proto.encodeGetTable("projects/p/instances/i/tables/t")), {
      name: "projects/p/instances/i/tables/t",
      view: "SCHEMA_VIEW"
    })
    assert.deepStrictEqual(asObject(GetAppProfileRequest, proto.encodeGetAppProfile("projects/p/instances/i/a")), {
      name: "projects/p/instances/i/a"
    })
  })

  it("a Table encoded by the official protos decodes to its families", () => {
    fc.assert(fc.property(families, (columnFamilies) => {
      const message = Table.fromObject({ name: "projects/p/instances/i/tables/t", columnFamilies })
      const decoded = proto.decodeTable(Table.encode(message).finish())
      assert.strictEqual(decoded.name, "projects/p/instances/i/tables/t")
      assert.deepStrictEqual(
        decoded.columnFamilies,
        Object.fromEntries(Object.entries(columnFamilies).map(([name, f]) => [name, decodedFamily(f)]))
      )
    }))
  })

  it("a Table with value types the sink does not create keeps them as present kinds", () => {
    const message = Table.fromObject({
      columnFamilies: { s: { valueType: { stringType: { encoding: { utf8Bytes: {} } } } }, raw: {} }
    })
    const decoded = proto.decodeTable(Table.encode(message).finish())
    assert.deepStrictEqual(decoded.columnFamilies, { s: { valueType: { stringType: {} } }, raw: {} })
  })

  it("an AppProfile's routing decodes", () => {
    const single = AppProfile.encode(AppProfile.fromObject({
      name: "a",
      singleClusterRouting: { clusterId: "c1", allowTransactionalWrites: true }
    })).finish()
    assert.deepStrictEqual(proto.decodeAppProfile(single), {
      singleClusterRouting: { clusterId: "c1", allowTransactionalWrites: true }
    })
    const multi = AppProfile.encode(AppProfile.fromObject({ multiClusterRoutingUseAny: {} })).finish()
    assert.deepStrictEqual(proto.decodeAppProfile(multi), { multiClusterRoutingUseAny: {} })
  })

  it("a truncated Table is a RangeError naming the message", () => {
    const bytes = Table.encode(Table.fromObject({ name: "projects/p/instances/i/tables/t" })).finish()
    assert.throws(() => proto.decodeTable(bytes.subarray(0, bytes.length - 3)), RangeError, /Table/)
  })
})
