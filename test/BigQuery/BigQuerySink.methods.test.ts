/**
 * `writeMethod` is the only switch of `BigQuerySink.make` and `writer` (issue 25): `checkpoint` is
 * required exactly by the exactly-once methods and refused by at-least-once, the writer form has no
 * `every`, all before any request.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import type { SinkConfigError } from "../../src/Sink.ts"
import { range, resume, visibleIds, withEo } from "./exactlyOnceFixtures.ts"
import { destination, fastRetries, type Row, rows, serializer } from "./sinkFixtures.ts"

const position = (row: Row) => Number(row.id) + 1

/** A value as untyped JavaScript would pass it. */
function untyped<T>(value: unknown): T
function untyped(value: unknown): unknown {
  return value
}

const configError = (error: unknown): SinkConfigError => {
  assert.strictEqual((error as { readonly _tag?: unknown })._tag, "SinkConfigError", String(error))
  return error as SinkConfigError
}

/** One row through `make` with untyped `options`, expecting a `SinkConfigError`. */
const run = (options: unknown) =>
  Stream.fromIterable(rows(1)).pipe(
    Stream.run(BigQuerySink.make(untyped<BigQuerySink.AtLeastOnceSinkOptions<Row>>(options))),
    Effect.flip,
    Effect.map(configError)
  )

describe("BigQuerySink: writeMethod chooses the method", () => {
  it.effect("make with WriteMethod.exactlyOnce and a checkpoint writes exactly once", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const summary = yield* Stream.fromIterable(rows(30)).pipe(
          Stream.rechunk(7),
          Stream.run(BigQuerySink.make({
            table: yield* destination(fake),
            serializer: yield* serializer,
            writeMethod: WriteMethod.exactlyOnce(fastRetries),
            checkpoint: { resume: yield* resume(), every: 10, position }
          }))
        )
        assert.strictEqual(summary.recordsWritten, 30)
        assert.deepStrictEqual(visibleIds(fake), range(0, 30))
      })))

  it.effect("writer with WriteMethod.exactlyOnce: rows are visible at checkpoint(position)", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const writer = yield* BigQuerySink.writer({
          table: yield* destination(fake),
          serializer: yield* serializer,
          writeMethod: WriteMethod.exactlyOnce(fastRetries),
          checkpoint: { resume: yield* resume() }
        })
        yield* writer.write(rows(5))
        assert.deepStrictEqual(visibleIds(fake), [])
        yield* writer.checkpoint(5)
        assert.deepStrictEqual(visibleIds(fake), range(0, 5))
      }).pipe(Effect.scoped)))

  it.effect("checkpoint is refused by at-least-once, required by exactly-once and file loads", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const table = yield* destination(fake)
        const s = yield* serializer
        const checkpoint = { resume: yield* resume(), every: 10, position }
        const refused = yield* run({ table, serializer: s, checkpoint })
        assert.strictEqual(refused.path, "checkpoint")
        assert.match(refused.message, /only for WriteMethod.exactlyOnce\(\.\.\.\) and WriteMethod.fileLoads/)
        for (
          const writeMethod of [WriteMethod.exactlyOnce(), WriteMethod.fileLoads({ stagingPath: "gs://staging/p" })]
        ) {
          const required = yield* run({ table, serializer: s, writeMethod })
          assert.strictEqual(required.path, "checkpoint")
          assert.match(required.message, /is required by WriteMethod\.(exactlyOnce|fileLoads)/)
        }
        const notAPosition = yield* run({
          table,
          serializer: s,
          writeMethod: WriteMethod.exactlyOnce(),
          checkpoint: { ...checkpoint, position: 3 }
        })
        assert.strictEqual(notAPosition.path, "checkpoint.position")
        assert.strictEqual(fake.stats.requests, 0)
      })))

  it.effect("the writer form refuses checkpoint.every (the caller checkpoints)", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const error = yield* BigQuerySink.writer(untyped<BigQuerySink.AtLeastOnceSinkOptions<Row>>({
          table: yield* destination(fake),
          serializer: yield* serializer,
          writeMethod: WriteMethod.exactlyOnce(),
          checkpoint: { resume: yield* resume(), every: 10, position }
        })).pipe(Effect.scoped, Effect.flip, Effect.map(configError))
        assert.strictEqual(error.path, "checkpoint.every")
        assert.match(error.message, /writer\.checkpoint\(position\)/)
      })))

  it.effect("the writer form takes checkpoint: { resume } and refuses checkpoint.position (given at checkpoint(position))", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        for (
          const writeMethod of [WriteMethod.exactlyOnce(), WriteMethod.fileLoads({ stagingPath: "gs://staging/p" })]
        ) {
          const error = yield* BigQuerySink.writer(untyped<BigQuerySink.AtLeastOnceSinkOptions<Row>>({
            table: yield* destination(fake),
            serializer: yield* serializer,
            writeMethod,
            checkpoint: { resume: yield* resume(), position }
          })).pipe(Effect.scoped, Effect.flip, Effect.map(configError))
          assert.strictEqual(error.path, "checkpoint.position")
          assert.match(error.message, /writer\.checkpoint\(position\)/)
          const missing = yield* BigQuerySink.writer(untyped<BigQuerySink.AtLeastOnceSinkOptions<Row>>({
            table: yield* destination(fake),
            serializer: yield* serializer,
            writeMethod,
            checkpoint: 3
          })).pipe(Effect.scoped, Effect.flip, Effect.map(configError))
          assert.strictEqual(missing.path, "checkpoint")
          assert.match(missing.message, /\{ resume \}/)
        }
        assert.strictEqual(fake.stats.requests, 0)
      })))

  it.effect("file loads with checkpoint.every refuse a replacing writeDisposition (each checkpoint loads)", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const error = yield* Stream.fromIterable(rows(1)).pipe(
          // refused before any client is needed: the at-least-once form's services suffice
          Stream.run(BigQuerySink.make(untyped<BigQuerySink.AtLeastOnceSinkOptions<Row>>({
            table: yield* destination(fake),
            serializer: yield* serializer,
            writeMethod: WriteMethod.fileLoads({ stagingPath: "gs://staging/p", writeDisposition: "WRITE_TRUNCATE" }),
            checkpoint: { resume: yield* resume(), every: 10, position }
          }))),
          Effect.flip,
          Effect.map(configError)
        )
        assert.strictEqual(error.path, "writeMethod.writeDisposition")
      })))

  it("the constructors removed before 0.1.0 are gone: one sink and one writer, the method chosen by writeMethod", () => {
    for (const name of ["exactlyOnce", "exactlyOnceWriter", "fileLoads"]) assert.notProperty(BigQuerySink, name)
    assert.deepStrictEqual(Object.keys(BigQuerySink).toSorted(), ["make", "writer"])
  })
})
