/**
 * `AppendRowsRequest` wire bytes, framed by hand around already-encoded rows (cf. Go's
 * `send_optimizer.go`): `write_stream` on every request, `trace_id` only on a connection's first,
 * `writer_schema` only on the first request and after a schema change, rows copied once.
 *
 * `write_stream` is required only on the first request, but the API accepts it on every one, and
 * bqemulator 1.4.0 needs it there (it ends the stream with `NOT_FOUND` otherwise). It costs ~80
 * bytes per request, written into the headroom before the rows, so the rows are still not copied.
 *
 * ```
 * AppendRowsRequest { 1: write_stream, 2: offset Int64Value { 1: int64 }, 4: proto_rows ProtoData, 6: trace_id }
 * ProtoData { 1: writer_schema ProtoSchema { 1: proto_descriptor }, 2: rows ProtoRows { 1: repeated bytes } }
 * ```
 *
 * @internal
 */
import { prefixLength, writePrefix } from "../../wire/http2/messageFrame.ts"
import { uint32Size, uintSize, writeUint } from "../../wire/varint.ts"

/** The largest row the sink sends (9 MiB, reference 2.3; the service's request limit is 10 MB). @internal */
export const maxRowBytes = 9 * 1024 * 1024

/** The trace id sent on each connection's first request. @internal */
export const traceId = "effect-gcp-sinks:0.1.0"

/** The bytes of a varint length (at most 5: every length here is below 2^32). @internal */
export const varintLength = uint32Size

/** The bytes one row adds to `ProtoRows`: tag, length, payload. @internal */
export const rowFrameLength = (rowLength: number): number => 1 + varintLength(rowLength) + rowLength

const lengthDelimited = (payload: number): number => 1 + varintLength(payload) + payload

/**
 * What a request carries besides the rows. Text fields may be given as their UTF-8 bytes
 * ({@link utf8}), so a connection encodes its stream name once, not once per request.
 *
 * @internal
 */
export interface Header {
  /** `projects/p/datasets/d/tables/t/streams/_default`. */
  readonly writeStream?: string | Uint8Array | undefined
  /** Encoded `DescriptorProto`, on the first request and after a schema change only. */
  readonly descriptor?: Uint8Array | undefined
  readonly traceId?: string | Uint8Array | undefined
  /** The offset the rows go at (buffered streams); absent on `_default`. */
  readonly offset?: number | undefined
}

const encoder = new TextEncoder()

/** The UTF-8 bytes of a header field. @internal */
export const utf8 = (text: string | Uint8Array): Uint8Array => typeof text === "string" ? encoder.encode(text) : text

const utf8Length = (text: string | Uint8Array | undefined): number | undefined =>
  text === undefined ? undefined : typeof text === "string" ? encoder.encode(text).length : text.length

/**
 * The size of a request whose rows take `rowsBytes` inside `ProtoRows` (the sum of
 * {@link rowFrameLength}), so batches can be cut before they are framed.
 *
 * @internal
 */
export const requestLength = (header: Header, rowsBytes: number): number => {
  const streamLength = utf8Length(header.writeStream)
  const traceLength = utf8Length(header.traceId)
  const stream = streamLength === undefined ? 0 : lengthDelimited(streamLength)
  const trace = traceLength === undefined ? 0 : lengthDelimited(traceLength)
  const schema = header.descriptor === undefined ? 0 : lengthDelimited(lengthDelimited(header.descriptor.length))
  const data = schema + lengthDelimited(rowsBytes)
  return stream + offsetLength(header.offset) + lengthDelimited(data) + trace
}

/** The bytes of `Int64Value { 1: offset }` (tag and varint). */
const int64ValueLength = (offset: number): number => 1 + uintSize(offset)

/** The bytes the `offset` field takes in a request (none when absent). */
const offsetLength = (offset: number | undefined): number =>
  offset === undefined ? 0 : lengthDelimited(int64ValueLength(offset))

/** Writes the `offset` field (2: `Int64Value { 1: offset }`) at `pos`. */
const writeOffset = (out: Uint8Array, pos: number, offset: number): number => {
  out[pos++] = 0x12
  pos = writeUint(out, pos, int64ValueLength(offset))
  out[pos++] = 0x08
  return writeUint(out, pos, offset)
}

/**
 * The body of `ProtoRows` (each row as field 1) in one buffer: what an in-flight append keeps
 * instead of its rows, so a batch costs its bytes once, not an object per row.
 *
 * @internal
 */
export const encodeRows = (rows: ReadonlyArray<Uint8Array>): Uint8Array => {
  let length = 0
  for (let i = 0; i < rows.length; i++) length += rowFrameLength(rows[i]!.length)
  const out = new Uint8Array(headroom + length)
  let pos = headroom
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    out[pos++] = 0x0a
    pos = writeUint(out, pos, row.length)
    out.set(row, pos)
    pos += row.length
  }
  return bodyIn(out, out.length)
}

/**
 * Bytes kept free before each body (from {@link encodeRows} or a batch buffer): a request with no
 * header but `write_stream` is then the body with the name and its two tags and lengths written in
 * front, sent without copying the rows again. 512 holds the rows' prefix (at most 12 bytes) and a
 * name of up to ~490 bytes; real `_default` names are mostly well under 200, and a longer one only
 * costs a copy of the body.
 *
 * @internal
 */
export const headroom = 512
const withHeadroom = new WeakSet<Uint8Array>()

