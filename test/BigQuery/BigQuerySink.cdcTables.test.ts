/**
 * CDC table provisioning through the sink against the fake BigQuery (reference 2.12): creation with
 * `tableConstraints.primaryKey` and the contract label, `max_staleness` set by an `ALTER TABLE` query
 * job and verified through `INFORMATION_SCHEMA.TABLE_OPTIONS`, the etag-guarded label flip (a lost
 * condition re-reads), the retriable set, PK drift always failing, VERIFY_ONLY never touching an
 * unlabelled table while RECONCILE adopts it, and an evicted destination verified again on reopening.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Stream } from "effect"
import { TestClock } from "effect/testing"
import {
  BigQuerySink,
  type Cdc,
  CdcTableOptions,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import { encodeDescriptor } from "../../src/internal/bigquery/encoding/descriptor.ts"
import type * as Fake from "../support/fakeBigQueryWrite.ts"
import * as FakeCdc from "../support/fakeCdcTable.ts"
import { type Change, serializer } from "./cdcFixtures.ts"
import * as F from "./sinkFixtures.ts"

const changes: ReadonlyArray<Change> = [
  { op: "UPSERT", id: 1n, name: "a", seq: "2" },
  { op: "DELETE", id: 1n, seq: "1" },
  { op: "UPSERT", id: 2n, name: "b", seq: "1" }
]

const key = (fake: Fake.FakeBigQuery) => `${fake.projectId}.d.t`
const labelOf = (fake: Fake.FakeBigQuery): unknown =>
  Reflect.get(Reflect.get(fake.table(key(fake)) ?? {}, "labels") ?? {}, "flink_gcp_cdc")
const pkOf = (fake: Fake.FakeBigQuery): unknown =>
  Reflect.get(
    Reflect.get(Reflect.get(fake.table(key(fake)) ?? {}, "tableConstraints") ?? {}, "primaryKey") ?? {},
    "columns"
  )

const write = (
  fake: Fake.FakeBigQuery,
  cdc: Omit<Cdc.CdcOptions<Change>, "changeType" | "sequenceNumber">,
  sink: { readonly createDisposition?: "CREATE_IF_NEEDED" | "CREATE_NEVER" } = {}
) =>
  Effect.gen(function*() {
    return yield* Stream.fromIterable(changes).pipe(Stream.run(BigQuerySink.make({
      ...sink,
      table: yield* F.destination(fake),
      serializer: yield* serializer,
      writeMethod: WriteMethod.atLeastOnce({
        ...F.fastRetries,
        cdc: { changeType: (c) => c.op, sequenceNumber: (c) => c.seq ?? "", ...cdc }
      })
    })))
  })

/** The `TableAdminFailed.method` (or the tag) a failed write ended with. */
const failedWith = (exit: Exit.Exit<unknown, unknown>): string => {
  if (!Exit.isFailure(exit)) return "success"
  const error = exit.cause.reasons[0]
  const value: unknown = error !== undefined && "error" in error ? error.error : undefined
  const reason: unknown = typeof value === "object" && value !== null ? Reflect.get(value, "reason") : undefined
  const method: unknown = typeof reason === "object" && reason !== null ? Reflect.get(reason, "method") : undefined
  const tag: unknown = typeof reason === "object" && reason !== null ? Reflect.get(reason, "_tag") : undefined
  return typeof method === "string" ? method : String(tag)
}

const resource = (pk: ReadonlyArray<string>): Fake.TableResource => ({
  tableReference: { projectId: "p", datasetId: "d", tableId: "t" },
  schema: { fields: F.columns },
  etag: "e",
  ...(pk.length === 0 ? {} : { tableConstraints: { primaryKey: { columns: pk } } })
})

const fifteenMinutes = { primaryKey: ["id"], maxStaleness: "15 minutes" } as const

