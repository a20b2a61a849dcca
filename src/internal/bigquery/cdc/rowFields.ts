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
import type { CdcOptions, ChangeType } from "../../../BigQuery/Cdc.ts"
import { descriptorOf, RowSerializationError, type RowSerializer } from "../../../BigQuery/RowSerializer.ts"
import type { DescriptorProto, TableSchema } from "../../../BigQuery/TableSchema.ts"
import { labels, protoTypes } from "../descriptor.ts"
import { tag } from "../wireWriter.ts"
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

/** A failure of the providers, or the bytes of the pseudocolumns of one element. */
type Trailer = RowSerializationError | readonly [Uint8Array, Uint8Array | undefined]

/** Runs the providers on `element`. @internal */
export const trailer = <A>(cdc: CdcOptions<A>, element: A): Trailer => {
  let changeType: ChangeType | unknown
  try {
    changeType = cdc.changeType(element)
  } catch (cause) {
    return threw(changeTypeColumn, cause)
  }
  const typeBytes = changeType === "UPSERT" ? upsertBytes : changeType === "DELETE" ? deleteBytes : undefined
  if (typeBytes === undefined) {
    return new RowSerializationError({
      path: changeTypeColumn,
      reason: `the provider must return UPSERT or DELETE, returned ${describe(changeType)}`
    })
  }
  const provider = cdc.sequenceNumber
  if (provider === undefined) return [typeBytes, undefined]
  let raw: unknown
  try {
    raw = provider(element)
  } catch (cause) {
    return threw(sequenceNumberColumn, cause)
  }
  const normalized = SequenceNumber.normalize(raw)
  if (normalized === undefined) {
    return new RowSerializationError({
      path: sequenceNumberColumn,
      reason: raw === undefined || raw === null
        ? `the provider returned no value (${describe(raw)})`
        : SequenceNumber.invalidMessage(raw)
    })
  }
  return [typeBytes, stringField(sequenceNumberNumber, normalized)]
}

const concat = (row: Uint8Array, a: Uint8Array, b: Uint8Array | undefined): Uint8Array => {
  const out = new Uint8Array(row.length + a.length + (b === undefined ? 0 : b.length))
  out.set(row, 0)
  out.set(a, row.length)
  if (b !== undefined) out.set(b, row.length + a.length)
  return out
}

/**
 * `serializer` writing the CDC pseudocolumns after each row.
 *
 * @internal
 */
export const augment = <A>(serializer: RowSerializer<A>, cdc: CdcOptions<A>): RowSerializer<A> => {
  const withSequence = cdc.sequenceNumber !== undefined
  const base = serializer.encodeInto
  return {
    tableSchema: serializer.tableSchema,
    descriptor: (destination) => extendDescriptor(descriptorOf(serializer, destination), withSequence),
    ...(serializer.fingerprint === undefined ? {} : { fingerprint: serializer.fingerprint }),
    serialize: (element, destination) => {
      const row = serializer.serialize(element, destination)
      if (!(row instanceof Uint8Array)) return row
      const t = trailer(cdc, element)
      return t instanceof RowSerializationError ? t : concat(row, t[0], t[1])
    },
    ...(base === undefined ? {} : {
      encodeInto: (buffer, element, destination) => {
        const result = base(buffer, element, destination)
        if (result !== undefined) return result
        const t = trailer(cdc, element)
        if (t instanceof RowSerializationError) return t
        const [a, b] = t
        buffer.ensure(a.length + (b === undefined ? 0 : b.length))
        buffer.buf.set(a, buffer.pos)
        buffer.pos += a.length
        if (b !== undefined) {
          buffer.buf.set(b, buffer.pos)
          buffer.pos += b.length
        }
        return undefined
      }
    })
  }
}