/**
 * The `ProtoRows` body framed in `buffer[start, end)` (`start` at least the headroom), which
 * {@link encodeBody} may frame in place.
 *
 * @internal
 */
export const bodyIn = (buffer: Uint8Array, end: number, start = headroom): Uint8Array => {
  const body = buffer.subarray(start, end)
  withHeadroom.add(body)
  return body
}

/** The rows of a `ProtoRows` body, as views into it (no copy). @internal */
export const rowsOf = (body: Uint8Array): Array<Uint8Array> => {
  const rows: Array<Uint8Array> = []
  let pos = 0
  while (pos < body.length) {
    pos++ // tag 0x0a
    let length = 0
    let shift = 1
    for (;;) {
      const b = body[pos++]!
      length += (b & 0x7f) * shift
      if (b < 0x80) break
      shift *= 128
    }
    rows.push(body.subarray(pos, pos + length))
    pos += length
  }
  return rows
}

/** Writes a length-delimited field (`tag`, length, bytes) at `pos`; returns the position after it. */
const writeField = (out: Uint8Array, pos: number, tag: number, bytes: Uint8Array): number => {
  out[pos++] = tag
  pos = writeUint(out, pos, bytes.length)
  out.set(bytes, pos)
  return pos + bytes.length
}

/**
 * Frames `write_stream` and `offset` (when given) and the `proto_rows` prefix into the headroom
 * before `body`, `reserve` bytes further left free before them, or returns `undefined` when they do
 * not fit (the caller copies instead). The result starts at the reserved bytes.
 */
const frameInPlace = (
  stream: Uint8Array | undefined,
  offset: number | undefined,
  body: Uint8Array,
  reserve: number
): Uint8Array | undefined => {
  const dataPayload = lengthDelimited(body.length)
  const prefix = (stream === undefined ? 0 : lengthDelimited(stream.length)) + offsetLength(offset) + 1 +
    varintLength(dataPayload) + 1 + varintLength(body.length)
  if (reserve + prefix > headroom) return undefined
  const out = new Uint8Array(body.buffer, body.byteOffset - prefix - reserve, reserve + prefix + body.length)
  let pos = stream === undefined ? reserve : writeField(out, reserve, 0x0a, stream)
  if (offset !== undefined) pos = writeOffset(out, pos, offset)
  out[pos++] = 0x22
  pos = writeUint(out, pos, dataPayload)
  out[pos++] = 0x12
  writeUint(out, pos, body.length)
  return out
}

/** The request in a new buffer, after `reserve` free bytes. */
const encodeCopy = (header: Header, body: Uint8Array, reserve: number): Uint8Array => {
  const stream = header.writeStream === undefined ? undefined : utf8(header.writeStream)
  const trace = header.traceId === undefined ? undefined : utf8(header.traceId)
  const descriptor = header.descriptor
  const schemaPayload = descriptor === undefined ? 0 : lengthDelimited(descriptor.length)
  const dataPayload = (descriptor === undefined ? 0 : lengthDelimited(schemaPayload)) + lengthDelimited(body.length)
  const total = (stream === undefined ? 0 : lengthDelimited(stream.length)) + offsetLength(header.offset) +
    lengthDelimited(dataPayload) + (trace === undefined ? 0 : lengthDelimited(trace.length))
  const out = new Uint8Array(reserve + total)
  let pos = stream === undefined ? reserve : writeField(out, reserve, 0x0a, stream)
  if (header.offset !== undefined) pos = writeOffset(out, pos, header.offset)
  out[pos++] = 0x22
  pos = writeUint(out, pos, dataPayload)
  if (descriptor !== undefined) {
    out[pos++] = 0x0a
    pos = writeUint(out, pos, schemaPayload)
    pos = writeField(out, pos, 0x0a, descriptor)
  }
  pos = writeField(out, pos, 0x12, body)
  if (trace !== undefined) writeField(out, pos, 0x32, trace)
  return out
}

const encodeReserving = (header: Header, body: Uint8Array, reserve: number): Uint8Array => {
  if (header.traceId === undefined && header.descriptor === undefined && withHeadroom.has(body)) {
    const stream = header.writeStream === undefined ? undefined : utf8(header.writeStream)
    const framed = frameInPlace(stream, header.offset, body, reserve)
    if (framed !== undefined) return framed
  }
  return encodeCopy(header, body, reserve)
}

/**
 * Frames one request around a `ProtoRows` body from {@link encodeRows} or a batch buffer, in a
 * single buffer: in place (a view into the body's buffer) when the header is at most `write_stream`
 * and fits the {@link headroom}, else in a copy.
 *
 * **Details**
 *
 * The in-place frame overwrites the headroom, so a body is framed for one request at a time.
 *
 * @internal
 */
export const encodeBody = (header: Header, body: Uint8Array): Uint8Array => encodeReserving(header, body, 0)

/**
 * {@link encodeBody} with gRPC's 5-byte message prefix in front (`wire/http2/messageFrame.ts`): the
 * bytes our HTTP/2 transport sends, still one buffer, in place in the headroom when the header fits.
 *
 * @internal
 */
export const encodeFramed = (header: Header, body: Uint8Array): Uint8Array => {
  const framed = encodeReserving(header, body, prefixLength)
  writePrefix(framed, 0, framed.length - prefixLength)
  return framed
}

/**
 * Frames one request around `rows` in a single buffer.
 *
 * @internal
 */
export const encode = (header: Header, rows: ReadonlyArray<Uint8Array>): Uint8Array =>
  encodeBody(header, encodeRows(rows))
