/**
 * Hand-written codecs of the few Storage Write API messages the sink exchanges besides the
 * `AppendRowsRequest` (google/cloud/bigquery/storage/v1/storage.proto, table.proto,
 * google/rpc/status.proto): `GetWriteStreamRequest` out; `AppendRowsResponse`, `google.rpc.Status`
 * and `StorageError` in. They replace the static protobufjs module of the whole API, whose
 * ~9 MB of live heap raised the streaming process's peak RSS about three times that.
 *
 * **Details**
 *
 * - A decoded message is a plain object holding only the fields present on the wire (empty
 *   repeated fields left out), enums as numbers and int64 as (possibly rounded) numbers: what
 *   protobufjs `toObject(message, { longs: Number })` gives, so defaults are applied by the reader.
 * - Unknown fields are skipped by wire type; groups, a known field with another wire type, a
 *   truncated value and a varint over 10 bytes are malformed and throw a `RangeError`.
 *
 * @internal
 */
import { Buffer } from "node:buffer"
import { tag, WireWriter } from "./wireWriter.ts"

// ---------------------------------------------------------------------------------------------
// Encoding

/**
 * A `GetWriteStreamRequest`: `name` (1) and `view` (3, e.g. `BASIC` = 1).
 *
 * @internal
 */
export const encodeGetWriteStreamRequest = (name: string, view: number): Uint8Array => {
  const w = new WireWriter(16 + 3 * name.length)
  w.uint32(tag(1, 2))
  // Buffer.from, not WireWriter.string: a lone surrogate must still give a message
  w.bytes(Buffer.from(name, "utf8"))
  w.uint32(tag(3, 0))
  w.int32(view)
  return w.buf.subarray(0, w.pos)
}

// ---------------------------------------------------------------------------------------------
// Decoded shapes

/** `google.protobuf.Any`. @internal */
export interface AnyProto {
  readonly type_url?: string
  readonly value?: Uint8Array
}

/** `google.rpc.Status`. @internal */
export interface StatusProto {
  readonly code?: number
  readonly message?: string
  readonly details?: ReadonlyArray<AnyProto>
}

/** `google.cloud.bigquery.storage.v1.StorageError`. @internal */
export interface StorageErrorProto {
  readonly code?: number
  readonly entity?: string
  readonly errorMessage?: string
}

/** `google.cloud.bigquery.storage.v1.RowError`. @internal */
export interface RowErrorProto {
  readonly index?: number
  readonly code?: number
  readonly message?: string
}

/** `google.cloud.bigquery.storage.v1.TableFieldSchema` (`type` and `mode` as enum numbers). @internal */
export interface TableFieldSchemaProto {
  readonly name?: string
  readonly type?: number
  readonly mode?: number
  readonly fields?: ReadonlyArray<TableFieldSchemaProto>
  readonly description?: string
  readonly maxLength?: number
  readonly precision?: number
  readonly scale?: number
  readonly defaultValueExpression?: string
  readonly timestampPrecision?: { readonly value?: number }
  readonly rangeElementType?: { readonly type?: number }
}

/** `google.cloud.bigquery.storage.v1.TableSchema`. @internal */
export interface TableSchemaProto {
  readonly fields?: ReadonlyArray<TableFieldSchemaProto>
}

/** `google.cloud.bigquery.storage.v1.AppendRowsResponse`. @internal */
export interface AppendRowsResponseProto {
  readonly appendResult?: { readonly offset?: { readonly value?: number } }
  readonly error?: StatusProto
  readonly updatedSchema?: TableSchemaProto
  readonly rowErrors?: ReadonlyArray<RowErrorProto>
  readonly writeStream?: string
}

// ---------------------------------------------------------------------------------------------
// Reading

const two32 = 4_294_967_296
/** protobufjs's nesting limit, so that a hostile schema cannot exhaust the stack. */
const maxDepth = 100
const utf8 = new TextDecoder("utf-8", { fatal: false })

const malformed = (what: string): RangeError => new RangeError(`malformed protobuf message: ${what}`)

