/**
 * BUFFERED streams, offsets and `FlushRows` on bqemulator 1.4.0, at the wire level through BigQuery's
 * own client (managedwriter): what the exactly-once sink relies on, checked, and every deviation from
 * BigQuery pinned, raw. Then the same calls through `bqemulatorAdapter.ts`, the test-only proxy that
 * translates the `FlushRows` deviations, so that the crash proof runs a sink written for BigQuery.
 *
 * | behaviour | BigQuery | bqemulator 1.4.0 |
 * |---|---|---|
 * | rows appended to a BUFFERED stream | invisible until flushed | same |
 * | append at an existing offset / past the end | in-band ALREADY_EXISTS / OUT_OF_RANGE, stream open | same |
 * | probe append at an existing offset on a new connection | ALREADY_EXISTS | same |
 * | `FlushRows(k)` | rows 0..k visible (inclusive) | **rows 0..k-1 (exclusive)**; `k` = row count accepted |
 * | `FlushRows` at or below the flushed offset | ALREADY_EXISTS | **OUT_OF_RANGE "already flushed"** |
 * | `FlushRows(0)` | row 0 visible | **UNKNOWN (a Python TypeError)** |
 * | `FlushRows` past the end | OUT_OF_RANGE | OUT_OF_RANGE |
 * | append to a finalized stream | error | in-band FAILED_PRECONDITION "Stream is FINALIZED" |
 * | `FlushRows` on a finalized stream | rejected | OUT_OF_RANGE "Cannot flush stream in FINALIZED state" |
 * | append to an unknown stream | NOT_FOUND | NOT_FOUND (the connection fails) |
 */
import { assert, layer } from "@effect/vitest"
import type { TableField } from "@google-cloud/bigquery"
import { adapt, managedwriter } from "@google-cloud/bigquery-storage"
import { Effect } from "effect"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as BqemulatorAdapter from "../../support/bqemulatorAdapter.ts"
import * as Clients from "../../support/clients.ts"
import type { BigQueryEndpoint } from "../../support/emulators.ts"

const schema: Array<TableField> = [{ name: "id", type: "INTEGER", mode: "REQUIRED" }]
const protoDescriptor = adapt.convertStorageSchemaToProto2Descriptor(
  adapt.convertBigQuerySchemaToStorageTableSchema({ fields: schema }),
  "root"
)

const codeOf = (error: unknown): number | undefined => {
  const cause = typeof error === "object" && error !== null && "cause" in error ? error.cause : error
  return typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "number"
    ? cause.code
    : undefined
}

/** A fresh table and a BUFFERED stream on it; the writer talks to `grpcPort` (the emulator or the adapter). */
const bufferedStream = (emulator: BigQueryEndpoint, grpcPort: number) =>
  Effect.gen(function*() {
    const bq = yield* Clients.bigQuery(emulator)
    const datasetId = Clients.uniqueId("buffered")
    yield* Effect.tryPromise(() => bq.createDataset(datasetId))
    yield* Effect.tryPromise(() => bq.dataset(datasetId).createTable("t", { schema }))
    const table = `projects/${emulator.projectId}/datasets/${datasetId}/tables/t`
    const writer = yield* Clients.bigQueryWriter({ ...emulator, grpcPort })
    const streamId = yield* Effect.tryPromise(() =>
      writer.createWriteStream({ streamType: managedwriter.BufferedStream, destinationTable: table })
    )
    const errors: Array<string> = []
    const connect = (id: string) =>
      Effect.acquireRelease(
        Effect.tryPromise(() => writer.createStreamConnection({ streamId: id })),
        (c) => Effect.sync(() => c.close())
      ).pipe(Effect.tap((c) => Effect.sync(() => c.onConnectionError((e) => errors.push(String(e))))))
    const connection = yield* connect(streamId)
    /** Appends `ids` at `offset` on `on`: the acknowledged offset, or the in-band error code. */
    const append = (ids: ReadonlyArray<number>, offset: number, on = connection) =>
      Effect.tryPromise(() =>
        new managedwriter.JSONWriter({ connection: on, protoDescriptor }).appendRows(ids.map((id) => ({ id })), offset)
          .getResult()
      ).pipe(
        Effect.map((r) =>
          r.error === null || r.error === undefined
            ? { offset: Number(r.appendResult?.offset?.value ?? -1) }
            : { code: r.error.code ?? -1, message: r.error.message ?? "" }
        )
      )
    /** Flushes at `offset`: the echoed offset, or the error code. */
    const flush = (offset: number, on = connection) =>
      Effect.tryPromise(() => on.flushRows({ offset })).pipe(
        Effect.map((r) => ({ offset: Number(r?.offset ?? -1) })),
        Effect.catch((e) => Effect.succeed({ code: codeOf(e) ?? -1 }))
      )
    const visible = Effect.tryPromise(() =>
      bq.query({
        query: `SELECT id FROM \`${emulator.projectId}.${datasetId}.t\` ORDER BY id`,
        useQueryCache: false
      })
    ).pipe(Effect.map(([rows]) => (rows as Array<{ id: number }>).map((r) => r.id)))
    return { table, streamId, connect, append, flush, visible, errors, writer }
  })

