/**
 * The writer lifecycle as the Bigtable sink runs it on the writer core: the failure handler flushed
 * once per barrier and once at close (never twice), none after a failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope, Stream } from "effect"
import {
  type BigtableFailure,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination
} from "../../src/Bigtable/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const serializer = (k: string) => {
  if (k.startsWith("bad")) throw new Error("unserializable")
  return RowMutationEntry.make(k, Mutation.setCell({ family: "cf", qualifier: "q", value: k }))
}

const counting = () => {
  const log: Array<string> = []
  const handler = FailureHandler.make({
    handle: (_: BigtableFailure.FailedMutation) => Effect.sync(() => void log.push("handle")),
    flush: Effect.sync(() => void log.push("flush")),
    close: Effect.sync(() => void log.push("close"))
  })
  return { log, handler }
}

describe("BigtableSink lifecycle", () => {
  it.effect("a sink run flushes the handler once (its final flush), not again when its scope closes", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      const { handler, log } = counting()
      const summary = yield* Stream.fromIterable(["a", "bad", "b"]).pipe(
        Stream.run(BigtableSink.make({ table, serializer, failureHandler: handler })),
        Effect.provide(fake.layer)
      )
      assert.deepStrictEqual([summary.recordsWritten, summary.recordsFailed], [2, 1])
      assert.deepStrictEqual(log, ["handle", "flush", "close"])
    }))

  it.effect("closing a writer flushes only what came after its last flush; after a failure, nothing", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      const flushedLast = counting()
      const s1 = yield* Scope.make()
      const w1 = yield* BigtableSink.writer({ table, serializer, failureHandler: flushedLast.handler }).pipe(
        Scope.provide(s1),
        Effect.provide(fake.layer)
      )
      yield* w1.write(["a", "bad"])
      yield* w1.flush
      yield* Scope.close(s1, Exit.void)
      assert.deepStrictEqual(flushedLast.log, ["handle", "flush", "close"])

      const notFlushed = counting()
      const s2 = yield* Scope.make()
      const w2 = yield* BigtableSink.writer({ table, serializer, failureHandler: notFlushed.handler }).pipe(
        Scope.provide(s2),
        Effect.provide(fake.layer)
      )
      yield* w2.write(["c", "bad"])
      yield* Scope.close(s2, Exit.void)
      assert.deepStrictEqual(notFlushed.log, ["handle", "flush", "close"])
      assert.isTrue(fake.applied.has(`${table.tableName}|c`), "closing after success wrote the rest")

      const log: Array<string> = []
      const refusing = FailureHandler.make({
        handle: (_: BigtableFailure.FailedMutation) => Effect.fail("refused" as const),
        flush: Effect.sync(() => void log.push("flush")),
        close: Effect.sync(() => void log.push("close"))
      })
      const s3 = yield* Scope.make()
      const w3 = yield* BigtableSink.writer({ table, serializer, failureHandler: refusing }).pipe(
        Scope.provide(s3),
        Effect.provide(fake.layer)
      )
      yield* w3.write(["d", "bad"])
      assert.strictEqual(yield* Effect.flip(w3.flush), "refused")
      yield* Scope.close(s3, Exit.void)
      assert.deepStrictEqual(log, ["close"], "a failed writer is released without flushing")
    }))
})
