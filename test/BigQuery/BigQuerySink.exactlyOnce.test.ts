/**
 * `BigQuerySink.exactlyOnce` / `exactlyOnceWriter` against the fake's BUFFERED streams: rows
 * invisible until a checkpoint, one stream per destination reused across checkpoints and never
 * finalized, restore (re-commit, probe, abandon), fencing, and both `FlushRows` offset conventions.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import { BigQuerySink, RowSerializer, TableSchema, WriteMethod } from "../../src/BigQuery/index.ts"
import { CheckpointConflict } from "../../src/Sink.ts"
import { eoWriter, range, resume, visibleIds, withEo } from "./exactlyOnceFixtures.ts"
import { columns, destination, fastRetries, type Row, rows, schema, serializer } from "./sinkFixtures.ts"

describe("BigQuerySink.exactlyOnce", () => {
  for (const via of ["bigquery", "emulator"] as const) {
    it.live(`rows become visible at checkpoints only, on one stream reused across checkpoints (${via})`, () =>
      withEo({ via }, (fake) =>
        Effect.gen(function*() {
          const { writer } = yield* eoWriter(fake)
          yield* writer.write(rows(100))
          yield* writer.flush
          assert.deepStrictEqual(visibleIds(fake), [], "appended, not flushed")
          yield* writer.checkpoint(100)
          assert.deepStrictEqual(visibleIds(fake), range(0, 100))
          yield* writer.write(rows(50, 100))
          yield* writer.checkpoint(150)
          assert.deepStrictEqual(visibleIds(fake), range(0, 150))
          assert.strictEqual(fake.buffered.stats.creates, 1)
          assert.strictEqual(fake.buffered.stats.finalizes, 0)
          const r = yield* resume()
          assert.deepStrictEqual(r.position, Option.some(150))
        })))
  }

  it.live("the sink checkpoints every N records and at the end of input", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const r = yield* resume()
        const summary = yield* Stream.fromIterable(rows(1000)).pipe(
          Stream.rechunk(100),
          Stream.run(BigQuerySink.make({
            table: yield* destination(fake),
            serializer: yield* serializer,
            writeMethod: WriteMethod.exactlyOnce(fastRetries),
            checkpoint: { resume: r, every: 300, position: (row) => Number(row.id) + 1 }
          }))
        )
        assert.strictEqual(summary.recordsWritten, 1000)
        assert.deepStrictEqual(visibleIds(fake), range(0, 1000))
        assert.strictEqual(fake.buffered.stats.flushes, 4)
        const after = yield* resume()
        assert.deepStrictEqual(after.position, Option.some(1000))
      })))

  it.live("maxInFlightBytes bounds the rows admitted and not acknowledged: a budget of one append", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const { writer } = yield* eoWriter(
          fake,
          "w",
          WriteMethod.exactlyOnce({ ...fastRetries, maxAppendRequestBytes: 256, maxInFlightBytes: 256 })
        )
        const before = fake.stats.requests
        yield* writer.write(rows(1000))
        yield* writer.checkpoint(1000)
        assert.deepStrictEqual(visibleIds(fake), range(0, 1000))
        // 1000 rows of at least 10 framed bytes, at most 256 bytes an append
        assert.isAtLeast(fake.stats.requests - before, 40)
        yield* writer.write(rows(500, 1000))
        yield* writer.checkpoint(1500)
        assert.deepStrictEqual(visibleIds(fake), range(0, 1500))
        assert.strictEqual(fake.buffered.stats.creates, 1)
      })))

  it.live("the default budget (four appends) leaves appends whole: 1000 small rows are one append", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const { writer } = yield* eoWriter(fake)
        const before = fake.stats.requests
        yield* writer.write(rows(1000))
        yield* writer.checkpoint(1000)
        assert.deepStrictEqual(visibleIds(fake), range(0, 1000))
        assert.strictEqual(fake.stats.requests - before, 1)
      })))

  it.live("the summary counts bytesWritten as the at-least-once writer does", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const { writer } = yield* eoWriter(fake)
        yield* writer.write(rows(20))
        yield* writer.checkpoint(20)
        const exactlyOnce = yield* writer.summary
        const table = yield* destination(fake)
        const sinkSummary = yield* Stream.run(
          Stream.fromIterable(rows(20)),
          BigQuerySink.make({
            table,
            serializer: yield* serializer,
            writeMethod: WriteMethod.exactlyOnce(fastRetries),
            checkpoint: { resume: yield* resume("sink"), every: 7, position: (row) => Number(row.id) + 1 }
          })
        )
        const atLeastOnce = yield* Stream.run(
          Stream.fromIterable(rows(20)),
          BigQuerySink.make({ table, serializer: yield* serializer })
        )
        assert.isAbove(atLeastOnce.bytesWritten, 0)
        for (const summary of [exactlyOnce, sinkSummary]) {
          assert.strictEqual(summary.recordsWritten, 20)
          assert.strictEqual(summary.bytesWritten, atLeastOnce.bytesWritten)
          assert.strictEqual(summary.destinations[`${fake.projectId}.d.t`]?.bytesWritten, atLeastOnce.bytesWritten)
        }
      })))

  it.live("a restart resumes at the stored position: rows after the last checkpoint are never visible nor doubled", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        // first run: checkpoint at 300, then 200 more rows appended, then a "crash" (scope closed without checkpoint)
        yield* Effect.scoped(Effect.gen(function*() {
          const { writer } = yield* eoWriter(fake)
          yield* writer.write(rows(300))
          yield* writer.checkpoint(300)
          yield* writer.write(rows(200, 300))
          yield* writer.flush
        }))
        assert.deepStrictEqual(visibleIds(fake), range(0, 300))
        // second run resumes at 300: the probe at offset 300 finds rows there (OFFSET_ALREADY_EXISTS): abandon
        const { resume: r, writer } = yield* eoWriter(fake)
        assert.deepStrictEqual(r.position, Option.some(300))
        yield* writer.write(rows(200, 300))
        yield* writer.checkpoint(500)
        assert.deepStrictEqual(visibleIds(fake), range(0, 500))
        assert.strictEqual(fake.buffered.stats.creates, 2, "the restored stream was abandoned for a fresh one")
        assert.strictEqual(fake.buffered.stats.finalizes, 0)
      })))

  it.live("a restart after a clean checkpoint adopts the stored stream through the probe append", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const { writer } = yield* eoWriter(fake)
          yield* writer.write(rows(10))
          yield* writer.checkpoint(10)
        }))
        const { writer } = yield* eoWriter(fake)
        yield* writer.write(rows(10, 10))
        yield* writer.checkpoint(20)
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 1, "the stored stream was adopted")
        const [stream] = fake.buffered.streams.values()
        assert.strictEqual(stream?.rows.length, 20)
      })))

  it.live("a crash between save and flush: the restart re-runs the stored flush", () =>
    withEo(
      { buffered: { flush: (_stream, _offset, call) => (call === 0 ? { code: 5, message: "boom" } : undefined) } },
      (
        fake
      ) =>
        Effect.gen(function*() {
          const first = yield* Effect.scoped(Effect.gen(function*() {
            const { writer } = yield* eoWriter(fake)
            yield* writer.write(rows(40))
            return yield* Effect.flip(writer.checkpoint(40))
          }))
          assert.strictEqual(first._tag, "BigQueryError")
          assert.deepStrictEqual(visibleIds(fake), [], "saved, not flushed")
          const { resume: r } = yield* eoWriter(fake)
          assert.deepStrictEqual(r.position, Option.some(40))
          assert.deepStrictEqual(visibleIds(fake), range(0, 40), "the restore flushed the saved commit")
        })
    ))

  it.live("a zombie is fenced: CheckpointConflict, and nothing it wrote becomes visible", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const zombie = yield* eoWriter(fake)
        const replacement = yield* eoWriter(fake)
        yield* replacement.writer.write(rows(5))
        yield* replacement.writer.checkpoint(5)
        yield* zombie.writer.write(rows(5, 100))
        const error = yield* Effect.flip(zombie.writer.checkpoint(105))
        assert.instanceOf(error, CheckpointConflict)
        assert.deepStrictEqual(visibleIds(fake), range(0, 5))
        assert.strictEqual(yield* Effect.flip(zombie.writer.write(rows(1))), error)
      })))

  it.live("a serializer's schema evolving mid-stream: the table widened, the same stream reopened at the same offset", () =>
    withEo({ createTable: false }, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, columns.filter((c) => c.name !== "name"))
        const v1 = yield* RowSerializer.fromJson({
          fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })]
        })
        const v2 = yield* RowSerializer.fromJson(schema)
        let version = 1
        const current = () => (version === 1 ? v1 : v2)
        const evolving: RowSerializer.RowSerializer<Row> = {
          tableSchema: (d) => current().tableSchema(d),
          descriptor: (d) => RowSerializer.descriptorOf(current(), d),
          fingerprint: () => version,
          serialize: (row, d) => current().serialize(row, d)
        }
        const writer = yield* BigQuerySink.writer({
          table: yield* destination(fake),
          serializer: evolving,
          writeMethod: WriteMethod.exactlyOnce(fastRetries),
          schemaUpdate: { allowNewFields: true },
          checkpoint: { resume: yield* resume() }
        })
        yield* writer.write(rows(10).map((r) => ({ id: r.id })))
        version = 2
        yield* writer.write(rows(10, 10))
        yield* writer.checkpoint(20)
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 1, "the same stream")
        const [stream] = fake.buffered.streams.values()
        assert.strictEqual(stream?.rows.length, 20, "contiguous offsets across the change")
        assert.isTrue(fake.table(`${fake.projectId}.d.t`)?.schema.fields.some((f) => f.name === "name"))
      })))

  it.effect("destinationIdleTimeout: only a clean idle destination is closed (not finalized); a later record opens a new stream", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const method = WriteMethod.exactlyOnce({ ...fastRetries, destinationIdleTimeout: "1 minute" })
        const { writer } = yield* eoWriter(fake, "w", method)
        yield* writer.write(rows(10))
        yield* writer.checkpoint(10)
        // rows written since the last prepare, then idle for longer than the timeout: the checkpoint keeps it
        yield* writer.write(rows(10, 10))
        yield* TestClock.adjust("2 minutes")
        yield* writer.checkpoint(20)
        yield* writer.write(rows(10, 20))
        yield* writer.checkpoint(30)
        assert.deepStrictEqual(visibleIds(fake), range(0, 30))
        assert.strictEqual(fake.buffered.stats.creates, 1, "a dirty destination is not closed")
        // clean since that checkpoint and idle: the next checkpoint closes it
        yield* TestClock.adjust("2 minutes")
        yield* writer.checkpoint(30)
        yield* writer.write(rows(10, 30))
        yield* writer.checkpoint(40)
        assert.deepStrictEqual(visibleIds(fake), range(0, 40))
        assert.strictEqual(fake.buffered.stats.creates, 2, "reopened on a new stream")
        assert.strictEqual(fake.buffered.stats.finalizes, 0, "the closed stream is not finalized")
      })))

  it.effect("a destination whose restored stream was abandoned is not clean until the next checkpoint", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const method = WriteMethod.exactlyOnce({ ...fastRetries, destinationIdleTimeout: "1 minute" })
        yield* Effect.scoped(Effect.gen(function*() {
          const { writer } = yield* eoWriter(fake, "w", method)
          yield* writer.write(rows(10))
          yield* writer.checkpoint(10)
        }))
        // the crashed run had appended past its checkpoint: the restore's probe at 10 meets
        // OFFSET_ALREADY_EXISTS and abandons the stream for a fresh one
        const [first] = fake.buffered.streams.keys()
        fake.buffered.append(first ?? "", 10, Array.from({ length: 5 }, () => new Uint8Array([8, 1])))
        const { writer } = yield* eoWriter(fake, "w", method)
        // as many rows as the restored offset: the fresh stream's offset equals the last prepare's
        yield* writer.write(rows(10, 10))
        yield* TestClock.adjust("2 minutes")
        yield* writer.checkpoint(20)
        assert.strictEqual(fake.buffered.stats.creates, 2, "the restored stream was abandoned")
        assert.deepStrictEqual(visibleIds(fake), range(0, 20), "the fresh stream's rows were flushed")
      })))
})
