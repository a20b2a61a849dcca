/**
 * Hand-written codecs of the few Storage Write API messages the sink exchanges besides the
 * `AppendRowsRequest` (google/cloud/bigquery/storage/v1/storage.proto, table.proto,
 * google/rpc/status.proto): `GetWriteStreamRequest` out; `AppendRowsResponse`, `google.rpc.Status`
 * and `StorageError` in; for buffered streams `CreateWriteStreamRequest` and `FlushRowsRequest` out,
 * `WriteStream` (its name) and `FlushRowsResponse` in. They replace the static protobufjs module of the whole API, whose
 * ~9 MB of live heap raised the streaming process's peak RSS about three times that.
 *
 * **Details**
 *
 * - A decoded message is a plain object holding only the fields present on the wire (empty
 *   repeated fields left out), enums as numbers and int64 as (possibly rounded) numbers: what
 *   protobufjs `toObject(message, { longs: Number })` gives, so defaults are applied by the reader.
 * - Each message is a field table read by `protoReader.ts`: unknown fields are skipped by wire
 *   type; groups, a known field with another wire type, a truncated value and a varint over 10
 *   bytes are malformed and throw a `RangeError`.
 *
 * @internal
 */
import { Buffer } from "node:buffer"
import * as proto from "../../wire/protoReader.ts"
import { tag, WireWriter } from "../encoding/wireWriter.ts"

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

/** `WriteStream.Type.BUFFERED`. @internal */
export const bufferedType = 3

/**
 * A `CreateWriteStreamRequest`: `parent` (1, the table) and `write_stream` (2) with only its `type`
 * (2) set.
 *
 * @internal
 */
export const encodeCreateWriteStreamRequest = (parent: string, type: number): Uint8Array => {
  const w = new WireWriter(16 + 3 * parent.length)
  w.uint32(tag(1, 2))
  w.bytes(Buffer.from(parent, "utf8"))
  w.uint32(tag(2, 2))
  w.uint32(2) // the WriteStream: field 2 (varint) and its one-byte value
  w.uint32(tag(2, 0))
  w.int32(type)
  return w.buf.subarray(0, w.pos)
}

/** The bytes of an `Int64Value { value }` for a non-negative safe integer. */
const int64ValueBytes = (value: number): Uint8Array => {
  const w = new WireWriter(12)
  w.uint32(tag(1, 0))
  w.varint64(value >>> 0, Math.floor(value / 0x100000000))
  return w.buf.subarray(0, w.pos)
}

/**
 * A `FlushRowsRequest`: `write_stream` (1) and `offset` (2, an `Int64Value`).
 *
 * @internal
 */
export const encodeFlushRowsRequest = (writeStream: string, offset: number): Uint8Array => {
  const w = new WireWriter(32 + 3 * writeStream.length)
  w.uint32(tag(1, 2))
  w.bytes(Buffer.from(writeStream, "utf8"))
  w.uint32(tag(2, 2))
  w.bytes(int64ValueBytes(offset))
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
// Reading: one field table per message, checked against its shape above by the compiler

const int64Value = proto.messageType<{ readonly value?: number }>({ value: [1, proto.int64] })

const anyMessage = proto.messageType<AnyProto>({ type_url: [1, proto.string], value: [2, proto.bytes] })

const status = proto.messageType<StatusProto>({
  code: [1, proto.int32],
  message: [2, proto.string],
  details: [3, proto.repeated(() => anyMessage)]
})

const storageError = proto.messageType<StorageErrorProto>({
  code: [1, proto.int32],
  entity: [2, proto.string],
  errorMessage: [3, proto.string]
})

const rowError = proto.messageType<RowErrorProto>({
  index: [1, proto.int64],
  code: [2, proto.int32],
  message: [3, proto.string]
})

const fieldElementType = proto.messageType<{ readonly type?: number }>({ type: [1, proto.int32] })

const tableField: proto.MessageType<TableFieldSchemaProto> = proto.messageType<TableFieldSchemaProto>({
  name: [1, proto.string],
  type: [2, proto.int32],
  mode: [3, proto.int32],
  fields: [4, proto.repeated(() => tableField)],
  description: [6, proto.string],
  maxLength: [7, proto.int64],
  precision: [8, proto.int64],
  scale: [9, proto.int64],
  defaultValueExpression: [10, proto.string],
  rangeElementType: [11, proto.message(() => fieldElementType)],
  timestampPrecision: [27, proto.message(() => int64Value)]
})

const tableSchema = proto.messageType<TableSchemaProto>({ fields: [1, proto.repeated(() => tableField)] })

const appendResult = proto.messageType<{ readonly offset?: { readonly value?: number } }>({
  offset: [1, proto.message(() => int64Value)]
})

const appendRowsResponse = proto.messageType<AppendRowsResponseProto>({
  appendResult: [1, proto.message(() => appendResult)],
  error: [2, proto.message(() => status)],
  updatedSchema: [3, proto.message(() => tableSchema)],
  rowErrors: [4, proto.repeated(() => rowError)],
  writeStream: [5, proto.string]
})

const writeStream = proto.messageType<{ readonly name?: string }>({ name: [1, proto.string] })

const flushRowsResponse = proto.messageType<{ readonly offset?: number }>({ offset: [1, proto.int64] })

/** Decodes a `WriteStream` (the answer of `CreateWriteStream`) down to its `name`. Throws on malformed bytes. @internal */
export const decodeWriteStream = (bytes: Uint8Array): { readonly name?: string } =>
  proto.decode(bytes, writeStream, "WriteStream")

/** Decodes a `FlushRowsResponse` (`offset`). Throws on malformed bytes. @internal */
export const decodeFlushRowsResponse = (bytes: Uint8Array): { readonly offset?: number } =>
  proto.decode(bytes, flushRowsResponse, "FlushRowsResponse")

/**
 * Decodes an `AppendRowsResponse`. Throws a `RangeError` on bytes that are not a well-formed
 * message.
 *
 * @internal
 */
export const decodeAppendRowsResponse = (bytes: Uint8Array): AppendRowsResponseProto =>
  proto.decode(bytes, appendRowsResponse, "AppendRowsResponse")

/** Decodes a `google.rpc.Status` (the `grpc-status-details-bin` trailer). Throws on malformed bytes. @internal */
export const decodeStatus = (bytes: Uint8Array): StatusProto => proto.decode(bytes, status, "google.rpc.Status")

/** Decodes a `StorageError` (a `Status` detail or its own trailer). Throws on malformed bytes. @internal */
export const decodeStorageError = (bytes: Uint8Array): StorageErrorProto =>
  proto.decode(bytes, storageError, "StorageError")
