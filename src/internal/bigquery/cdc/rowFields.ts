/**
 * The CDC pseudocolumns on the wire (reference 2.12): a serializer wrapper whose descriptor is the
 * base one plus `_CHANGE_TYPE` (and `_CHANGE_SEQUENCE_NUMBER` when a sequence provider is set), and
 * whose rows are the base row followed by those fields. The table schema is the base one: the
 * pseudocolumns never reach table creation or reconciliation.
 *
 * **Details**
 *
 * - The pseudocolumns take fixed field numbers past BigQuery's 10,000-column limit (16383 and 16382,
 *   a 3-byte key), so no per-destination numbering is looked up per row.
 * - The providers run on the original element after the base serializer, only for a row it wrote
 *   (a skip or a failure invokes neither). A throw, no value, a change type other than `UPSERT` /
 *   `DELETE` or an invalid sequence number is a `RowSerializationError` naming the pseudocolumn,
 *   so the sink routes the record (with `encodeInto`, the row's bytes are discarded).
 * - Only a sink with the `cdc` option runs through this wrapper: other users' rows pay nothing.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import type { CdcOptions } from "../../../BigQuery/Cdc.ts"
import {
  descriptorOf,
  type RowBuffer,
  RowSerializationError,
  type RowSerializer
} from "../../../BigQuery/RowSerializer.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import type { DescriptorProto, TableSchema } from "../../../BigQuery/TableSchema.ts"
import { labels, protoTypes } from "../encoding/descriptor.ts"
import { encodeIntoOf, methodsOf } from "../encoding/serializers.ts"
import { tag, WireWriter } from "../encoding/wireWriter.ts"
import * as SequenceNumber from "./sequenceNumber.ts"

/** The pseudocolumns' names. @internal */
export const changeTypeColumn = "_CHANGE_TYPE"
/** @internal */
export const sequenceNumberColumn = "_CHANGE_SEQUENCE_NUMBER"

/** Their field numbers in the writer schema. @internal */
export const changeTypeNumber = 16383
/** @internal */
export const sequenceNumberNumber = 16382

/** The column of `schema` whose name is a pseudocolumn's (ignoring case), if any. @internal */
export const collision = (schema: TableSchema): string | undefined =>
  schema.fields.find((f) => {
    const upper = f.name.toUpperCase()
    return upper === changeTypeColumn || upper === sequenceNumberColumn
  })?.name

/** The collision's message. @internal */
export const collisionMessage = (column: string): string =>
  `the column '${column}' collides with a CDC pseudocolumn (${changeTypeColumn}, ${sequenceNumberColumn}; ` +
  "names ignore case)"

/** The base descriptor with the pseudocolumns; throws when the base uses their field numbers or names. @internal */
export const extendDescriptor = (base: DescriptorProto, withSequence: boolean): DescriptorProto => {
  for (const f of base.field) {
    if (f.number === changeTypeNumber || f.number === sequenceNumberNumber) {
      throw new RangeError(`the writer schema's field number ${f.number} is reserved for a CDC pseudocolumn`)
    }
    const upper = f.name.toUpperCase()
    if (upper === changeTypeColumn || upper === sequenceNumberColumn) throw new RangeError(collisionMessage(f.name))
  }
  const string = { label: labels.optional, type: protoTypes.string }
  return {
    ...base,
    field: [
      ...base.field,
      { name: changeTypeColumn, number: changeTypeNumber, ...string },
      ...(withSequence ? [{ name: sequenceNumberColumn, number: sequenceNumberNumber, ...string }] : [])
    ]
  }
}

const stringField = (number: number, value: string): Uint8Array => {
  // ASCII values of at most 67 characters: a varint key and a 1-byte length
  const key: Array<number> = []
  for (let k = tag(number, 2);; k >>>= 7) {
    if (k < 0x80) {
      key.push(k)
      break
    }
    key.push((k & 0x7f) | 0x80)
  }
  const out = new Uint8Array(key.length + 1 + value.length)
  out.set(key, 0)
  out[key.length] = value.length
  for (let i = 0; i < value.length; i++) out[key.length + 1 + i] = value.charCodeAt(i)
  return out
}

const upsertBytes = stringField(changeTypeNumber, "UPSERT")
const deleteBytes = stringField(changeTypeNumber, "DELETE")

