/**
 * BUFFERED streams on bqemulator 1.4.0 through the library's own calls (`writeStreams.ts`, the
 * connection with explicit offsets): what it implements as BigQuery does, and each deviation pinned
 * by a test that asserts it (so a fixed emulator fails the pin, and the allowance in
 * `exactlyOnce/participant.ts` can go):
 *
 * - `FlushRows(offset)` makes rows BELOW `offset` visible (BigQuery: up to and including `offset`),
 *   and answers `offset`;
 * - a flush at or below the flushed offset answers `OUT_OF_RANGE` "already flushed" (BigQuery
 *   answers it as already flushed: `ALREADY_EXISTS`);
 * - offset errors carry no `StorageError` (BigQuery: `OFFSET_ALREADY_EXISTS` / `OFFSET_OUT_OF_RANGE`),
 *   a finalized stream answers `FAILED_PRECONDITION` without `STREAM_FINALIZED`.
 *
 * Then the exactly-once sink end to end on the emulator, across a restart.
 */
import { assert, layer } from "@effect/vitest"
import type { BigQuery } from "@google-cloud/bigquery"
import { protos } from "@google-cloud/bigquery-storage"
import * as grpc from "@grpc/grpc-js"
import { Deferred, Effect, Option, Schema, Stream } from "effect"
import {
  BigQueryClient,
  BigQuerySink,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import { encodeDescriptor } from "../../../src/internal/bigquery/encoding/descriptor.ts"
import * as AppendChannels from "../../../src/internal/bigquery/transport/appendChannels.ts"
import { encodeRows } from "../../../src/internal/bigquery/transport/appendRequest.ts"
import * as Connection from "../../../src/internal/bigquery/transport/connection.ts"
import * as SendBacklog from "../../../src/internal/bigquery/transport/sendBacklog.ts"
import * as WriteStreams from "../../../src/internal/bigquery/transport/writeStreams.ts"
import { Checkpoint, CheckpointStore } from "../../../src/Sink.ts"
import { append } from "../../support/appendAnswer.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { testLayer } from "./emulatorClient.ts"

const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }

const setup = Effect.gen(function*() {
  const emulator = yield* BigQueryEmulator
  const client = yield* BigQueryClient.BigQueryClient
  const bq = yield* Clients.bigQuery(emulator)
  const datasetId = Clients.uniqueId("buffered")
  yield* Effect.tryPromise(() => bq.createDataset(datasetId))
  yield* Effect.tryPromise(() =>
    bq.dataset(datasetId).createTable("t", { schema: { fields: [{ name: "id", type: "INT64", mode: "REQUIRED" }] } })
  )
  const table = yield* TableDestination.make({ projectId: emulator.projectId, datasetId, tableId: "t" })
  const serializer = yield* RowSerializer.fromJson(schema)
  const descriptor = encodeDescriptor(RowSerializer.descriptorOf(serializer, table))
  const row = (id: number): Uint8Array => {
    const bytes = serializer.serialize({ id }, table)
    if (!(bytes instanceof Uint8Array)) throw new Error("row did not encode")
    return bytes
  }
  const count = Effect.map(
    Effect.tryPromise(() => bq.query({ query: `SELECT COUNT(*) AS n FROM \`${table.toString()}\`` })),
    ([r]) => Number((r as Array<{ n: number }>)[0]?.n ?? -1)
  )
  return { client, bq, table, descriptor, row, count, emulator, datasetId }
})

/** One append of `ids` at `offset` on a fresh connection; the answer (or the stream failure). */
const appendAt = (
  write: grpc.Client,
  stream: string,
  descriptor: Uint8Array,
  body: Uint8Array,
  offset: number
) =>
  Effect.gen(function*() {
    const connection = yield* Connection.open(AppendChannels.of(write).lease(), stream, descriptor, SendBacklog.make())
    const answer = yield* Deferred.await(yield* append(connection, body, offset)).pipe(Effect.result)
    yield* connection.close
    return answer
  })

