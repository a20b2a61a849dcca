/**
 * Stall reporting: a warning once MutateRows calls have gone a minute without an answer, naming the
 * tables, at most once a minute, and none once answers come back. Virtual time (TestClock) drives
 * the writer's ticker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } from "../../src/Bigtable/index.ts"
import { warnings } from "../support/waiting.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key }))

describe("BigtableSink stall reporting", () => {
  it.effect("warns after a minute without answers, once a minute, and stops once answered", () => {
    const fake = makeFake({ hold: true })
    const logs = warnings()
    return Effect.gen(function*() {
      const writer = yield* BigtableSink.writer({
        table,
        serializer: (k: string) => entry(k),
        writeMethod: WriteMethod.atLeastOnce({ batchElementCount: 5 })
      })
      yield* writer.write(["a", "b", "c", "d", "e"])
      const flushing = yield* Effect.forkChild(writer.flush)
      yield* TestClock.adjust("59 seconds")
      assert.deepStrictEqual(logs.seen, [], "no warning within the first minute")
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(logs.seen.length, 1)
      assert.match(
        logs.seen[0] ?? "",
        /answered no MutateRows call for 6\d s: 1 calls \(5 entries\) in flight, to p\.i\.t/
      )
      yield* TestClock.adjust("30 seconds")
      assert.strictEqual(logs.seen.length, 1, "rate-limited to one a minute")
      yield* TestClock.adjust("31 seconds")
      assert.strictEqual(logs.seen.length, 2)
      fake.release()
      yield* Fiber.join(flushing)
      yield* TestClock.adjust("5 minutes")
      assert.strictEqual(logs.seen.length, 2, "nothing in flight: no more warnings")
      assert.strictEqual((yield* writer.summary).recordsWritten, 5)
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(fake.layer, logs.layer)))
  })

  it.effect("answers within the minute keep it quiet however long the stream runs", () => {
    const fake = makeFake()
    const logs = warnings()
    return Effect.gen(function*() {
      const writer = yield* BigtableSink.writer({ table, serializer: (k: string) => entry(k) })
      for (let i = 0; i < 10; i++) {
        yield* writer.write([`r${i}`])
        yield* writer.flush
        yield* TestClock.adjust("50 seconds")
      }
      assert.deepStrictEqual(logs.seen, [])
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(fake.layer, logs.layer)))
  })
})
