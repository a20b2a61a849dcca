/**
 * BUFFERED write streams for the fake `BigQueryWrite` server (`fakeBigQueryWrite.ts`), as BigQuery
 * documents them: `CreateWriteStream` (type BUFFERED) on a table of the catalog, appends at explicit
 * offsets (`OFFSET_ALREADY_EXISTS` below the stream's end, `OFFSET_OUT_OF_RANGE` past it,
 * `STREAM_FINALIZED` once finalized, `STREAM_NOT_FOUND` for an unknown name), rows invisible until
 * `FlushRows(offset)` makes rows `0..offset` (inclusive) visible; a flush at or below what is already
 * visible answers `ALREADY_EXISTS`, one past the end `OUT_OF_RANGE` (or bqemulator's exclusive offsets:
 * `flushOffsets`). `FinalizeWriteStream` and
 * `forget` (a stream that expired) are there for the restore tests.
 *
 * Faults: `create`, `flush` and `finalize` answer an error (or, for `flush`, another offset) instead
 * of the default per call; appends take the fake's per-request `answer` (its context carries the
 * stream and the offset).
 */
import { protos } from "@google-cloud/bigquery-storage"
import * as grpc from "@grpc/grpc-js"

const v1 = protos.google.cloud.bigquery.storage.v1

/** StorageError codes (storage.proto). */
export const StorageCode = {
  STREAM_NOT_FOUND: 3,
  INVALID_STREAM_STATE: 5,
  STREAM_FINALIZED: 6,
  OFFSET_ALREADY_EXISTS: 8,
  OFFSET_OUT_OF_RANGE: 9
} as const

export interface BufferedStream {
  readonly name: string
  /** `p.d.t` */
  readonly table: string
  /** Every row appended, at its offset. */
  readonly rows: Array<Uint8Array>
  /** Rows `0..visible-1` are flushed (visible in the table). */
  visible: number
  finalized: boolean
}

/** An error a call answers with (gRPC code, message, optional StorageError code). */
export interface CallError {
  readonly code: number
  readonly message: string
  readonly storageCode?: number
}

export interface BufferedFaults {
  /**
   * `inclusive` (BigQuery, default): `FlushRows(offset)` makes rows `0..offset` visible.
   * `exclusive` (bqemulator 1.4.0): rows below `offset` become visible, and a flush at or below what is
   * visible answers `OUT_OF_RANGE` "already flushed". The library takes an emulator endpoint for
   * bqemulator, so tests through `BigQueryClient.layer({ emulator })` use `exclusive`.
   */
  readonly flushOffsets?: "inclusive" | "exclusive"
  /** `CreateWriteStream` on `table` (`p.d.t`, the nth call from 0): an error instead of creating. */
  readonly create?: (table: string, call: number) => CallError | undefined
  /** `FlushRows`: an error, or `{ offset }` to answer another offset without flushing. */
  readonly flush?: (
    stream: BufferedStream,
    offset: number,
    call: number
  ) => CallError | { readonly answerOffset: number } | undefined
}

/** The outcome of an append on a buffered stream: the rows were taken (`ok`), or the error. */
export type AppendOutcome = { readonly _tag: "ok"; readonly offset: number } | {
  readonly _tag: "error"
  readonly error: CallError
}

const tableName = (table: string): string => {
  const [p, d, t] = table.split(".")
  return `projects/${p}/datasets/${d}/tables/${t}`
}

const tableOfParent = (parent: string): string | undefined => {
  const m = /^projects\/([^/]+)\/datasets\/([^/]+)\/tables\/([^/]+)$/.exec(parent)
  return m === null ? undefined : `${m[1]}.${m[2]}.${m[3]}`
}

/** The `grpc-status-details-bin` trailer carrying a StorageError. */
export const storageTrailer = (error: CallError): grpc.Metadata => {
  const metadata = new grpc.Metadata()
  if (error.storageCode === undefined) return metadata
  metadata.set(
    "grpc-status-details-bin",
    Buffer.from(
      protos.google.rpc.Status.encode({
        code: error.code,
        message: error.message,
        details: [{
          type_url: "type.googleapis.com/google.cloud.bigquery.storage.v1.StorageError",
          value: v1.StorageError.encode({ code: error.storageCode, errorMessage: error.message }).finish()
        }]
      }).finish()
    )
  )
  return metadata
}

