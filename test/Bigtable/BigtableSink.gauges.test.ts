/**
 * The Bigtable in-flight gauges move by deltas on the writer core: two writers add up, and each
 * takes its share back when it closes (alone in its file: the gauges are process-wide).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Metric, Scope } from "effect"
import { TestClock } from "effect/testing"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination } from "../../src/Bigtable/index.ts"
import * as metrics from "../../src/internal/bigtable/metrics.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const serializer = (k: string) => RowMutationEntry.make(k, Mutation.setCell({ family: "cf", qualifier: "q", value: k }))

const inFlight = Effect.map(Metric.value(metrics.inFlightEntries), (state) => state.value)

describe("BigtableSink gauges", () => {
  it.effect("in-flight gauges add up over two writers and go back to 0 when they close", () =>
    Effect.gen(function*() {
      const fake = makeFake({ hold: true })
      const before = yield* inFlight
      const s1 = yield* Scope.make()
      const s2 = yield* Scope.make()
      const w1 = yield* BigtableSink.writer({ table, serializer }).pipe(Scope.provide(s1), Effect.provide(fake.layer))
      const w2 = yield* BigtableSink.writer({ table, serializer }).pipe(Scope.provide(s2), Effect.provide(fake.layer))
      yield* w1.write(["a", "b", "c"])
      yield* w2.write(["d", "e"])
      yield* TestClock.adjust("50 millis")
      assert.strictEqual((yield* inFlight) - before, 5)
      yield* Scope.close(s1, Exit.interrupt(0))
      assert.strictEqual((yield* inFlight) - before, 2)
      fake.release()
      yield* w2.flush
      yield* Scope.close(s2, Exit.void)
      assert.strictEqual((yield* inFlight) - before, 0)
    }))
})
