import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { GcRule, TableDestination, WriteMethod } from "../../../src/Bigtable/index.ts"
import * as options from "../../../src/internal/bigtable/options.ts"
import { FailureHandler } from "../../../src/Sink.ts"

/** A destination that skipped validation, as untyped JavaScript could build one. */
class Forged extends TableDestination.TableDestination {
  // eslint-disable-next-line no-useless-constructor -- it makes the protected constructor public
  constructor(fields: TableDestination.TableDestinationFields) {
    super(fields)
  }
}

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const serializer = () => null
const base = { table, serializer }

const rejects = (input: Parameters<typeof options.settings<unknown, undefined>>[0], path: string) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(options.settings(input))
    assert.strictEqual(error.path, path, error.message)
  })

const writer = (w: Record<string, unknown>, path: string) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(options.writerSettings(w))
    assert.strictEqual(error.path, `writeMethod.${path}`, error.message)
  })

const gcRuleRejected = (gcRule: GcRule.GcRule, path: string) =>
  rejects(
    {
      ...base,
      createDisposition: "CREATE_IF_NEEDED",
      tableCreateOptions: { columnFamilies: { cf: { gcRule } } }
    },
    `tableCreateOptions.columnFamilies.cf.gcRule${path}`
  )

describe("Bigtable options", () => {
  it.effect("defaults (reference 3.4)", () =>
    Effect.gen(function*() {
      const s = yield* options.settings(base)
      assert.strictEqual(s.writer.batchElementCount, 100)
      assert.strictEqual(s.writer.batchByteSize, 20 * 1024 * 1024)
      assert.strictEqual(s.writer.maxInFlightEntries, 1000)
      assert.strictEqual(s.writer.maxInFlightBytes, 64 * 1024 * 1024)
      assert.strictEqual(s.writer.maxConsecutiveRejections, 100)
      assert.strictEqual(s.writer.recovery._tag, "Backoff")
      if (s.writer.recovery._tag === "Backoff") {
        assert.strictEqual(Duration.toMillis(s.writer.recovery.initialBackoff), 500)
        assert.strictEqual(Duration.toMillis(s.writer.recovery.maxBackoff), 10_000)
        assert.strictEqual(s.writer.recovery.maxAttempts, 10)
      }
      assert.deepStrictEqual(s.writer.retry, {
        _tag: "Backoff",
        initialBackoff: Duration.millis(10),
        maxBackoff: Duration.minutes(1),
        maxAttempts: 15,
        multiplier: 2,
        maxDuration: undefined
      })
      assert.strictEqual(Duration.toMillis(s.writer.responseTimeout), 60_000)
      assert.strictEqual(Duration.toMillis(s.writer.adminTimeout), 60_000)
      assert.isUndefined(s.flushInterval)
      assert.strictEqual(Duration.toMillis(s.writer.destinationIdleTimeout), 3_600_000)
      assert.isFalse(s.writer.perDestinationMetrics)
      assert.strictEqual(s.createDisposition, "CREATE_NEVER")
      assert.strictEqual(s.handler, FailureHandler.failJob)
      assert.isUndefined(s.appProfileId)
    }))

  it.effect("destination: exactly one of table and destinationResolver", () =>
    Effect.gen(function*() {
      yield* rejects({ serializer }, "table")
      yield* rejects({ table, destinationResolver: () => table, serializer }, "table")
      yield* rejects({
        table: new Forged({ projectId: "p", instanceId: "i", tableId: "a/b" }),
        serializer
      }, "table.tableId")
      const s = yield* options.settings({ destinationResolver: () => table, serializer })
      assert.strictEqual(s.resolve(1), table)
    }))

  it.effect("serializer is required; appProfileId must not be blank", () =>
    Effect.gen(function*() {
      // @ts-expect-error a JavaScript caller may leave it out
      yield* rejects({ table }, "serializer")
      yield* rejects({ ...base, appProfileId: " " }, "appProfileId")
    }))

  it.effect("create disposition and tableCreateOptions must agree", () =>
    Effect.gen(function*() {
      yield* rejects({ ...base, tableCreateOptions: { columnFamilies: { cf: {} } } }, "tableCreateOptions")
      yield* rejects({ ...base, createDisposition: "CREATE_IF_NEEDED" }, "tableCreateOptions")
      yield* rejects(
        { ...base, createDisposition: "CREATE_IF_NEEDED", tableCreateOptions: { columnFamilies: {} } },
        "tableCreateOptions.columnFamilies"
      )
      yield* rejects(
        {
          ...base,
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { cf: { type: "INT32" as "RAW" } } }
        },
        "tableCreateOptions.columnFamilies.cf.type"
      )
      // a family name Bigtable refuses, before any I/O, with the rule it breaks
      const badFamily = yield* Effect.flip(options.settings({
        ...base,
        createDisposition: "CREATE_IF_NEEDED",
        tableCreateOptions: { columnFamilies: { "my family": {} } }
      }))
      assert.include(badFamily.path, "tableCreateOptions.columnFamilies")
      assert.include(badFamily.message, "must be letters, digits, '_', '-' and '.', was 'my family'")
      const s = yield* options.settings({
        ...base,
        createDisposition: "CREATE_IF_NEEDED",
        tableCreateOptions: { columnFamilies: { cf: { gcRule: GcRule.maxVersions(1) }, sum: { type: "INT64_SUM" } } }
      })
      assert.isTrue(s.declared?.hasAggregate)
      assert.deepStrictEqual([...(s.declared?.families.keys() ?? [])], ["cf", "sum"])
    }))

  it.effect("GC rules: maxVersions > 0, maxAge > 0, union and intersection of at least two", () =>
    Effect.gen(function*() {
      yield* gcRuleRejected(GcRule.maxVersions(0), ".versions")
      yield* gcRuleRejected(GcRule.maxAge(0), ".age")
      yield* gcRuleRejected(GcRule.union(GcRule.maxVersions(1)), ".rules")
      yield* gcRuleRejected(GcRule.intersection(GcRule.maxVersions(1), GcRule.maxVersions(-1)), ".rules[1].versions")
    }))

  it.effect("writer option ranges (reference 3.4)", () =>
    Effect.gen(function*() {
      yield* writer({ batchElementCount: 0 }, "batchElementCount")
      yield* writer({ batchElementCount: 20_000 }, "batchElementCount")
      yield* writer({ batchElementCount: 1.5 }, "batchElementCount")
      yield* writer({ batchByteSize: 0 }, "batchByteSize")
      yield* writer({ batchByteSize: 100 * 1024 * 1024 }, "batchByteSize")
      yield* writer({ maxInFlightEntries: 0 }, "maxInFlightEntries")
      yield* writer({ maxInFlightBytes: 0 }, "maxInFlightBytes")
      yield* writer({ maxConsecutiveRejections: 0 }, "maxConsecutiveRejections")
      yield* writer({ maxConsecutiveRejections: -2 }, "maxConsecutiveRejections")
      const recovery = { initialBackoff: "500 millis", maxBackoff: "10 seconds", maxAttempts: 10 }
      yield* writer({ recovery: { ...recovery, initialBackoff: "500 micros" } }, "recovery.initialBackoff")
      yield* writer({ recovery: { ...recovery, maxBackoff: "0 millis" } }, "recovery.maxBackoff")
      yield* writer(
        { recovery: { ...recovery, initialBackoff: "2 seconds", maxBackoff: "1 second" } },
        "recovery.maxBackoff"
      )
      yield* writer({ recovery: { ...recovery, maxAttempts: 0 } }, "recovery.maxAttempts")
      yield* writer({ destinationIdleTimeout: 0 }, "destinationIdleTimeout")
      yield* writer({ destinationIdleTimeout: "300 years" }, "destinationIdleTimeout")
      yield* writer({ perDestinationMetrics: "yes" }, "perDestinationMetrics")
      yield* writer(
        { retry: { initialBackoff: "1 millis", maxBackoff: "1 second", maxAttempts: 0 } },
        "retry.maxAttempts"
      )
      const ok = yield* options.writerSettings({
        batchElementCount: 19_999,
        batchByteSize: 100 * 1024 * 1024 - 1,
        maxConsecutiveRejections: -1
      })
      assert.strictEqual(ok.maxConsecutiveRejections, -1)
    }))

  it.effect("flushInterval is at least 1 ms", () =>
    rejects(
      { ...base, writeMethod: WriteMethod.atLeastOnce({ flushInterval: "10 micros" }) },
      "writeMethod.flushInterval"
    ))
})