layer(testLayer, { timeout: "90 seconds", excludeTestServices: true })("BUFFERED streams on bqemulator", (it) => {
  it.effect("appends at offsets are invisible until FlushRows; the pinned deviations", () =>
    Effect.gen(function*() {
      const { client, count, descriptor, row, table } = yield* setup
      const stream = yield* WriteStreams.createBuffered(client.write, table.tablePath)
      assert.match(stream, /\/streams\/[0-9a-f]{16}$/)
      const body = (ids: ReadonlyArray<number>) => Effect.sync(() => encodeRows(ids.map(row)))

      const first = yield* appendAt(client.write, stream, descriptor, yield* body([0, 1, 2]), 0)
      assert.isTrue(first._tag === "Success" && first.success.ok && first.success.offset === 0)
      const second = yield* appendAt(client.write, stream, descriptor, yield* body([3, 4]), 3)
      assert.isTrue(second._tag === "Success" && second.success.ok && second.success.offset === 3)
      assert.strictEqual(yield* count, 0, "buffered rows are invisible")

      // an offset below the end: ALREADY_EXISTS; deviation: no OFFSET_ALREADY_EXISTS StorageError
      const again = yield* appendAt(client.write, stream, descriptor, yield* body([0]), 0)
      assert.isTrue(again._tag === "Success" && !again.success.ok)
      if (again._tag === "Success") {
        assert.strictEqual(again.success.code, grpc.status.ALREADY_EXISTS)
        assert.isUndefined(again.success.storageCode)
      }
      // past the end: OUT_OF_RANGE; deviation: no OFFSET_OUT_OF_RANGE StorageError
      const gap = yield* appendAt(client.write, stream, descriptor, yield* body([9]), 9)
      if (gap._tag === "Success") {
        assert.strictEqual(gap.success.code, grpc.status.OUT_OF_RANGE)
        assert.isUndefined(gap.success.storageCode)
      } else assert.fail("expected an answer")

      // deviation: the offset is exclusive: FlushRows(3) shows rows 0..2 (BigQuery: 0..3)
      assert.strictEqual(yield* WriteStreams.flushRows(client.write, stream, 3), 3)
      assert.strictEqual(yield* count, 3)
      // deviation: the same flush again is OUT_OF_RANGE "already flushed" (BigQuery: already flushed, success)
      const repeated = yield* Effect.flip(WriteStreams.flushRows(client.write, stream, 3))
      assert.strictEqual(repeated.code, grpc.status.OUT_OF_RANGE)
      assert.include(repeated.message, "already flushed")
      // past the end: OUT_OF_RANGE "beyond the end"
      const beyond = yield* Effect.flip(WriteStreams.flushRows(client.write, stream, 6))
      assert.strictEqual(beyond.code, grpc.status.OUT_OF_RANGE)
      assert.include(beyond.message, "beyond the end")
      assert.strictEqual(yield* WriteStreams.flushRows(client.write, stream, 5), 5)
      assert.strictEqual(yield* count, 5)
    }))

  it.effect("unknown and finalized streams, and a missing table", () =>
    Effect.gen(function*() {
      const { client, descriptor, row, table } = yield* setup
      const body = encodeRows([row(1)])
      const unknown = `${table.tablePath}/streams/0123456789abcdef`
      const flushUnknown = yield* Effect.flip(WriteStreams.flushRows(client.write, unknown, 1))
      assert.strictEqual(flushUnknown.code, grpc.status.NOT_FOUND)
      const appendUnknown = yield* appendAt(client.write, unknown, descriptor, body, 0)
      assert.isTrue(appendUnknown._tag === "Failure" && appendUnknown.failure.code === grpc.status.NOT_FOUND)

      const stream = yield* WriteStreams.createBuffered(client.write, table.tablePath)
      yield* Effect.tryPromise(() =>
        new Promise<void>((resolve, reject) => {
          client.write.makeUnaryRequest(
            "/google.cloud.bigquery.storage.v1.BigQueryWrite/FinalizeWriteStream",
            (b: Uint8Array) => Buffer.from(b),
            (b: Buffer) => b,
            protos.google.cloud.bigquery.storage.v1.FinalizeWriteStreamRequest.encode({ name: stream }).finish(),
            (error) => (error ? reject(error) : resolve())
          )
        })
      )
      // deviation: FAILED_PRECONDITION without STREAM_FINALIZED (BigQuery: the StorageError names it)
      const finalized = yield* appendAt(client.write, stream, descriptor, body, 0)
      if (finalized._tag === "Success") {
        assert.strictEqual(finalized.success.code, grpc.status.FAILED_PRECONDITION)
        assert.isUndefined(finalized.success.storageCode)
      } else assert.fail("expected an answer")

      const missing = yield* Effect.flip(
        WriteStreams.createBuffered(client.write, `${table.tablePath.replace(/tables\/t$/, "tables/absent")}`)
      )
      assert.strictEqual(missing.code, grpc.status.NOT_FOUND)
    }))

  it.effect("the exactly-once sink writes every row once across a restart", () =>
    Effect.gen(function*() {
      const { bq, count, table } = yield* setup
      const serializer = yield* RowSerializer.fromJson(schema)
      const run = (crashAfter: number | undefined) =>
        Effect.gen(function*() {
          const resume = yield* Checkpoint.resume({ writerId: `w-${table.datasetId}`, positionSchema: Schema.Number })
          const from = Option.getOrElse(resume.position, () => 0)
          const source = Stream.range(from, 999).pipe(
            Stream.map((id) => ({ id })),
            Stream.rechunk(50),
            Stream.tap((
              r
            ) => (crashAfter !== undefined && r.id === crashAfter ? Effect.fail("crash" as const) : Effect.void))
          )
          return yield* source.pipe(Stream.run(BigQuerySink.make<{ readonly id: number }, number>({
            table,
            serializer,
            writeMethod: WriteMethod.exactlyOnce(),
            checkpoint: { resume, every: 200, position: (r) => r.id + 1 }
          })))
        })
      const crashed = yield* Effect.flip(run(640))
      assert.strictEqual(crashed, "crash")
      yield* run(undefined)
      assert.strictEqual(yield* count, 1000)
      const [sums] = yield* Effect.tryPromise(() =>
        (bq as BigQuery).query({
          query: `SELECT COUNT(DISTINCT id) AS d, SUM(id) AS s FROM \`${table.toString()}\``
        })
      )
      const r = (sums as Array<{ d: number; s: number }>)[0]
      assert.strictEqual(Number(r?.d), 1000)
      assert.strictEqual(Number(r?.s), 999 * 1000 / 2)
    }).pipe(Effect.provide(CheckpointStore.memory)))
})
