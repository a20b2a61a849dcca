import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Metric, Schedule, Stream } from "effect"
import {
  BigQueryMetrics,
  BigQuerySink,
  RowSerializer,
  type TableDestination,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import * as internal from "../../src/internal/bigquery/metrics.ts"
import { FailureHandler } from "../../src/Sink.ts"
import * as F from "./sinkFixtures.ts"

/**
 * A metric's value as one number, over all its attribute sets: a counter's count, a gauge's value, a
 * histogram's number of samples.
 */
export const reading = (metric: Metric.Metric<never, unknown>): Effect.Effect<number> =>
  Effect.map(Metric.snapshot, (snapshots) =>
    snapshots.filter((s) => s.id === metric.id).reduce((sum, s) => {
      const state = s.state as { readonly count?: number | bigint; readonly value?: number | bigint }
      return sum + Number(state.count ?? state.value ?? 0)
    }, 0))

describe("BigQueryMetrics", () => {
  it("exports the metrics the sink updates, under their ADR 0009 names", () => {
    const ids = Object.fromEntries(Object.entries(BigQueryMetrics).map(([key, metric]) => [key, metric.id]))
    assert.deepStrictEqual(ids, {
      recordsSend: "bigquery.numRecordsSend",
      bytesSend: "bigquery.numBytesSend",
      appendLatency: "bigquery.appendLatency",
      recordsSendErrors: "bigquery.numRecordsSendErrors",
      recordsSkipped: "bigquery.recordsSkipped",
      inFlightBatches: "bigquery.inFlightBatches",
      openDestinations: "bigquery.openDestinations",
      appendRetries: "bigquery.appendRetries",
      tablesCreated: "bigquery.tablesCreated",
      schemaReconciliations: "bigquery.schemaReconciliations",
      errors: "bigquery.errors",
      stagedFilesDiscarded: "bigquery.fileLoads.stagedFilesDiscarded"
    })
    assert.strictEqual(BigQueryMetrics.recordsSend, internal.recordsSend)
    assert.strictEqual(BigQueryMetrics.inFlightBatches, internal.inFlightBatches)
  })

  it.live("every exported metric moves in a run that meets what it counts", () =>
    F.withFake({
      // the first append fails in-band once (a retry, an error); every answer takes a moment (in flight)
      answer: (c) =>
        c.request === 0
          ? { _tag: "error", code: 14, message: "try again" }
          : { _tag: "delay", millis: 20, next: { _tag: "default" } }
    }, (fake) =>
      Effect.gen(function*() {
        // `narrow` lacks the name column (reconciled: schemaUpdate); `t` is missing (created)
        fake.createTable(`${fake.projectId}.d.narrow`, F.columns.slice(0, 1))
        const base = yield* F.serializer
        const throwing: RowSerializer.RowSerializer<F.Row> = {
          ...base,
          encodeInto: undefined,
          serialize: (row, d) => {
            if (row.id === 3n) throw new Error("broke on 3")
            return base.serialize(row, d)
          }
        }
        // a fenced file-loads writer's discarded files need GCS and load jobs: the emulator test
        // "a fenced writer deletes the files it staged" (test/integration/bigquery/fileLoads.test.ts) moves it
        const metrics = (Object.entries(BigQueryMetrics) as ReadonlyArray<
          readonly [string, Metric.Metric<never, unknown>]
        >).filter(([name]) => name !== "stagedFilesDiscarded")
        const before = new Map<string, number>()
        for (const [name, metric] of metrics) before.set(name, yield* reading(metric))
        // gauges go back to 0 at close: their highest reading while the write runs is what moved
        const peaks = new Map<string, number>()
        const sample = Effect.forEach(
          metrics,
          ([name, metric]) =>
            Effect.map(reading(metric), (v) => void peaks.set(name, Math.max(peaks.get(name) ?? 0, v)))
        )
        const sampler = yield* Effect.forkChild(Effect.repeat(sample, Schedule.spaced("1 millis")))
        const narrow = yield* F.destination(fake, "narrow")
        const t = yield* F.destination(fake, "t")
        yield* Stream.fromIterable(F.rows(12)).pipe(
          Stream.run(BigQuerySink.make({
            destinationResolver: (row: F.Row): TableDestination.TableDestination => row.id % 2n === 0n ? t : narrow,
            serializer: RowSerializer.filter(throwing, (row) => row.id !== 0n),
            schemaUpdate: { allowNewFields: true },
            failureHandler: FailureHandler.logAndDrop,
            writeMethod: WriteMethod.atLeastOnce(F.fastRetries)
          }))
        )
        yield* Fiber.interrupt(sampler)
        for (const [name, metric] of metrics) {
          const after = Math.max(yield* reading(metric), peaks.get(name) ?? 0)
          assert.isAbove(after, before.get(name) ?? 0, `${metric.id} did not move`)
        }
      })))
})