const describe = (value: unknown): string =>
  Predicate.isString(value) ? `'${value}'` : value === null ? "null" : typeof value

const threw = (column: string, cause: unknown): RowSerializationError =>
  new RowSerializationError({
    path: column,
    reason: `the provider threw: ${Predicate.hasProperty(cause, "message") ? String(cause.message) : String(cause)}`,
    cause
  })

const sequenceKey = stringField(sequenceNumberNumber, "").subarray(0, -1)

/**
 * Writes `_CHANGE_SEQUENCE_NUMBER` = `value` upper-cased at `out.pos` when it is 1 to 4 sections of 1 to
 * 16 hex digits (the check of `SequenceNumber.normalize`, in the same pass); `false` otherwise, with
 * `out.pos` unmoved.
 */
const writeSequence = (out: RowBuffer, value: string): boolean => {
  const n = value.length
  if (n === 0 || n > 67) return false
  out.ensure(sequenceKey.length + 1 + n)
  const buf = out.buf
  let p = out.pos
  buf.set(sequenceKey, p)
  p += sequenceKey.length
  buf[p++] = n
  let sections = 1
  let digits = 0
  for (let i = 0; i < n; i++) {
    let c = value.charCodeAt(i)
    if (c === 47) {
      if (digits === 0 || ++sections > 4) return false
      digits = 0
    } else {
      if (c >= 97 && c <= 102) c -= 32
      else if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 70))) return false
      if (++digits > 16) return false
    }
    buf[p++] = c
  }
  if (digits === 0) return false
  out.pos = p
  return true
}

const put = (out: RowBuffer, bytes: Uint8Array): void => {
  out.ensure(bytes.length)
  out.buf.set(bytes, out.pos)
  out.pos += bytes.length
}

/**
 * Runs the providers on `element` and writes the pseudocolumns at `out.pos`, or gives the failure
 * (what was written after the row is then discarded by the caller).
 *
 * @internal
 */
export const writeTrailer = <A>(cdc: CdcOptions<A>, element: A, out: RowBuffer): RowSerializationError | undefined => {
  let changeType: unknown
  try {
    changeType = cdc.changeType(element)
  } catch (cause) {
    return threw(changeTypeColumn, cause)
  }
  if (changeType === "UPSERT") put(out, upsertBytes)
  else if (changeType === "DELETE") put(out, deleteBytes)
  else {
    return new RowSerializationError({
      path: changeTypeColumn,
      reason: `the provider must return UPSERT or DELETE, returned ${describe(changeType)}`
    })
  }
  const provider = cdc.sequenceNumber
  if (provider === undefined) return undefined
  let raw: unknown
  try {
    raw = provider(element)
  } catch (cause) {
    return threw(sequenceNumberColumn, cause)
  }
  if (Predicate.isString(raw) && writeSequence(out, raw)) return undefined
  return new RowSerializationError({
    path: sequenceNumberColumn,
    reason: raw === undefined || raw === null
      ? `the provider returned no value (${describe(raw)})`
      : SequenceNumber.invalidMessage(raw)
  })
}

/**
 * `serializer` writing the CDC pseudocolumns after each row.
 *
 * @internal
 */
export const augment = <A>(serializer: RowSerializer<A>, cdc: CdcOptions<A>): RowSerializer<A> => {
  const withSequence = cdc.sequenceNumber !== undefined
  const base = encodeIntoOf(serializer)
  const { fingerprint, tableSchema } = methodsOf(serializer)
  const scratch = new WireWriter(256)
  return {
    tableSchema,
    descriptor: (destination) => extendDescriptor(descriptorOf(serializer, destination), withSequence),
    ...(fingerprint === undefined ? {} : { fingerprint }),
    serialize: (element, destination) => {
      const row = serializer.serialize(element, destination)
      if (!(row instanceof Uint8Array)) return row
      scratch.pos = 0
      put(scratch, row)
      return writeTrailer(cdc, element, scratch) ?? scratch.take(0)
    },
    ...(base === undefined ? {} : {
      encodeInto: (buffer: RowBuffer, element: A, destination: TableDestination) => {
        // a skip (null) or a failure of the row: the providers are not called
        const result = base(buffer, element, destination)
        return result === undefined ? writeTrailer(cdc, element, buffer) : result
      }
    })
  }
}
