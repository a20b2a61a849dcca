import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Stream } from "effect"
import {
  type BigtableFailure,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../src/Bigtable/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import { virtually } from "../support/virtualTime.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const tableName = table.tableName

const entry = (key: string, family = "cf") =>
  RowMutationEntry.make(key, Mutation.setCell({ family, qualifier: "q", value: key, timestampMicros: 1000 }))

const collecting = () => {
  const failures: Array<BigtableFailure.FailedMutation> = []
  let flushes = 0
  const handler = FailureHandler.make({
    handle: (f: BigtableFailure.FailedMutation) => Effect.sync(() => void failures.push(f)),
    flush: Effect.sync(() => void flushes++)
  })
  return { failures, handler, flushes: () => flushes }
}

const wide = (k: string) =>
  RowMutationEntry.make(
    k,
    Array.from({ length: 30_000 }, () => Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }))
  )

const keys = (n: number, prefix = "r") => Array.from({ length: n }, (_, i) => `${prefix}${i}`)
const fast = { retry: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 5 } } as const

describe("BigtableSink", () => {
  it.effect("writes every record and reports it in the summary", () =>
    Effect.gen(function*() {
      const fake = makeFake({ latencyMs: 1 })
      const summary = yield* Stream.fromIterable(keys(250)).pipe(
        Stream.run(BigtableSink.make({ table, serializer: (k: string) => entry(k) })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 250)
      assert.strictEqual(summary.destinations["p.i.t"]?.recordsWritten, 250)
      assert.strictEqual(fake.applied.size, 250)
      assert.isTrue(fake.requests.every((r) => r.rowKeys.length <= 100))
      assert.isTrue(fake.requests.every((r) => r.tableName === tableName))
    }))

  it.effect("sends MutateRows with the routing header gax sends: table and app profile", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      yield* Stream.fromIterable(keys(3)).pipe(
        Stream.run(BigtableSink.make({ table, appProfileId: "batch", serializer: (k: string) => entry(k) })),
        Effect.provide(fake.layer)
      )
      assert.deepStrictEqual(fake.requests.map((r) => [r.method, r.appProfileId, r.requestParams]), [[
        "/google.bigtable.v2.Bigtable/MutateRows",
        "batch",
        ["table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id=batch"]
      ]])
      assert.deepStrictEqual(fake.requests[0]?.rowKeys, ["r0", "r1", "r2"])
    }))

  it.effect("skips records the serializer maps to null, without a request or a failure", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      const summary = yield* Stream.fromIterable(keys(10)).pipe(
        Stream.run(BigtableSink.make({ table, serializer: () => null })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsSkipped, 10)
      assert.strictEqual(summary.recordsWritten, 0)
      assert.strictEqual(fake.requests.length, 0)
    }))

  it.effect("routes serializer failures and unroutable records and writes the rest", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      const { failures, handler } = collecting()
      const summary = yield* Stream.make("a", "throw", "effect-fail", "nowhere", "b").pipe(
        Stream.run(BigtableSink.make({
          destinationResolver: (
            k: string
          ) => (k === "nowhere" ? TableDestination.unroutable({ reason: "no table" }) : table),
          serializer: (k: string) => {
            if (k === "throw") throw new Error("boom")
            if (k === "effect-fail") return Effect.fail("nope")
            return Effect.succeed(entry(k))
          },
          failureHandler: handler
        })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 2)
      assert.strictEqual(summary.recordsFailed, 3)
      assert.deepStrictEqual(failures.map((f) => f.destination).toSorted(), ["p.i.t", "p.i.t", "unresolved"])
      assert.isTrue(failures.every((f) => f.rowKey === undefined))
    }))

  it.effect("keeps in-flight entries under maxInFlightEntries and still applies everything", () =>
    Effect.gen(function*() {
      const fake = makeFake({ latencyMs: 3 })
      const summary = yield* Stream.fromIterable(keys(300)).pipe(
        Stream.rechunk(7),
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k),
          writeMethod: WriteMethod.atLeastOnce({ maxInFlightEntries: 10, batchElementCount: 4 })
        })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 300)
      assert.isAtMost(fake.peakInFlightEntries(), 10)
      assert.isAbove(fake.peakInFlight(), 1, "requests run concurrently")
    }))

  it.effect("admits an entry larger than maxInFlightBytes on an otherwise empty writer", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      const summary = yield* Stream.make("x".repeat(500), "y".repeat(500)).pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k),
          writeMethod: WriteMethod.atLeastOnce({ maxInFlightBytes: 64 })
        })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 2)
    }))

  it.effect("never sends more than 100,000 mutations in one request", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      const summary = yield* Stream.fromIterable(keys(7)).pipe(
        Stream.run(BigtableSink.make({ table, serializer: wide })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 7)
      assert.isTrue(fake.requests.every((r) => r.mutations <= 100_000))
    }))

  it.effect("isolation pass: a rejected batch is re-sent entry by entry; batch-mates land, the bad entry is routed", () =>
    Effect.gen(function*() {
      // Bigtable rejects the whole request when one entry is malformed.
      const fake = makeFake({
        callError: (
          r
        ) => (r.rowKeys.includes("bad") ? { code: 3, message: "Timestamp not multiple of 1000" } : undefined)
      })
      const { failures, handler } = collecting()
      const summary = yield* Stream.fromIterable(["a", "b", "bad", "c"]).pipe(
        Stream.run(BigtableSink.make({ table, serializer: (k: string) => entry(k), failureHandler: handler })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 3)
      assert.strictEqual(summary.recordsFailed, 1)
      assert.strictEqual(failures.length, 1)
      assert.strictEqual(failures[0]?.message, "Timestamp not multiple of 1000")
      assert.strictEqual(new TextDecoder().decode(failures[0]?.rowKey), "bad")
      assert.isFalse(String(failures[0]).includes("bad"), "the string form never shows the row key")
      assert.isTrue(fake.applied.has(`${tableName}|a`) && fake.applied.has(`${tableName}|c`))
    }))

  it.effect("maxConsecutiveRejections fails the write after routing the tripping rejection", () =>
    Effect.gen(function*() {
      const fake = makeFake({ decide: ({ rowKey }) => (rowKey.startsWith("bad") ? { code: 3 } : { code: 0 }) })
      const { failures, handler } = collecting()
      const error = yield* Stream.fromIterable(keys(5, "bad")).pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k),
          failureHandler: handler,
          writeMethod: WriteMethod.atLeastOnce({ maxConsecutiveRejections: 3, batchElementCount: 1 })
        })),
        Effect.provide(fake.layer),
        Effect.flip
      )
      assert.strictEqual(error._tag, "BigtableError")
      if (error._tag === "BigtableError") assert.strictEqual(error.reason._tag, "BigtableTooManyRejections")
      assert.strictEqual(failures.length, 3)
    }))

  it.effect("an applied mutation resets the consecutive-rejection count", () =>
    Effect.gen(function*() {
      const fake = makeFake({ decide: ({ rowKey }) => (rowKey.startsWith("bad") ? { code: 3 } : { code: 0 }) })
      const { failures, handler } = collecting()
      const input = ["bad1", "ok1", "bad2", "ok2", "bad3", "ok3", "bad4"]
      const summary = yield* Stream.fromIterable(input).pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k),
          failureHandler: handler,
          writeMethod: WriteMethod.atLeastOnce({
            maxConsecutiveRejections: 2,
            batchElementCount: 1,
            maxInFlightEntries: 1
          })
        })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsFailed, 4)
      assert.strictEqual(failures.length, 4)
    }))

  it.effect("the default handler fails the write with RecordFailed", () =>
    Effect.gen(function*() {
      const fake = makeFake({
        decide: ({ rowKey }) => (rowKey === "bad" ? { code: 3, message: "bad row" } : { code: 0 })
      })
      const error = yield* Stream.make("bad").pipe(
        Stream.run(BigtableSink.make({ table, serializer: (k: string) => entry(k) })),
        Effect.provide(fake.layer),
        Effect.flip
      )
      assert.strictEqual(error._tag, "RecordFailed")
    }))

  it.effect("retries transient statuses per entry and counts the retries", () =>
    Effect.gen(function*() {
      const seen = new Set<string>()
      const fake = makeFake({
        decide: ({ rowKey }) => {
          if (seen.has(rowKey)) return { code: 0 }
          seen.add(rowKey)
          return { code: 14, message: "unavailable" }
        }
      })
      const exit = yield* virtually(
        Stream.fromIterable(keys(20)).pipe(
          Stream.run(
            BigtableSink.make({
              table,
              serializer: (k: string) => entry(k),
              writeMethod: WriteMethod.atLeastOnce(fast)
            })
          ),
          Effect.provide(fake.layer)
        )
      )
      assert.isTrue(Exit.isSuccess(exit), String(exit))
      if (Exit.isFailure(exit)) return
      assert.strictEqual(exit.value.recordsWritten, 20)
      assert.strictEqual(exit.value.retries, 20)
    }))

  it.effect("a transient status beyond the retry budget fails with RpcFailed carrying the attempts", () =>
    Effect.gen(function*() {
      const fake = makeFake({ decide: () => ({ code: 4, message: "deadline" }) })
      const flipped = yield* virtually(
        Stream.make("a").pipe(
          Stream.run(BigtableSink.make({
            table,
            serializer: (k: string) => entry(k),
            writeMethod: WriteMethod.atLeastOnce({
              retry: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 3 }
            })
          })),
          Effect.provide(fake.layer),
          Effect.flip
        )
      )
      assert.isTrue(Exit.isSuccess(flipped), `the write did not fail: ${String(flipped)}`)
      if (Exit.isFailure(flipped)) return
      const error = flipped.value
      assert.strictEqual(error._tag, "BigtableError")
      if (error._tag === "BigtableError" && error.reason._tag === "BigtableRpcFailed") {
        assert.strictEqual(error.reason.attempts, 3)
        assert.strictEqual(error.reason.status, "DEADLINE_EXCEEDED")
      } else assert.fail(`unexpected ${error}`)
    }))

  it.effect("a non-transient status fails the write", () =>
    Effect.gen(function*() {
      const fake = makeFake({ callError: () => ({ code: 7, message: "denied" }) })
      const error = yield* Stream.make("a").pipe(
        Stream.run(BigtableSink.make({ table, serializer: (k: string) => entry(k) })),
        Effect.provide(fake.layer),
        Effect.flip
      )
      assert.include(error.message, "PERMISSION_DENIED")
    }))

  it.effect("CREATE_NEVER fails fast on a missing table, naming the table and the disposition", () =>
    Effect.gen(function*() {
      const fake = makeFake({ tables: new Map() })
      const error = yield* Stream.make("a").pipe(
        Stream.run(BigtableSink.make({ table, serializer: (k: string) => entry(k) })),
        Effect.provide(fake.layer),
        Effect.flip
      )
      assert.include(error.message, "p.i.t")
      assert.include(error.message, "CREATE_NEVER")
      assert.deepStrictEqual(fake.admin, [])
    }))

  it.effect("CREATE_IF_NEEDED creates a missing table with the declared families and re-applies the parked entries", () =>
    Effect.gen(function*() {
      const tables = new Map<string, Set<string>>()
      const fake = makeFake({ tables })
      const summary = yield* Stream.fromIterable(keys(50)).pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { cf: {}, other: {} } },
          writeMethod: WriteMethod.atLeastOnce({
            recovery: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 10 }
          })
        })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 50)
      assert.deepStrictEqual([...(tables.get(tableName) ?? [])].toSorted(), ["cf", "other"])
      assert.strictEqual(fake.admin.filter((a) => a.startsWith("CreateTable")).length, 1)
    }))

  it.effect("CREATE_IF_NEEDED adds a missing declared family to an existing table", () =>
    Effect.gen(function*() {
      const tables = new Map([[tableName, new Set(["cf"])]])
      const fake = makeFake({ tables })
      const summary = yield* Stream.make("a", "b").pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k, "extra"),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { cf: {}, extra: {} } },
          writeMethod: WriteMethod.atLeastOnce({
            recovery: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 10 }
          })
        })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 2)
      assert.include(fake.admin, `ModifyColumnFamilies ${tableName} extra`)
    }))

  it.effect("CREATE_IF_NEEDED fails naming an undeclared missing family", () =>
    Effect.gen(function*() {
      const tables = new Map([[tableName, new Set(["cf"])]])
      const fake = makeFake({ tables })
      const error = yield* Stream.make("a").pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k, "ghost"),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { cf: {} } },
          writeMethod: WriteMethod.atLeastOnce({
            recovery: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 10 }
          })
        })),
        Effect.provide(fake.layer),
        Effect.flip
      )
      assert.include(error.message, "ghost")
    }))

  it.effect("flush is a barrier: every earlier record is applied, then the handler is flushed", () => {
    const fake = makeFake({ latencyMs: 5 })
    return Effect.gen(function*() {
      const { handler, flushes } = collecting()
      const writer = yield* BigtableSink.writer({
        table,
        serializer: (k: string) => entry(k),
        failureHandler: handler
      })
      yield* writer.write(keys(42))
      yield* writer.flush
      assert.strictEqual(fake.applied.size, 42)
      assert.strictEqual(flushes(), 1)
      assert.strictEqual((yield* writer.summary).recordsWritten, 42)
    }).pipe(Effect.provide(fake.layer))
  })

  it.live("summary answers at once with the counts so far while writes wait on backpressure", () => {
    const fake = makeFake()
    return Effect.gen(function*() {
      // The owner is kept busy too: the handler drops one failed record (counted once dropped, as
      // WriteSummary documents), then holds the routing of the next.
      const gate = yield* Deferred.make<void>()
      const routing = yield* Deferred.make<void>()
      let handled = 0
      const handler = FailureHandler.make({
        handle: (_: BigtableFailure.FailedMutation) =>
          ++handled === 1 ? Effect.void : Effect.andThen(Deferred.succeed(routing, undefined), Deferred.await(gate))
      })
      const writer = yield* BigtableSink.writer({
        table,
        serializer: (k: string) => {
          if (k.startsWith("bad")) throw new Error("unserializable")
          return k.startsWith("skip") ? null : entry(k)
        },
        failureHandler: handler,
        writeMethod: WriteMethod.atLeastOnce({ maxInFlightEntries: 20, batchElementCount: 10 })
      })
      yield* writer.write([...keys(10), ...keys(3, "skip")])
      yield* writer.flush
      fake.hold()
      yield* writer.write([...keys(20, "held"), "bad", "bad2"]) // exactly the in-flight cap, and two routed records
      yield* Deferred.await(routing)
      const blocked = yield* Effect.forkChild(writer.write(keys(10, "more")))
      yield* Effect.sleep("20 millis")
      assert.isUndefined(blocked.pollUnsafe(), "the write waits on backpressure")
      assert.strictEqual(fake.held(), 2)
      const summary = yield* writer.summary.pipe(Effect.timeout("100 millis"))
      assert.deepStrictEqual(
        [summary.recordsWritten, summary.recordsSkipped, summary.recordsFailed],
        [10, 3, 1]
      )
      yield* Deferred.succeed(gate, undefined)
      fake.release()
      yield* Fiber.join(blocked)
      yield* writer.flush
      assert.strictEqual((yield* writer.summary).recordsWritten, 40)
    }).pipe(Effect.scoped, Effect.provide(fake.layer))
  })
})
