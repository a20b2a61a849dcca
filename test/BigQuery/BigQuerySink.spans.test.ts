/**
 * The BigQuery sink's spans (README "Tracing"): one `BigQuerySink.write` per chunk, one
 * `BigQuerySink.append` per append with its destination and row count, `BigQuerySink.flush` at the
 * end of input, all under the caller's span. Exactly-once: `Checkpoint.resume`, and per checkpoint
 * `BigQuerySink.checkpoint` with its writer id, a `BigQuerySink.flushRows` per destination beneath it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import { named, recordingTracer } from "../support/recordingTracer.ts"
import { resume, withEo } from "./exactlyOnceFixtures.ts"
import * as F from "./sinkFixtures.ts"

describe("BigQuerySink spans", () => {
  it.live("a span per chunk, per append (destination, rows) and for the flush, under the caller's span", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const { ended, tracer } = recordingTracer()
        const summary = yield* Stream.fromIterable(F.rows(250)).pipe(
          Stream.rechunk(50),
          Stream.run(BigQuerySink.make({
            table: yield* F.destination(fake),
            serializer: yield* F.serializer,
            writeMethod: WriteMethod.atLeastOnce({ ...F.fastRetries })
          })),
          Effect.withSpan("ingest"),
          Effect.withTracer(tracer)
        )
        assert.strictEqual(summary.recordsWritten, 250)
        assert.strictEqual(named(ended, "BigQuerySink.write").length, 5, "one per chunk of 50")
        const appends = named(ended, "BigQuerySink.append")
        assert.isAtLeast(appends.length, 1)
        assert.strictEqual(appends.reduce((n, s) => n + Number(s.attributes.get("bigquery.rows")), 0), 250)
        assert.isTrue(appends.every((s) => s.attributes.get("bigquery.destination") === `${fake.projectId}.d.t`))
        assert.strictEqual(named(ended, "BigQuerySink.flush").length, 1)
        const own = ended.filter((s) => s.name !== "ingest")
        assert.deepStrictEqual([...new Set(own.map((s) => s.parent))], ["ingest"])
        assert.isTrue(own.every((s) => !s.failed))
      })))

  it.live("exactly-once: the resume, a span per checkpoint (writer id) and its FlushRows beneath it", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const { ended, tracer } = recordingTracer()
        const summary = yield* Effect.gen(function*() {
          const r = yield* resume()
          return yield* Stream.fromIterable(F.rows(1000)).pipe(
            Stream.rechunk(100),
            Stream.run(BigQuerySink.make({
              table: yield* F.destination(fake),
              serializer: yield* F.serializer,
              writeMethod: WriteMethod.exactlyOnce(F.fastRetries),
              checkpoint: { resume: r, every: 300, position: (row) => Number(row.id) + 1 }
            }))
          )
        }).pipe(Effect.withSpan("ingest"), Effect.withTracer(tracer))
        assert.strictEqual(summary.recordsWritten, 1000)
        assert.strictEqual(named(ended, "Checkpoint.resume").length, 1)
        const checkpoints = named(ended, "BigQuerySink.checkpoint")
        assert.strictEqual(checkpoints.length, 4, "every 300 rows and at the end of input")
        const writerIds = new Set(checkpoints.map((s) => s.attributes.get("writer.id")))
        assert.strictEqual(writerIds.size, 1)
        assert.isString([...writerIds][0])
        const flushes = named(ended, "BigQuerySink.flushRows")
        assert.strictEqual(flushes.length, 4)
        assert.isTrue(flushes.every((s) => s.parent === "BigQuerySink.checkpoint"))
        assert.isTrue(ended.every((s) => !s.failed))
      })))
})
