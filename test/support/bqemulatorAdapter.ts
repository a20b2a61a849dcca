/**
 * A loopback gRPC (h2c) proxy in front of bqemulator that translates its `FlushRows` into BigQuery's, so
 * that a sink written for BigQuery can be proven against the emulator without an emulator mode in the
 * library. Everything else is forwarded untouched. Each translation is a deviation pinned, raw, by
 * `test/integration/bigquery/bufferedStreams.test.ts`:
 *
 * - **offset convention**: BigQuery flushes rows up to and *including* `offset`; bqemulator 1.4.0 up to
 *   and *excluding* it. The request's offset goes up by one, the response's comes down by one.
 * - **re-flush**: BigQuery answers a flush at or below the flushed offset `ALREADY_EXISTS` (what the
 *   reference's committer takes as "already flushed", section 2.6); bqemulator answers `OUT_OF_RANGE`
 *   "already flushed". That status becomes `ALREADY_EXISTS`.
 * - **offset 0**: bqemulator fails `FlushRows` at offset 0 with `UNKNOWN` (a Python `TypeError`: the zero
 *   `Int64Value` arrives as none); after the +1 it never receives 0.
 */
import { Effect, type Scope } from "effect"
import * as http2 from "node:http2"
import type * as net from "node:net"
import protobuf from "protobufjs"

/** The unary method whose messages are translated. */
export const flushRowsPath = "/google.cloud.bigquery.storage.v1.BigQueryWrite/FlushRows"

const grpcStatus = { OK: 0, ALREADY_EXISTS: 6, OUT_OF_RANGE: 11 } as const

export interface BqemulatorAdapter {
  /** `127.0.0.1:<port>`: the sink's `emulator.grpc`. */
  readonly target: string
  readonly stats: { flushes: number; reflushes: number; forwarded: number }
}

interface FlushRequest {
  readonly writeStream: string
  readonly offset: bigint
}

/** Splits gRPC length-prefixed frames (1 byte flag, 4 bytes big-endian length). */
const frames = (body: Buffer): Array<Buffer> => {
  const out: Array<Buffer> = []
  let at = 0
  while (at + 5 <= body.length) {
    const length = body.readUInt32BE(at + 1)
    out.push(body.subarray(at + 5, at + 5 + length))
    at += 5 + length
  }
  return out
}

const frame = (message: Uint8Array): Buffer => {
  const header = Buffer.alloc(5)
  header.writeUInt32BE(message.length, 1)
  return Buffer.concat([header, message])
}

const toBigInt = (value: number | protobuf.Long): bigint =>
  typeof value === "number" ? BigInt(value) : BigInt(value.toString())

/** `FlushRowsRequest { string write_stream = 1; Int64Value offset = 2 }` */
export const decodeFlushRequest = (bytes: Uint8Array): FlushRequest => {
  const reader = protobuf.Reader.create(bytes)
  let writeStream = ""
  let offset = 0n
  while (reader.pos < reader.len) {
    const tag = reader.uint32()
    if (tag >>> 3 === 1 && (tag & 7) === 2) writeStream = reader.string()
    else if (tag >>> 3 === 2 && (tag & 7) === 2) {
      const inner = protobuf.Reader.create(reader.bytes())
      while (inner.pos < inner.len) {
        const t = inner.uint32()
        if (t >>> 3 === 1 && (t & 7) === 0) offset = toBigInt(inner.int64())
        else inner.skipType(t & 7)
      }
    } else reader.skipType(tag & 7)
  }
  return { writeStream, offset }
}

export const encodeFlushRequest = (request: FlushRequest): Uint8Array => {
  const writer = protobuf.Writer.create()
  writer.uint32((1 << 3) | 2).string(request.writeStream)
  writer.uint32((2 << 3) | 2).fork().uint32((1 << 3) | 0).int64(request.offset.toString()).ldelim()
  return writer.finish()
}

/** `FlushRowsResponse { int64 offset = 1 }` */
export const decodeFlushResponse = (bytes: Uint8Array): bigint => {
  const reader = protobuf.Reader.create(bytes)
  let offset = 0n
  while (reader.pos < reader.len) {
    const tag = reader.uint32()
    if (tag >>> 3 === 1 && (tag & 7) === 0) offset = toBigInt(reader.int64())
    else reader.skipType(tag & 7)
  }
  return offset
}

export const encodeFlushResponse = (offset: bigint): Uint8Array => {
  const writer = protobuf.Writer.create()
  if (offset !== 0n) writer.uint32((1 << 3) | 0).int64(offset.toString())
  return writer.finish()
}