/** A cursor over a message; every read is bounded by the end of the (sub)message it is in. */
class Reader {
  readonly buf: Uint8Array
  pos = 0
  /** The halves of the last varint read. */
  lo = 0
  hi = 0
  constructor(buf: Uint8Array) {
    this.buf = buf
  }
  varint(end: number): void {
    let lo = 0
    let hi = 0
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) throw malformed("truncated varint")
      const b = this.buf[this.pos++] ?? 0
      const bits = b & 0x7f
      if (i < 4) {
        lo |= bits << (7 * i)
      } else if (i === 4) {
        lo |= bits << 28
        hi = bits >>> 4
      } else {
        // bits past the 64th shift out and are dropped, as protobufjs drops them
        hi |= bits << (7 * i - 32)
      }
      if (b < 0x80) {
        this.lo = lo >>> 0
        this.hi = hi >>> 0
        return
      }
    }
    throw malformed("varint longer than 10 bytes")
  }
  /** An `int32` or enum: the low 32 bits, signed. */
  int32(end: number): number {
    this.varint(end)
    return this.lo | 0
  }
  /** An `int64` as the nearest number (one rounding of the exact value, as `Long.toNumber`). */
  int64(end: number): number {
    this.varint(end)
    return (this.hi | 0) * two32 + this.lo
  }
  /** A field key: `[field number, wire type]`. */
  key(end: number): number {
    this.varint(end)
    if (this.hi !== 0 || this.lo < 8) throw malformed("invalid field key")
    return this.lo
  }
  /** The end offset of the length-delimited value whose length is next. */
  delimited(end: number): number {
    this.varint(end)
    const to = this.pos + this.hi * two32 + this.lo
    if (to > end) throw malformed("truncated length-delimited value")
    return to
  }
  bytes(end: number): Uint8Array {
    const to = this.delimited(end)
    const out = this.buf.subarray(this.pos, to)
    this.pos = to
    return out
  }
  string(end: number): string {
    const to = this.delimited(end)
    const out = utf8.decode(this.buf.subarray(this.pos, to))
    this.pos = to
    return out
  }
  /** Skips an unknown field's value. Groups (deprecated, never in proto3) are malformed. */
  skip(wire: number, end: number): void {
    switch (wire) {
      case 0:
        this.varint(end)
        return
      case 1:
        this.pos += 8
        break
      case 2:
        this.pos = this.delimited(end)
        return
      case 5:
        this.pos += 4
        break
      default:
        throw malformed(`unsupported wire type ${wire}`)
    }
    if (this.pos > end) throw malformed("truncated fixed-width value")
  }
}

/** Checks a known field's wire type: one on another wire type is malformed. */
const expect = (key: number, wire: 0 | 2): void => {
  if ((key & 7) !== wire) throw malformed(`field ${key >>> 3} has wire type ${key & 7}`)
}

/** Decodes the message from `r.pos` to `end`, calling `field` with each key; unknown keys are skipped. */
const fields = (r: Reader, end: number, field: (field: number, key: number) => boolean): void => {
  while (r.pos < end) {
    const key = r.key(end)
    if (!field(key >>> 3, key)) r.skip(key & 7, end)
  }
}

const sub = <A>(
  r: Reader,
  end: number,
  key: number,
  depth: number,
  decode: (r: Reader, end: number, depth: number) => A
): A => {
  expect(key, 2)
  if (depth > maxDepth) throw malformed("maximum nesting depth exceeded")
  const to = r.delimited(end)
  const out = decode(r, to, depth)
  r.pos = to
  return out
}

/** A repeated field's element added (the array is created with its first element: empty ones are left out). */
const append = <A>(items: Array<A> | undefined, item: A): Array<A> => {
  if (items === undefined) return [item]
  items.push(item)
  return items
}

const int64Value = (r: Reader, end: number): { value?: number } => {
  const m: { value?: number } = {}
  fields(r, end, (n, key) => {
    if (n !== 1) return false
    expect(key, 0)
    m.value = r.int64(end)
    return true
  })
  return m
}

const anyMessage = (r: Reader, end: number): AnyProto => {
  const m: { type_url?: string; value?: Uint8Array } = {}
  fields(r, end, (n, key) => {
    switch (n) {
      case 1:
        expect(key, 2)
        m.type_url = r.string(end)
        return true
      case 2:
        expect(key, 2)
        m.value = r.bytes(end)
        return true
      default:
        return false
    }
  })
  return m
}

const status = (r: Reader, end: number, depth: number): StatusProto => {
  const m: { code?: number; message?: string; details?: Array<AnyProto> } = {}
  fields(r, end, (n, key) => {
    switch (n) {
      case 1:
        expect(key, 0)
        m.code = r.int32(end)
        return true
      case 2:
        expect(key, 2)
        m.message = r.string(end)
        return true
      case 3:
        m.details = append(m.details, sub(r, end, key, depth + 1, anyMessage))
        return true
      default:
        return false
    }
  })
  return m
}

const storageError = (r: Reader, end: number): StorageErrorProto => {
  const m: { code?: number; entity?: string; errorMessage?: string } = {}
  fields(r, end, (n, key) => {
    switch (n) {
      case 1:
        expect(key, 0)
        m.code = r.int32(end)
        return true
      case 2:
        expect(key, 2)
        m.entity = r.string(end)
        return true
      case 3:
        expect(key, 2)
        m.errorMessage = r.string(end)
        return true
      default:
        return false
    }
  })
  return m
}