describe("BigQuerySink CDC tables", () => {
  it.live("a missing table is created with its primary key, max_staleness set by DDL and verified, then labelled complete", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const summary = yield* write(fake, { tableOptions: fifteenMinutes })
        assert.strictEqual(summary.recordsWritten, 3)
        assert.deepStrictEqual(pkOf(fake), ["id"])
        const options = yield* CdcTableOptions.make(fifteenMinutes)
        assert.strictEqual(labelOf(fake), `complete_${CdcTableOptions.specHash(options)}`)
        assert.strictEqual(fake.cdc.staleness.get(key(fake)), 900_000_000n)
        assert.deepStrictEqual(fake.cdc.queries, [
          `SELECT option_value FROM \`${fake.projectId}.d.INFORMATION_SCHEMA.TABLE_OPTIONS\` WHERE table_name = 't' AND option_name = 'max_staleness'`,
          `ALTER TABLE \`${key(fake)}\` SET OPTIONS (max_staleness = INTERVAL 900000000 MICROSECOND)`,
          `SELECT option_value FROM \`${fake.projectId}.d.INFORMATION_SCHEMA.TABLE_OPTIONS\` WHERE table_name = 't' AND option_name = 'max_staleness'`
        ])
        assert.deepStrictEqual(fake.table(key(fake))?.schema.fields.map((f) => f.name), ["id", "name"])
        assert.deepStrictEqual(fake.cdc.rows(key(fake)).map((r) => r["id"]), ["1", "2"])
        // the flip was conditioned on the etag of the snapshot read after the ALTER
        assert.deepStrictEqual(fake.stats.restCalls.filter((c) => c.startsWith("PATCH")).length, 1)
      }))))

  it.live("unmanaged staleness: created complete, no query job", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        yield* write(fake, { tableOptions: { primaryKey: ["id"] } })
        const options = yield* CdcTableOptions.make({ primaryKey: ["id"] })
        assert.strictEqual(labelOf(fake), `complete_${CdcTableOptions.specHash(options)}`)
        assert.deepStrictEqual(fake.cdc.queries, [])
      }))))

  it.live("CREATE_NEVER: a missing table is TableNotFound; without a configured key no table is created", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const never = yield* Effect.exit(
          write(fake, { tableOptions: fifteenMinutes }, { createDisposition: "CREATE_NEVER" })
        )
        assert.strictEqual(failedWith(never), "BigQueryTableNotFound")
        const noKey = yield* Effect.exit(write(fake, {}))
        assert.strictEqual(failedWith(noKey), "cdc.NoPrimaryKey")
        assert.isUndefined(fake.table(key(fake)))
      }))))

  it.live("primary-key drift always fails and changes nothing (both policies); a table without a key fails", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(key(fake), F.columns, { tableConstraints: { primaryKey: { columns: ["name"] } } })
        for (const reconciliation of ["VERIFY_ONLY", "RECONCILE"] as const) {
          const exit = yield* Effect.exit(write(fake, { tableOptions: fifteenMinutes, reconciliation }))
          assert.strictEqual(failedWith(exit), "cdc.PrimaryKeyDrift")
        }
        assert.deepStrictEqual(pkOf(fake), ["name"])
        assert.isUndefined(labelOf(fake))
        assert.deepStrictEqual(fake.cdc.queries, [])
        assert.strictEqual(fake.rows(key(fake)).length, 0)
        fake.createTable(key(fake), F.columns)
        assert.strictEqual(failedWith(yield* Effect.exit(write(fake, {}))), "cdc.NoPrimaryKey")
      }))))

  it.live("VERIFY_ONLY verifies an unlabelled table and never changes it; RECONCILE adopts it", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(key(fake), F.columns, { tableConstraints: { primaryKey: { columns: ["ID"] } } })
        const verify = yield* Effect.exit(write(fake, { tableOptions: fifteenMinutes }))
        assert.strictEqual(failedWith(verify), "cdc.StalenessMismatch")
        assert.isUndefined(labelOf(fake))
        assert.isFalse(fake.cdc.queries.some((q) => q.startsWith("ALTER")))
        // VERIFY_ONLY with no table options adopts the table's key
        yield* write(fake, {})
        assert.isUndefined(labelOf(fake))
        yield* write(fake, { tableOptions: fifteenMinutes, reconciliation: "RECONCILE" })
        const options = yield* CdcTableOptions.make(fifteenMinutes)
        assert.strictEqual(labelOf(fake), `complete_${CdcTableOptions.specHash(options)}`)
        assert.strictEqual(fake.cdc.staleness.get(key(fake)), 900_000_000n)
        // a table carrying another completed contract: VERIFY_ONLY fails, RECONCILE migrates it
        const cleared = { primaryKey: ["id"], clearMaxStaleness: true }
        assert.strictEqual(
          failedWith(yield* Effect.exit(write(fake, { tableOptions: cleared }))),
          "cdc.ContractMismatch"
        )
        yield* write(fake, { tableOptions: cleared, reconciliation: "RECONCILE" })
        assert.isUndefined(fake.cdc.staleness.get(key(fake)))
        assert.match(String(labelOf(fake)), /^complete_/)
      }))))

  it.live("a pending label of another contract is never taken over", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(key(fake), F.columns, {
          tableConstraints: { primaryKey: { columns: ["id"] } },
          labels: { flink_gcp_cdc: "pending_0123456789abcdef0123456789abcdef" }
        })
        const exit = yield* Effect.exit(write(fake, { tableOptions: fifteenMinutes, reconciliation: "RECONCILE" }))
        assert.strictEqual(failedWith(exit), "cdc.ForeignPending")
        assert.strictEqual(labelOf(fake), "pending_0123456789abcdef0123456789abcdef")
      }))))

  it.live("the retriable set: 429 and 5xx REST answers and rate-limited jobs are retried; a lost condition re-reads", () =>
    Effect.scoped(F.withFake({
      restAnswer: (() => {
        const seen = new Set<string>()
        return (method: string, path: string) => {
          const first = !seen.has(method)
          seen.add(method)
          if (!first) return undefined
          if (method === "GET" && path.includes("/tables/")) return 429
          if (method === "PATCH") return 412
          return undefined
        }
      })()
    }, (fake) =>
      Effect.gen(function*() {
        fake.cdc.failQueries.push("rateLimitExceeded", "backendError")
        fake.createTable(key(fake), F.columns, { tableConstraints: { primaryKey: { columns: ["id"] } } })
        yield* write(fake, { tableOptions: fifteenMinutes, reconciliation: "RECONCILE" })
        assert.match(String(labelOf(fake)), /^complete_/)
        assert.strictEqual(fake.cdc.staleness.get(key(fake)), 900_000_000n)
        assert.isAtLeast(fake.stats.restCalls.filter((c) => c.startsWith("PATCH")).length, 3)
        fake.cdc.failQueries.push("invalidQuery")
        fake.createTable(key(fake), F.columns, { tableConstraints: { primaryKey: { columns: ["id"] } } })
        const exit = yield* Effect.exit(write(fake, { tableOptions: fifteenMinutes, reconciliation: "RECONCILE" }))
        assert.strictEqual(failedWith(exit), "tables.query")
      }))))

  it.effect("an evicted destination is verified again when it reopens", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(key(fake), F.columns, { tableConstraints: { primaryKey: { columns: ["id"] } } })
        const w = yield* BigQuerySink.writer({
          table: yield* F.destination(fake),
          serializer: yield* serializer,
          writeMethod: WriteMethod.atLeastOnce({
            destinationIdleTimeout: "1 minute",
            cdc: {
              changeType: (c: Change) => c.op,
              sequenceNumber: (c: Change) => c.seq ?? "",
              tableOptions: { primaryKey: ["id"] }
            }
          })
        })
        yield* w.write(changes.slice(0, 1))
        yield* w.flush
        const reads = () => fake.stats.restCalls.filter((c) => c.startsWith("GET") && c.endsWith("/tables/t")).length
        const before = reads()
        // the key changes while the destination is open: nothing notices until it reopens
        fake.createTable(key(fake), F.columns, { tableConstraints: { primaryKey: { columns: ["name"] } } })
        yield* w.write(changes.slice(1, 2))
        yield* w.flush
        assert.strictEqual(reads(), before)
        yield* TestClock.adjust("61 seconds")
        yield* w.flush
        const exit = yield* Effect.exit(Effect.andThen(w.write(changes.slice(2)), w.flush))
        assert.strictEqual(failedWith(exit), "cdc.PrimaryKeyDrift")
        assert.isAbove(reads(), before)
      })))

  it.effect("the fake refuses _CHANGE_TYPE on a table without a primary key, and bad pseudocolumn values per row", () =>
    Effect.gen(function*() {
      // the fake's own checks, which provisioning keeps the sink from reaching
      const cdc = FakeCdc.make()
      const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
      // a serializer writing the pseudocolumns as ordinary fields, unchecked
      const raw = yield* Effect.orDie(RowSerializer.fromJson({
        fields: [
          ...F.schema.fields,
          TableSchema.field({ name: "_CHANGE_TYPE", type: "STRING" }),
          TableSchema.field({ name: "_CHANGE_SEQUENCE_NUMBER", type: "STRING" })
        ]
      }))
      const descriptor = encodeDescriptor(RowSerializer.descriptorOf(raw, table))
      const row = (op: string, seq: string) =>
        raw.serialize({ id: 1n, _CHANGE_TYPE: op, _CHANGE_SEQUENCE_NUMBER: seq }, table) as Uint8Array
      assert.deepStrictEqual(cdc.check(resource([]), descriptor, [row("UPSERT", "1")]), {
        _tag: "error",
        code: 3,
        message: "_CHANGE_TYPE is only supported on tables with a primary key"
      })
      assert.isUndefined(cdc.check(resource(["id"]), descriptor, [row("UPSERT", "1"), row("DELETE", "ff/0")]))
      assert.deepStrictEqual(cdc.check(resource(["id"]), descriptor, [row("UPSERT", "1"), row("INSERT", "x")]), {
        _tag: "rowErrors",
        errors: [
          { index: 1, message: "invalid _CHANGE_TYPE: INSERT" },
          { index: 1, message: "invalid _CHANGE_SEQUENCE_NUMBER: x" }
        ]
      })
      const sequenceOnly = yield* Effect.orDie(RowSerializer.fromJson({
        fields: [...F.schema.fields, TableSchema.field({ name: "_CHANGE_SEQUENCE_NUMBER", type: "STRING" })]
      }))
      const answer = cdc.check(resource(["id"]), encodeDescriptor(RowSerializer.descriptorOf(sequenceOnly, table)), [])
      assert.deepStrictEqual(answer, {
        _tag: "error",
        code: 3,
        message: "_CHANGE_SEQUENCE_NUMBER requires _CHANGE_TYPE"
      })
      // a writer schema without pseudocolumns is not CDC: rows are appended as they are
      assert.isUndefined(
        cdc.check(resource([]), encodeDescriptor(RowSerializer.descriptorOf(yield* serializer, table)), [])
      )
    }))
})