const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "http2-settings"])

const forwardable = (headers: http2.IncomingHttpHeaders, dropScheme: boolean): http2.OutgoingHttpHeaders => {
  const out: http2.OutgoingHttpHeaders = {}
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined && !hopByHop.has(key) && !(dropScheme && key === ":scheme")) out[key] = value
  }
  return out
}

/** The trailers of a translated flush: bqemulator's "already flushed" OUT_OF_RANGE is BigQuery's ALREADY_EXISTS. */
const translateStatus = (
  headers: http2.OutgoingHttpHeaders,
  stats: BqemulatorAdapter["stats"]
): http2.OutgoingHttpHeaders => {
  const status = Number(headers["grpc-status"])
  const message = decodeURIComponent(String(headers["grpc-message"] ?? ""))
  if (status === grpcStatus.OUT_OF_RANGE && message.includes("already flushed")) {
    stats.reflushes++
    return { ...headers, "grpc-status": String(grpcStatus.ALREADY_EXISTS) }
  }
  return headers
}

export const start = (options: {
  readonly upstreamHost: string
  readonly upstreamPort: number
}): Effect.Effect<BqemulatorAdapter, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ adapter: BqemulatorAdapter; close: () => void }>((resume) => {
      const stats = { flushes: 0, reflushes: 0, forwarded: 0 }
      const sockets = new Set<net.Socket>()
      let upstream: http2.ClientHttp2Session | undefined
      const session = (): http2.ClientHttp2Session => {
        if (upstream === undefined || upstream.closed || upstream.destroyed) {
          const s = http2.connect(`http://${options.upstreamHost}:${options.upstreamPort}`)
          s.on("error", () => undefined)
          s.on("close", () => {
            if (upstream === s) upstream = undefined
          })
          upstream = s
        }
        return upstream
      }
      const server = http2.createServer()
      server.on("connection", (socket: net.Socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      })
      server.on("sessionError", () => undefined)
      server.on("stream", (stream, headers) => {
        stream.on("error", () => undefined)
        const up = session().request(forwardable(headers, true))
        up.on("error", () => stream.destroyed || stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR))
        stream.on("close", () => up.destroyed || up.close(http2.constants.NGHTTP2_CANCEL))
        if (headers[":path"] !== flushRowsPath) {
          // untouched, streaming both ways
          stats.forwarded++
          let trailers: http2.OutgoingHttpHeaders = {}
          up.on("response", (h, flags) => {
            if (stream.destroyed) return
            if ((flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0) {
              stream.respond(forwardable(h, false), { endStream: true })
              return
            }
            stream.respond(forwardable(h, false), { waitForTrailers: true })
            up.pipe(stream)
          })
          up.on("trailers", (t) => {
            trailers = forwardable(t, false)
          })
          stream.on("wantTrailers", () => stream.sendTrailers(trailers))
          stream.pipe(up)
          return
        }
        // FlushRows: a unary call, buffered whole both ways and translated
        stats.flushes++
        const request: Array<Buffer> = []
        stream.on("data", (chunk: Buffer) => request.push(chunk))
        stream.on("end", () => {
          const messages = frames(Buffer.concat(request)).map((bytes) => {
            const flush = decodeFlushRequest(bytes)
            return frame(encodeFlushRequest({ ...flush, offset: flush.offset + 1n }))
          })
          up.end(Buffer.concat(messages))
        })
        const response: Array<Buffer> = []
        let responseHeaders: http2.OutgoingHttpHeaders = {}
        up.on("response", (h, flags) => {
          responseHeaders = forwardable(h, false)
          if ((flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0 && !stream.destroyed) {
            // trailers-only: an error status
            stream.respond(translateStatus(responseHeaders, stats), { endStream: true })
          }
        })
        up.on("data", (chunk: Buffer) => response.push(chunk))
        up.on("trailers", (t) => {
          if (stream.destroyed) return
          const trailers = translateStatus(forwardable(t, false), stats)
          const body = frames(Buffer.concat(response)).map((bytes) =>
            frame(encodeFlushResponse(decodeFlushResponse(bytes) - 1n))
          )
          stream.respond(responseHeaders, { waitForTrailers: true })
          stream.on("wantTrailers", () => stream.sendTrailers(trailers))
          stream.end(Buffer.concat(body))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({
          adapter: { target: `127.0.0.1:${port}`, stats },
          close: () => {
            for (const socket of sockets) socket.destroy()
            upstream?.destroy()
            server.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ adapter }) => adapter))
