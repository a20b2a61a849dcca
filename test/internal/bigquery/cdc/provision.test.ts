/**
 * The pure parts of the CDC provisioning I/O (reference 2.12): reading `max_staleness` back from
 * `INFORMATION_SCHEMA.TABLE_OPTIONS` (no value or zero = cleared), the DDL and query text, a table
 * snapshot from a REST resource, the creation fields, and the retriable set of query jobs.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { TableDestination } from "../../../../src/BigQuery/index.ts"
import * as Provision from "../../../../src/internal/bigquery/cdc/provision.ts"
import { classifyAdmin } from "../../../../src/internal/bigquery/transport/classify.ts"
import { stalenessText as fakeFormat } from "../../../support/fakeCdcTable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })

const labelOf = (fields: Record<string, unknown> | undefined): unknown => {
  const labels = fields?.["labels"]
  return typeof labels === "object" && labels !== null ? Reflect.get(labels, "flink_gcp_cdc") : undefined
}

describe("CDC provisioning I/O", () => {
  it("max_staleness read back: interval literals, cleared for no value or zero, unreadable as -1", () => {
    assert.isUndefined(Provision.parseStaleness(undefined))
    assert.isUndefined(Provision.parseStaleness("INTERVAL \"0-0 0 0:0:0\" YEAR TO SECOND"))
    assert.strictEqual(Provision.parseStaleness("INTERVAL \"0-0 0 0:15:0\" YEAR TO SECOND"), 900_000_000n)
    assert.strictEqual(Provision.parseStaleness("INTERVAL '0-0 1 2:3:4.5' YEAR TO SECOND"), 93_784_500_000n)
    for (
      const bad of [
        "INTERVAL \"1-0 0 0:0:0\" YEAR TO SECOND",
        "INTERVAL \"0-0 0 -1:0:0\" YEAR TO SECOND",
        "15 minutes",
        "INTERVAL \"0-0 0 0:0:0.0000001\" YEAR TO SECOND"
      ]
    ) {
      assert.strictEqual(Provision.parseStaleness(bad), -1n, bad)
    }
    // what the fake writes reads back as the microseconds it holds
    fc.assert(fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n }), (micros) => {
      assert.strictEqual(Provision.parseStaleness(fakeFormat(micros)), micros)
    }))
  })

  it("the DDL and the verification query", () => {
    assert.strictEqual(
      Provision.alterSql(table, { _tag: "AlterStaleness", maxStaleness: { _tag: "Set", micros: 5n } }),
      "ALTER TABLE `p.d.t` SET OPTIONS (max_staleness = INTERVAL 5 MICROSECOND)"
    )
    assert.strictEqual(
      Provision.alterSql(table, { _tag: "AlterStaleness", maxStaleness: { _tag: "Clear" } }),
      "ALTER TABLE `p.d.t` SET OPTIONS (max_staleness = NULL)"
    )
    assert.strictEqual(
      Provision.selectSql(table),
      "SELECT option_value FROM `p.d.INFORMATION_SCHEMA.TABLE_OPTIONS` WHERE table_name = 't' AND option_name = 'max_staleness'"
    )
  })

  it("a snapshot of a REST table: primary key, string labels, etag", () => {
    assert.deepStrictEqual(
      Provision.snapshotOf({
        schema: undefined,
        etag: "e1",
        metadata: { tableConstraints: { primaryKey: { columns: ["id", 3, "k"] } }, labels: { a: "b", n: 1 } }
      }),
      { primaryKey: ["id", "k"], labels: { a: "b" }, etag: "e1" }
    )
    assert.deepStrictEqual(Provision.snapshotOf({ schema: undefined, etag: undefined, metadata: undefined }), {
      primaryKey: [],
      labels: {},
      etag: undefined
    })
  })

  it("creation fields: the key and the label (complete when unmanaged); none without a key", () => {
    const unmanaged = Provision.createFieldsOf({ primaryKey: ["id"], maxStaleness: { _tag: "Unmanaged" } })
    assert.deepStrictEqual(Reflect.get(unmanaged ?? {}, "tableConstraints"), { primaryKey: { columns: ["id"] } })
    assert.match(
      String(labelOf(unmanaged)),
      /^complete_[0-9a-f]{32}$/
    )
    const managed = Provision.createFieldsOf({ primaryKey: ["id"], maxStaleness: { _tag: "Clear" } })
    assert.match(String(labelOf(managed)), /^pending_[0-9a-f]{32}$/)
    assert.isUndefined(Provision.createFieldsOf({ primaryKey: [], maxStaleness: { _tag: "Unmanaged" } }))
  })

  it("the retriable set of query jobs: rate limits and backend errors, with or without a status", () => {
    for (
      const reason of ["rateLimitExceeded", "jobRateLimitExceeded", "backendError", "internalError", "jobBackendError"]
    ) {
      assert.strictEqual(classifyAdmin("query", undefined, reason), "retry", reason)
      assert.strictEqual(classifyAdmin("query", 400, reason), "retry", reason)
    }
    for (const reason of ["invalidQuery", "accessDenied", "notFound", "quotaExceeded"]) {
      assert.strictEqual(classifyAdmin("query", undefined, reason), "fail", reason)
    }
    // ambiguous transport (no status, no reason), 429 and 5xx
    assert.strictEqual(classifyAdmin("query", undefined, undefined), "retry")
    assert.strictEqual(classifyAdmin("query", 429, undefined), "retry")
    assert.strictEqual(classifyAdmin("query", 503, undefined), "retry")
    assert.strictEqual(classifyAdmin("query", 400, undefined), "fail")
  })
})