const answerError = (callback: grpc.sendUnaryData<Buffer>, error: CallError) =>
  callback({ code: error.code, details: error.message, metadata: storageTrailer(error) })

export interface BufferedStreams {
  readonly streams: Map<string, BufferedStream>
  /** Whether `name` is a buffered stream name (not `_default`). */
  readonly isBuffered: (name: string) => boolean
  readonly append: (name: string, offset: number | undefined, rows: ReadonlyArray<Uint8Array>) => AppendOutcome
  /** The stream-level error (unknown, finalized, offset) an append at `offset` would meet; nothing is appended. */
  readonly check: (name: string, offset: number | undefined) => CallError | undefined
  /** Rows made visible in `table` by flushes, stream by stream in creation order. */
  readonly visible: (table: string) => ReadonlyArray<Uint8Array>
  /** Counters: CreateWriteStream and FlushRows calls (failed ones included), finalizations. */
  readonly stats: { creates: number; flushes: number; finalizes: number }
  /**
   * With `fastAck`: the sum over streams of the largest offset `FlushRows` asked for (with an emulator endpoint
   * the library's offsets are exclusive, so this is the number of rows flushed).
   */
  readonly fastFlushed: () => number
  /** Forgets a stream, as if it expired (its flushed rows stay visible). */
  readonly forget: (name: string) => void
  readonly finalize: (name: string) => void
  readonly handlers: {
    readonly CreateWriteStream: grpc.handleUnaryCall<Buffer, Buffer>
    readonly FlushRows: grpc.handleUnaryCall<Buffer, Buffer>
    readonly FinalizeWriteStream: grpc.handleUnaryCall<Buffer, Buffer>
  }
}

/**
 * The buffered streams of one fake server; `tableExists` reads its catalog. With `fastAck` (the
 * benchmarks' mode, where appends are only counted) every table exists and `FlushRows` answers the
 * requested offset at once.
 */
