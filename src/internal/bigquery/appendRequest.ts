/**
 * `AppendRowsRequest` wire bytes, framed by hand around already-encoded rows (cf. Go's
 * `send_optimizer.go`): `write_stream` and `trace_id` only on a connection's first request,
 * `writer_schema` only on the first request and after a schema change, rows copied once.
 *
 * ```
 * AppendRowsRequest { 1: write_stream, 4: proto_rows ProtoData, 6: trace_id }
 * ProtoData { 1: writer_schema ProtoSchema { 1: proto_descriptor }, 2: rows ProtoRows { 1: repeated bytes } }
 * ```
 *
 * @internal
 */

/** The service's request limit (10 MB) and the largest row the sink sends (9 MiB, reference 2.3). @internal */
export const maxRequestBytes = 10_000_000

/** @internal */
export const maxRowBytes = 9 * 1024 * 1024

/** The trace id sent on each connection's first request. @internal */
export const traceId = "effect-gcp-sinks:0.1.0"

/** @internal */
export const varintLength = (n: number): number => {
  let length = 1
  while (n >= 0x80) {
    n = Math.floor(n / 128)
    length++
  }
  return length
}

const writeVarint = (buf: Uint8Array, pos: number, n: number): number => {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80
    n = Math.floor(n / 128)
  }
  buf[pos++] = n
  return pos
}

/** The bytes one row adds to `ProtoRows`: tag, length, payload. @internal */
export const rowFrameLength = (rowLength: number): number => 1 + varintLength(rowLength) + rowLength

const lengthDelimited = (payload: number): number => 1 + varintLength(payload) + payload

/** What a request carries besides the rows. @internal */
export interface Header {
  /** `projects/p/datasets/d/tables/t/streams/_default`, on a connection's first request only. */
  readonly writeStream?: string | undefined
  /** Encoded `DescriptorProto`, on the first request and after a schema change only. */
  readonly descriptor?: Uint8Array | undefined
  readonly traceId?: string | undefined
}

const encoder = new TextEncoder()

/**
 * The size of a request whose rows take `rowsBytes` inside `ProtoRows` (the sum of
 * {@link rowFrameLength}), so batches can be cut before they are framed.
 *
 * @internal
 */
export const requestLength = (header: Header, rowsBytes: number): number => {
  const stream = header.writeStream === undefined ? 0 : lengthDelimited(encoder.encode(header.writeStream).length)
  const trace = header.traceId === undefined ? 0 : lengthDelimited(encoder.encode(header.traceId).length)
  const schema = header.descriptor === undefined ? 0 : lengthDelimited(lengthDelimited(header.descriptor.length))
  const data = schema + lengthDelimited(rowsBytes)
  return stream + lengthDelimited(data) + trace
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
    pos = writeVarint(out, pos, row.length)
    out.set(row, pos)
    pos += row.length
  }
  return bodyIn(out, out.length)
}

/**
 * Bytes kept free before each body (from {@link encodeRows} or a batch buffer): a request without a
 * header is then the body with its two tags and lengths written in front, sent without copying the
 * rows again.
 *
 * @internal
 */
export const headroom = 16
const withHeadroom = new WeakSet<Uint8Array>()

/**
 * The `ProtoRows` body framed in `buffer[headroom, end)`, which {@link encodeBody} may frame in place.
 *
 * @internal
 */
export const bodyIn = (buffer: Uint8Array, end: number): Uint8Array => {
  const body = buffer.subarray(headroom, end)
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

/**
 * Frames one request around a `ProtoRows` body from {@link encodeRows}, in a single buffer.
 *
 * @internal
 */
export const encodeBody = (header: Header, body: Uint8Array): Uint8Array => {
  if (
    header.writeStream === undefined && header.traceId === undefined && header.descriptor === undefined &&
    withHeadroom.has(body)
  ) {
    const dataPayload = lengthDelimited(body.length)
    const prefix = 1 + varintLength(dataPayload) + 1 + varintLength(body.length)
    const out = new Uint8Array(body.buffer, body.byteOffset - prefix, prefix + body.length)
    let pos = 0
    out[pos++] = 0x22
    pos = writeVarint(out, pos, dataPayload)
    out[pos++] = 0x12
    writeVarint(out, pos, body.length)
    return out
  }
  const stream = header.writeStream === undefined ? undefined : encoder.encode(header.writeStream)
  const trace = header.traceId === undefined ? undefined : encoder.encode(header.traceId)
  const descriptor = header.descriptor
  const schemaPayload = descriptor === undefined ? 0 : lengthDelimited(descriptor.length)
  const dataPayload = (descriptor === undefined ? 0 : lengthDelimited(schemaPayload)) + lengthDelimited(body.length)
  const total = (stream === undefined ? 0 : lengthDelimited(stream.length)) + lengthDelimited(dataPayload) +
    (trace === undefined ? 0 : lengthDelimited(trace.length))
  const out = new Uint8Array(total)
  let pos = 0
  if (stream !== undefined) {
    out[pos++] = 0x0a
    pos = writeVarint(out, pos, stream.length)
    out.set(stream, pos)
    pos += stream.length
  }
  out[pos++] = 0x22
  pos = writeVarint(out, pos, dataPayload)
  if (descriptor !== undefined) {
    out[pos++] = 0x0a
    pos = writeVarint(out, pos, schemaPayload)
    out[pos++] = 0x0a
    pos = writeVarint(out, pos, descriptor.length)
    out.set(descriptor, pos)
    pos += descriptor.length
  }
  out[pos++] = 0x12
  pos = writeVarint(out, pos, body.length)
  out.set(body, pos)
  pos += body.length
  if (trace !== undefined) {
    out[pos++] = 0x32
    pos = writeVarint(out, pos, trace.length)
    out.set(trace, pos)
  }
  return out
}

/**
 * Frames one request around `rows` in a single buffer.
 *
 * @internal
 */
export const encode = (header: Header, rows: ReadonlyArray<Uint8Array>): Uint8Array =>
  encodeBody(header, encodeRows(rows))