const rowError = (r: Reader, end: number): RowErrorProto => {
  const m: { index?: number; code?: number; message?: string } = {}
  fields(r, end, (n, key) => {
    switch (n) {
      case 1:
        expect(key, 0)
        m.index = r.int64(end)
        return true
      case 2:
        expect(key, 0)
        m.code = r.int32(end)
        return true
      case 3:
        expect(key, 2)
        m.message = r.string(end)
        return true
      default:
        return false
    }
  })
  return m
}

const fieldElementType = (r: Reader, end: number): { type?: number } => {
  const m: { type?: number } = {}
  fields(r, end, (n, key) => {
    if (n !== 1) return false
    expect(key, 0)
    m.type = r.int32(end)
    return true
  })
  return m
}

interface MutableField {
  name?: string
  type?: number
  mode?: number
  fields?: Array<TableFieldSchemaProto>
  description?: string
  maxLength?: number
  precision?: number
  scale?: number
  defaultValueExpression?: string
  timestampPrecision?: { value?: number }
  rangeElementType?: { type?: number }
}

const tableField = (r: Reader, end: number, depth: number): TableFieldSchemaProto => {
  const m: MutableField = {}
  fields(r, end, (n, key) => {
    switch (n) {
      case 1:
        expect(key, 2)
        m.name = r.string(end)
        return true
      case 2:
        expect(key, 0)
        m.type = r.int32(end)
        return true
      case 3:
        expect(key, 0)
        m.mode = r.int32(end)
        return true
      case 4:
        m.fields = append(m.fields, sub(r, end, key, depth + 1, tableField))
        return true
      case 6:
        expect(key, 2)
        m.description = r.string(end)
        return true
      case 7:
        expect(key, 0)
        m.maxLength = r.int64(end)
        return true
      case 8:
        expect(key, 0)
        m.precision = r.int64(end)
        return true
      case 9:
        expect(key, 0)
        m.scale = r.int64(end)
        return true
      case 10:
        expect(key, 2)
        m.defaultValueExpression = r.string(end)
        return true
      case 11:
        m.rangeElementType = sub(r, end, key, depth + 1, fieldElementType)
        return true
      case 27:
        m.timestampPrecision = sub(r, end, key, depth + 1, int64Value)
        return true
      default:
        return false
    }
  })
  return m
}

const tableSchema = (r: Reader, end: number, depth: number): TableSchemaProto => {
  const m: { fields?: Array<TableFieldSchemaProto> } = {}
  fields(r, end, (n, key) => {
    if (n !== 1) return false
    m.fields = append(m.fields, sub(r, end, key, depth + 1, tableField))
    return true
  })
  return m
}

const appendResult = (r: Reader, end: number, depth: number): { offset?: { value?: number } } => {
  const m: { offset?: { value?: number } } = {}
  fields(r, end, (n, key) => {
    if (n !== 1) return false
    m.offset = sub(r, end, key, depth + 1, int64Value)
    return true
  })
  return m
}

/**
 * Decodes an `AppendRowsResponse`. Throws a `RangeError` on bytes that are not a well-formed
 * message.
 *
 * @internal
 */
export const decodeAppendRowsResponse = (bytes: Uint8Array): AppendRowsResponseProto => {
  const r = new Reader(bytes)
  const end = bytes.length
  const m: {
    appendResult?: { offset?: { value?: number } }
    error?: StatusProto
    updatedSchema?: TableSchemaProto
    rowErrors?: Array<RowErrorProto>
    writeStream?: string
  } = {}
  fields(r, end, (n, key) => {
    switch (n) {
      case 1:
        m.appendResult = sub(r, end, key, 1, appendResult)
        return true
      case 2:
        m.error = sub(r, end, key, 1, status)
        return true
      case 3:
        m.updatedSchema = sub(r, end, key, 1, tableSchema)
        return true
      case 4:
        m.rowErrors = append(m.rowErrors, sub(r, end, key, 1, rowError))
        return true
      case 5:
        expect(key, 2)
        m.writeStream = r.string(end)
        return true
      default:
        return false
    }
  })
  return m
}

/** Decodes a `google.rpc.Status` (the `grpc-status-details-bin` trailer). Throws on malformed bytes. @internal */
export const decodeStatus = (bytes: Uint8Array): StatusProto => status(new Reader(bytes), bytes.length, 0)

/** Decodes a `StorageError` (a `Status` detail or its own trailer). Throws on malformed bytes. @internal */
export const decodeStorageError = (bytes: Uint8Array): StorageErrorProto =>
  storageError(new Reader(bytes), bytes.length)