export const make = (
  tableExists: (table: string) => boolean,
  faults: BufferedFaults = {},
  fastAck = false
): BufferedStreams => {
  const streams = new Map<string, BufferedStream>()
  const forgotten: Array<BufferedStream> = []
  const stats = { creates: 0, flushes: 0, finalizes: 0 }
  let counter = 0
  const fastFlushedTo = new Map<string, number>()
  let fastFlushedTotal = 0

  const append = (name: string, offset: number | undefined, rows: ReadonlyArray<Uint8Array>): AppendOutcome => {
    const stream = streams.get(name)
    if (stream === undefined) {
      return {
        _tag: "error",
        error: { code: grpc.status.NOT_FOUND, message: `Stream ${name} not found`, storageCode: 3 }
      }
    }
    if (stream.finalized) {
      return {
        _tag: "error",
        error: { code: grpc.status.INVALID_ARGUMENT, message: `Stream ${name} is finalized`, storageCode: 6 }
      }
    }
    const end = stream.rows.length
    const at = offset ?? end
    if (at < end) {
      return {
        _tag: "error",
        error: { code: grpc.status.ALREADY_EXISTS, message: `Offset ${at} already exists (end ${end})`, storageCode: 8 }
      }
    }
    if (at > end) {
      return {
        _tag: "error",
        error: { code: grpc.status.OUT_OF_RANGE, message: `Offset ${at} is beyond the end ${end}`, storageCode: 9 }
      }
    }
    for (const row of rows) stream.rows.push(row)
    return { _tag: "ok", offset: at }
  }

  /** The stream-level error an append at `offset` meets (before its rows are looked at), if any. */
  const check = (name: string, offset: number | undefined): CallError | undefined => {
    const outcome = append(name, offset, [])
    return outcome._tag === "error" ? outcome.error : undefined
  }

  const CreateWriteStream: grpc.handleUnaryCall<Buffer, Buffer> = (call, callback) => {
    const request = v1.CreateWriteStreamRequest.decode(call.request)
    const table = tableOfParent(request.parent ?? "")
    const n = stats.creates++
    if (table === undefined || (!fastAck && !tableExists(table))) {
      return answerError(callback, { code: grpc.status.NOT_FOUND, message: `Table ${request.parent} not found` })
    }
    const fault = faults.create?.(table, n)
    if (fault !== undefined) return answerError(callback, fault)
    const name = `${tableName(table)}/streams/${(++counter).toString(16).padStart(16, "0")}`
    streams.set(name, { name, table, rows: [], visible: 0, finalized: false })
    callback(null, Buffer.from(v1.WriteStream.encode({ name, type: 3 }).finish()))
  }

  const FlushRows: grpc.handleUnaryCall<Buffer, Buffer> = (call, callback) => {
    const request = v1.FlushRowsRequest.decode(call.request)
    const name = request.writeStream ?? ""
    const offset = Number(request.offset?.value ?? 0)
    const n = stats.flushes++
    if (fastAck) {
      const before = fastFlushedTo.get(name) ?? 0
      if (offset > before) {
        fastFlushedTo.set(name, offset)
        fastFlushedTotal += offset - before
      }
      return callback(null, Buffer.from(v1.FlushRowsResponse.encode({ offset }).finish()))
    }
    const stream = streams.get(name)
    if (stream === undefined) {
      return answerError(callback, { code: grpc.status.NOT_FOUND, message: `Stream ${name} not found`, storageCode: 3 })
    }
    const fault = faults.flush?.(stream, offset, n)
    if (fault !== undefined && "answerOffset" in fault) {
      return callback(null, Buffer.from(v1.FlushRowsResponse.encode({ offset: fault.answerOffset }).finish()))
    }
    if (fault !== undefined) return answerError(callback, fault)
    if (faults.flushOffsets === "exclusive") {
      if (offset > stream.rows.length || offset === 0) {
        return answerError(callback, {
          code: grpc.status.OUT_OF_RANGE,
          message: `Offset ${offset} is beyond the end of the stream Entity: ${name}`
        })
      }
      if (offset <= stream.visible) {
        return answerError(callback, {
          code: grpc.status.OUT_OF_RANGE,
          message: `Offset ${offset} already flushed; next expected > ${stream.visible}`
        })
      }
      stream.visible = offset
      return callback(null, Buffer.from(v1.FlushRowsResponse.encode({ offset }).finish()))
    }
    if (offset >= stream.rows.length) {
      return answerError(callback, {
        code: grpc.status.OUT_OF_RANGE,
        message: `Offset ${offset} is beyond the end of the stream (${stream.rows.length} rows)`,
        storageCode: 9
      })
    }
    if (offset < stream.visible) {
      return answerError(callback, {
        code: grpc.status.ALREADY_EXISTS,
        message: `Offset ${offset} already flushed`,
        storageCode: 8
      })
    }
    // a finalized stream takes no new flush (an already flushed offset is answered above)
    if (stream.finalized) {
      return answerError(callback, {
        code: grpc.status.INVALID_ARGUMENT,
        message: `Stream ${name} is finalized`,
        storageCode: 6
      })
    }
    stream.visible = offset + 1
    callback(null, Buffer.from(v1.FlushRowsResponse.encode({ offset }).finish()))
  }

  const finalize = (name: string) => {
    const stream = streams.get(name)
    if (stream === undefined) return
    stream.finalized = true
    stats.finalizes++
  }

  const FinalizeWriteStream: grpc.handleUnaryCall<Buffer, Buffer> = (call, callback) => {
    const request = v1.FinalizeWriteStreamRequest.decode(call.request)
    const stream = streams.get(request.name ?? "")
    if (stream === undefined) {
      return answerError(callback, { code: grpc.status.NOT_FOUND, message: `Stream ${request.name} not found` })
    }
    finalize(stream.name)
    callback(null, Buffer.from(v1.FinalizeWriteStreamResponse.encode({ rowCount: stream.rows.length }).finish()))
  }

  return {
    streams,
    isBuffered: (name) => name.length > 0 && !name.endsWith("/_default"),
    append,
    check,
    visible: (table) => {
      const out: Array<Uint8Array> = []
      for (const stream of [...forgotten, ...streams.values()]) {
        if (stream.table === table) out.push(...stream.rows.slice(0, stream.visible))
      }
      return out
    },
    stats,
    fastFlushed: () => fastFlushedTotal,
    forget: (name) => {
      const stream = streams.get(name)
      if (stream === undefined) return
      streams.delete(name)
      forgotten.push(stream)
    },
    finalize,
    handlers: { CreateWriteStream, FlushRows, FinalizeWriteStream }
  }
}
