/**
 * The record counters with `perDestinationMetrics`: a routed row is counted once in
 * `bigquery.numRecordsSendErrors`, with its `destination` attribute. Its own file: the counters are
 * global, and no other test of this module instance updates them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Metric, Stream } from "effect"
import { BigQueryMetrics, BigQuerySink, type RowSerializer, WriteMethod } from "../../src/BigQuery/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import * as F from "./sinkFixtures.ts"

const count = (metric: Metric.Counter<number>) => Effect.map(Metric.value(metric), (state) => Number(state.count))

describe("BigQuerySink metrics", () => {
  it.live("with perDestinationMetrics a routed row is counted once, under its destination", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const base = yield* F.serializer
        const serializer: RowSerializer.RowSerializer<F.Row> = {
          ...base,
          encodeInto: undefined,
          serialize: (row, d) => {
            if (row.id % 2n === 1n) throw new Error(`broke on ${row.id}`)
            return base.serialize(row, d)
          }
        }
        // deltas: the metrics are the process's, and other files run in this worker before this one
        const errors = BigQueryMetrics.recordsSendErrors
        const destination = `${fake.projectId}.d.t`
        const attributed = Metric.withAttributes(errors, { destination })
        const before = yield* count(errors)
        const beforeAttributed = yield* count(attributed)
        const summary = yield* Stream.fromIterable(F.rows(10)).pipe(
          Stream.run(BigQuerySink.make({
            table: yield* F.destination(fake),
            serializer,
            failureHandler: FailureHandler.logAndDrop,
            writeMethod: WriteMethod.atLeastOnce({ ...F.fastRetries, perDestinationMetrics: true })
          }))
        )
        assert.strictEqual(summary.recordsFailed, 5)
        assert.strictEqual((yield* count(attributed)) - beforeAttributed, 5)
        assert.strictEqual(yield* count(errors), before, "not counted a second time without the attribute")
      })))
})