layer(BigQueryEmulator.layer, { timeout: "60 seconds", excludeTestServices: true })(
  "BUFFERED streams on bqemulator",
  (it) => {
    it.effect("appends at offsets: invisible until flushed, ALREADY_EXISTS / OUT_OF_RANGE in-band, probe on a new connection", () =>
      Effect.gen(function*() {
        const emulator = yield* BigQueryEmulator
        const s = yield* bufferedStream(emulator, emulator.grpcPort)
        const stream = yield* Effect.tryPromise(() => s.writer.getWriteStream({ streamId: s.streamId }))
        assert.strictEqual(String(stream.type), "BUFFERED")
        assert.deepStrictEqual(yield* s.append([0, 1, 2], 0), { offset: 0 })
        assert.deepStrictEqual(yield* s.append([3, 4], 3), { offset: 3 })
        assert.deepStrictEqual(yield* s.visible, [])
        const duplicate = yield* s.append([100], 1)
        assert.strictEqual("code" in duplicate ? duplicate.code : 0, 6, "ALREADY_EXISTS")
        const gap = yield* s.append([101], 9)
        assert.strictEqual("code" in gap ? gap.code : 0, 11, "OUT_OF_RANGE")
        assert.deepStrictEqual(yield* s.append([5], 5), { offset: 5 }, "the stream stays open")
        // a restarted process: a new connection, a probe append at an offset already written
        const again = yield* s.connect(s.streamId)
        const probe = yield* s.append([77], 3, again)
        assert.strictEqual("code" in probe ? probe.code : 0, 6, "the probe is ALREADY_EXISTS")
        assert.deepStrictEqual(yield* s.append([6], 6, again), { offset: 6 }, "at the end it is accepted")
        assert.deepStrictEqual(s.errors, [])
      }))

    it.effect("deviations (pinned): FlushRows is exclusive, a re-flush is OUT_OF_RANGE, offset 0 fails UNKNOWN", () =>
      Effect.gen(function*() {
        const emulator = yield* BigQueryEmulator
        const s = yield* bufferedStream(emulator, emulator.grpcPort)
        yield* s.append([0, 1, 2, 3, 4], 0)
        assert.deepStrictEqual(yield* s.flush(0), { code: 2 }, "offset 0: UNKNOWN")
        assert.deepStrictEqual(yield* s.flush(2), { offset: 2 })
        assert.deepStrictEqual(yield* s.visible, [0, 1], "exclusive: BigQuery would show 0, 1, 2")
        assert.deepStrictEqual(yield* s.flush(2), { code: 11 }, "re-flush: BigQuery answers ALREADY_EXISTS")
        assert.deepStrictEqual(yield* s.flush(1), { code: 11 }, "below the flushed offset")
        assert.deepStrictEqual(yield* s.flush(9), { code: 11 }, "past the end: OUT_OF_RANGE, as BigQuery")
        assert.deepStrictEqual(yield* s.flush(5), { offset: 5 }, "the row count itself is accepted")
        assert.deepStrictEqual(yield* s.visible, [0, 1, 2, 3, 4])
        yield* Effect.tryPromise(() => s.writer.finalizeWriteStream({ name: s.streamId }))
        const finalized = yield* s.append([5], 5)
        assert.strictEqual("code" in finalized ? finalized.code : 0, 9, "FAILED_PRECONDITION in-band")
        assert.deepStrictEqual(yield* s.flush(5), { code: 11 })
        const unknown = yield* s.connect(`${s.table}/streams/doesnotexist`)
        const lost = yield* Effect.exit(s.append([1], 0, unknown))
        assert.isTrue(lost._tag === "Failure")
        assert.isTrue(s.errors.some((e) => e.includes("NOT_FOUND")), s.errors.join("; "))
      }))

    it.effect("through the adapter, FlushRows behaves as BigQuery's: inclusive, re-flush ALREADY_EXISTS, offset 0", () =>
      Effect.gen(function*() {
        const emulator = yield* BigQueryEmulator
        const adapter = yield* BqemulatorAdapter.start({
          upstreamHost: emulator.grpcHost,
          upstreamPort: emulator.grpcPort
        })
        const port = Number(adapter.target.split(":")[1])
        const s = yield* bufferedStream(emulator, port)
        assert.deepStrictEqual(yield* s.append([0, 1, 2, 3, 4], 0), { offset: 0 })
        assert.deepStrictEqual(yield* s.flush(0), { offset: 0 })
        assert.deepStrictEqual(yield* s.visible, [0])
        assert.deepStrictEqual(yield* s.flush(2), { offset: 2 })
        assert.deepStrictEqual(yield* s.visible, [0, 1, 2])
        assert.deepStrictEqual(yield* s.flush(2), { code: 6 }, "re-flush: ALREADY_EXISTS")
        assert.deepStrictEqual(yield* s.flush(1), { code: 6 })
        assert.deepStrictEqual(yield* s.flush(5), { code: 11 }, "past the end (rows 0..4)")
        assert.deepStrictEqual(yield* s.flush(4), { offset: 4 })
        assert.deepStrictEqual(yield* s.visible, [0, 1, 2, 3, 4])
        assert.deepStrictEqual([adapter.stats.flushes, adapter.stats.reflushes], [6, 2])
      }))
  }
)
