/**
 * The BigQuery writer's gauges (`inFlightBatches`, `openDestinations`) are process-wide: each writer
 * moves them by deltas and takes its share back when it closes, so two writers add up and a closed
 * writer, whichever way it ended, leaves them where it found them. Each test has a registry of its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Metric } from "effect"
import { BigQuerySink, TableDestination } from "../../../src/BigQuery/index.ts"
import * as metrics from "../../../src/internal/bigquery/metrics.ts"
import * as F from "../../BigQuery/sinkFixtures.ts"

const gauge = (metric: Metric.Gauge<number>) => Effect.map(Metric.value(metric), (state) => state.value)

/** Waits (in real time) until `done` holds, failing after about five seconds. */
const eventually = (what: string, done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 250 && !done(); i++) yield* Effect.sleep("20 millis")
    assert.isTrue(done(), what)
  })

const withRegistry = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, Metric.MetricRegistry, new Map())

describe("BigQuery writer gauges", () => {
  it.live("two writers add up, and each takes its share back when it closes", () =>
    withRegistry(F.withFake(
      // the first two appends wait, so both writers have one in flight at once (2 s: the second writer's open
      // and append may lag the first's by hundreds of milliseconds on a loaded machine)
      {
        answer: (
          c
        ) => (c.request <= 2 ? { _tag: "delay", millis: 2000, next: { _tag: "default" } } : { _tag: "default" })
      },
      (fake) =>
        Effect.gen(function*() {
          const p = fake.projectId
          fake.createTable(`${p}.d.a`, F.columns)
          fake.createTable(`${p}.d.b`, F.columns)
          const serializer = yield* F.serializer
          const a = yield* TableDestination.make({ projectId: p, datasetId: "d", tableId: "a" })
          const b = yield* TableDestination.make({ projectId: p, datasetId: "d", tableId: "b" })
          yield* Effect.scoped(Effect.gen(function*() {
            const wa = yield* BigQuerySink.writer({ table: a, serializer })
            const wb = yield* BigQuerySink.writer({ table: b, serializer })
            yield* wa.write(F.rows(3))
            yield* wb.write(F.rows(3))
            const flushes = yield* Effect.forkChild(Effect.all([wa.flush, wb.flush], { concurrency: 2 }))
            yield* eventually("both appends sent", () => fake.stats.requests >= 2)
            assert.strictEqual(yield* gauge(metrics.openDestinations), 2, "both writers' destinations count")
            assert.strictEqual(yield* gauge(metrics.inFlightBatches), 2, "both writers' appends count")
            yield* Fiber.join(flushes)
            assert.strictEqual(yield* gauge(metrics.inFlightBatches), 0)
          }))
          assert.strictEqual(yield* gauge(metrics.openDestinations), 0, "closed writers leave nothing open")
          assert.strictEqual(yield* gauge(metrics.inFlightBatches), 0)
        })
    )))

  it.live("a writer released with an append in flight takes its share back", () =>
    withRegistry(F.withFake({ answer: () => ({ _tag: "hang" }) }, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const table = yield* F.destination(fake)
        const serializer = yield* F.serializer
        // the scope ends with a failure: the writer is released without flushing
        const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
          const w = yield* BigQuerySink.writer({ table, serializer })
          yield* w.write(F.rows(3))
          yield* Effect.forkChild(w.flush)
          yield* eventually("the append sent", () => fake.stats.requests >= 1)
          assert.strictEqual(yield* gauge(metrics.inFlightBatches), 1)
          assert.strictEqual(yield* gauge(metrics.openDestinations), 1)
          return yield* Effect.fail("released")
        })))
        // released by the test's own failure, not by a failed assertion
        assert.deepStrictEqual(exit, Exit.fail("released"))
        assert.strictEqual(yield* gauge(metrics.inFlightBatches), 0)
        assert.strictEqual(yield* gauge(metrics.openDestinations), 0)
      }))))
})
