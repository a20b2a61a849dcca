/**
 * The staged gauges of the exactly-once Bigtable writer (alone in its file: the gauges are
 * process-wide, and the other exactly-once tests stage entries concurrently).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Metric, Schema } from "effect"
import { BigtableMetrics, BigtableSink, WriteMethod } from "../../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../../src/Sink.ts"
import { makeFakeCheckAndMutate } from "../support/fakeCheckAndMutate.ts"
import { type Click, clicks, serializer, table } from "./clickFixtures.ts"

const gauge = (metric: Metric.Gauge<number>) => Effect.map(Metric.value(metric), (state) => state.value)

describe("BigtableSink.exactlyOnce staged gauges", () => {
  it.effect("the staged gauges rise with each staged entry and fall at the checkpoint; a null is skipped", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate()
      const entries0 = yield* gauge(BigtableMetrics.stagedEntries)
      const bytes0 = yield* gauge(BigtableMetrics.stagedBytes)
      const summary = yield* Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "g-1", positionSchema: Schema.Number })
        const writer = yield* BigtableSink.writer({
          table: yield* table,
          writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
          checkpoint: { resume, position: (c: Click) => c.offset + 1 },
          // every other record is skipped by the serializer
          serializer: (c: Click) => (c.offset % 2 === 0 ? serializer(c) : null)
        })
        yield* writer.write(clicks(0, 10))
        yield* writer.flush
        assert.strictEqual((yield* gauge(BigtableMetrics.stagedEntries)) - entries0, 5)
        const staged = (yield* gauge(BigtableMetrics.stagedBytes)) - bytes0
        // request size + 256 per entry
        assert.isAbove(staged, 5 * 256)
        assert.isBelow(staged, 5 * 512)
        assert.strictEqual(fake.calls.length, 0)
        yield* writer.checkpoint(10)
        assert.strictEqual(yield* gauge(BigtableMetrics.stagedEntries), entries0)
        assert.strictEqual(yield* gauge(BigtableMetrics.stagedBytes), bytes0)
        return yield* writer.summary
      }).pipe(Effect.scoped, Effect.provide(Layer.orDie(fake.layer)))
      assert.strictEqual(fake.applied(), 5)
      assert.strictEqual(summary.recordsWritten, 5)
      assert.strictEqual(summary.recordsSkipped, 5)
    }).pipe(Effect.provide(CheckpointStore.memory)))
})
