/**
 * Rows as Avro for file loads (reference 2.8): the Avro schema of a destination's `TableSchema`, and
 * the conversion of a serialized row (the serializer's protobuf bytes, read through its descriptor)
 * into the Avro record of that schema.
 *
 * Type mapping (BigQuery's Avro logical types, read with `useAvroLogicalTypes`): STRING, JSON,
 * GEOGRAPHY → `string`; BYTES → `bytes`; INT64 → `long`; FLOAT64 → `double`; BOOL → `boolean`;
 * TIMESTAMP → `timestamp-micros`; DATE → `date`; TIME → `time-micros`; DATETIME → `string` with
 * logical type `datetime`; NUMERIC / BIGNUMERIC → `decimal` bytes (precision and scale kept, 38/9 and
 * 77/38 by default); RECORD → a nested record; REPEATED → `array`; NULLABLE → `["null", T]`. Every
 * `long` is an exact 64-bit value (`bigint`), so snowflake ids and BigQuery's whole TIMESTAMP range
 * stage exactly. RANGE and flexible column names cannot be staged (the reference refuses them too;
 * INTERVAL is no column type here).
 *
 * @internal
 */
import avro from "avsc"
import type { DescriptorProto, Field, TableSchema } from "../../../BigQuery/TableSchema.ts"
import { ProtoReader } from "../../wire/protoReader.ts"
import { parseDate } from "../encoding/civilTime.ts"
import { limitsOf } from "../encoding/decimal.ts"
import { protoTypes } from "../encoding/descriptor.ts"

/** An Avro schema as JSON. @internal */
export type AvroSchema = string | { readonly [key: string]: unknown } | ReadonlyArray<AvroSchema>

/** A column that cannot be staged, or a row that cannot be converted. @internal */
export class AvroError {
  readonly _tag = "AvroError"
  readonly path: string
  readonly reason: string
  constructor(path: string, reason: string) {
    this.path = path
    this.reason = reason
  }
}

const decimalShape = (field: Field): { readonly precision: number; readonly scale: number } => {
  const typeName = field.type === "BIGNUMERIC" ? "BIGNUMERIC" : "NUMERIC"
  const limits = limitsOf(typeName, field.precision, field.scale)
  return { precision: Math.ceil(limits.integerDigits + limits.scale), scale: limits.scale }
}

const scalarSchema = (field: Field, path: string): AvroSchema | AvroError => {
  switch (field.type) {
    case "STRING":
    case "JSON":
    case "GEOGRAPHY":
      return "string"
    case "BYTES":
      return "bytes"
    case "INT64":
      return "long"
    case "FLOAT64":
      return "double"
    case "BOOL":
      return "boolean"
    case "TIMESTAMP":
      return { type: "long", logicalType: "timestamp-micros" }
    case "DATE":
      return { type: "int", logicalType: "date" }
    case "TIME":
      return { type: "long", logicalType: "time-micros" }
    case "DATETIME":
      return { type: "string", logicalType: "datetime" }
    case "NUMERIC":
    case "BIGNUMERIC":
      return { type: "bytes", logicalType: "decimal", ...decimalShape(field) }
    default:
      return new AvroError(path, `${field.type} columns cannot be staged as Avro for file loads`)
  }
}

const isAvroName = (name: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)

const recordSchema = (
  name: string,
  fields: ReadonlyArray<Field>,
  path: string
): AvroSchema | AvroError => {
  const out: Array<AvroSchema> = []
  for (const field of fields) {
    const at = path === "" ? field.name : `${path}.${field.name}`
    if (!isAvroName(field.name)) {
      return new AvroError(at, "flexible column names cannot be staged as Avro for file loads")
    }
    const inner = field.type === "RECORD"
      ? recordSchema(`${name}_${field.name}`, field.fields, at)
      : scalarSchema(field, at)
    if (inner instanceof AvroError) return inner
    const type: AvroSchema = field.mode === "REPEATED"
      ? { type: "array", items: inner }
      : field.mode === "NULLABLE"
      ? ["null", inner]
      : inner
    out.push(field.mode === "NULLABLE" ? { name: field.name, type, default: null } : { name: field.name, type })
  }
  return { type: "record", name, fields: out }
}

/** The Avro schema of a table schema, or the first column that cannot be staged. @internal */
export const avroSchema = (schema: TableSchema): AvroSchema | AvroError => recordSchema("Row", schema.fields, "")

/** An exact 64-bit `long`: `bigint` values (avsc's own `long` is a number, exact only below 2^53). */
const exactLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(0),
  toBuffer: (n: bigint) => {
    const buf = Buffer.alloc(8)
    buf.writeBigInt64LE(n)
    return buf
  },
  fromJSON: (json: number | string) => BigInt(json),
  toJSON: (n: bigint) => n.toString(),
  isValid: (n: unknown) => typeof n === "bigint",
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0)
})

/**
 * A logical type kept as written: values pass through as their underlying type, and the container
 * header carries `logicalType` (and a decimal's precision and scale). avsc drops unknown logical
 * types from the header, and BigQuery then loads a TIMESTAMP column from a bare `long` and fails.
 */
class Annotated extends avro.types.LogicalType {
  private readonly attrs: Record<string, unknown>
  constructor(schema: avro.Schema, opts?: unknown) {
    super(schema, opts)
    const s = schema as Record<string, unknown>
    this.attrs = s["logicalType"] === "decimal" ? { precision: s["precision"], scale: s["scale"] } : {}
  }
  protected override _fromValue(value: unknown): unknown {
    return value
  }
  protected override _toValue(value: unknown): unknown {
    return value
  }
  protected override _resolve(type: avro.Type): ((value: unknown) => unknown) | undefined {
    return type.typeName === this.underlyingType.typeName ? (value) => value : undefined
  }
  protected override _export(schema: avro.Schema): void {
    Object.assign(schema, this.attrs)
  }
}

const logicalTypes = Object.fromEntries(["date", "datetime", "decimal"].map((name) => [name, Annotated]))

/** The schemas of logical longs' underlying types, which {@link longHook} makes exact. */
const underlying = new WeakSet<object>()

/**
 * Every `long` is {@link exactLong}, a logical one wrapped in {@link Annotated} (avsc's registry does
 * not reach `{ type: "long" }` objects, so a hook does it; the copy marks the underlying schema).
 */
const longHook = (schema: avro.Schema, opts: Partial<avro.ForSchemaOptions>): avro.Type | undefined => {
  if (schema === "long") return exactLong
  if (!isRecord(schema) || schema["type"] !== "long") return undefined
  if (schema["logicalType"] === undefined || underlying.has(schema)) return exactLong
  const own = { ...schema }
  underlying.add(own)
  return new Annotated(own as avro.Schema, opts)
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The `avsc` type that encodes the records of `schema` (from {@link converter}) and writes its
 * container header with every logical type. @internal
 */
export const avroType = (schema: AvroSchema): avro.Type =>
  avro.Type.forSchema(schema as avro.Schema, { logicalTypes, typeHook: longHook })

// ---------------------------------------------------------------------------------------------
// protobuf row → Avro record
// ---------------------------------------------------------------------------------------------

interface WireField {
  readonly name: string
  readonly protoType: number
  readonly typeName: string | undefined
}

/** Field number → descriptor field, for every message of a descriptor (nested ones by name). */
const messages = (descriptor: DescriptorProto): Map<string, Map<number, WireField>> => {
  const out = new Map<string, Map<number, WireField>>()
  const visit = (d: DescriptorProto) => {
    out.set(d.name, new Map(d.field.map((f) => [f.number, { name: f.name, protoType: f.type, typeName: f.typeName }])))
    for (const n of d.nestedType) visit(n)
  }
  visit(descriptor)
  return out
}

const timePattern = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/

const timeMicros = (s: string): number | undefined => {
  const m = timePattern.exec(s)
  if (m === null) return undefined
  const [h, mi, se] = [Number(m[1]), Number(m[2]), Number(m[3])]
  if (h > 23 || mi > 59 || se > 59) return undefined
  return ((h * 60 + mi) * 60 + se) * 1_000_000 + Number((m[4] ?? "").padEnd(6, "0"))
}

const datetimeMicros = (s: string): number | undefined => {
  if (s.length < 19 || (s[10] !== " " && s[10] !== "T")) return undefined
  const days = parseDate(s.slice(0, 10))
  const time = timeMicros(s.slice(11))
  return days === undefined || time === undefined ? undefined : days * 86_400_000_000 + time
}

/** A decimal string as the big-endian two's complement of its unscaled value at `scale`. */
const decimalBytes = (s: string, scale: number): Uint8Array | undefined => {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(s)
  if (m === null) return undefined
  const fraction = m[3] ?? ""
  if (fraction.replace(/0+$/, "").length > scale) return undefined
  let unscaled = BigInt(`${m[2] ?? "0"}${fraction.padEnd(scale, "0").slice(0, scale)}`)
  if (m[1] === "-") unscaled = -unscaled
  const bytes: Array<number> = []
  let v = unscaled
  // at least one byte; stop once the remaining value is the sign extension of the last byte's top bit
  do {
    bytes.unshift(Number(v & 0xffn))
    v >>= 8n
  } while (!((v === 0n && ((bytes[0] ?? 0) & 0x80) === 0) || (v === -1n && ((bytes[0] ?? 0) & 0x80) !== 0)))
  return Uint8Array.from(bytes)
}

type Value = unknown

/** Reads one scalar wire value of `protoType` at the reader's position. */
const readScalar = (r: ProtoReader, protoType: number, wire: number, end: number): Value => {
  switch (wire) {
    case 0: {
      r.varint(end)
      if (protoType === protoTypes.bool) return r.lo !== 0 || r.hi !== 0
      if (protoType === protoTypes.int32 || protoType === 14) return r.lo | 0
      if (protoType === 13) return r.lo >>> 0
      if (protoType === 17) return ((r.lo >>> 1) ^ -(r.lo & 1)) | 0 // sint32: zig-zag
      // 64-bit integers as bigint: exact over the whole range
      const u = (BigInt(r.hi >>> 0) << 32n) | BigInt(r.lo >>> 0)
      if (protoType === 18) return (u >> 1n) ^ -(u & 1n) // sint64: zig-zag
      return protoType === 4 ? u : BigInt.asIntN(64, u)
    }
    case 1: {
      const view = new DataView(r.buf.buffer, r.buf.byteOffset + r.pos, 8)
      r.pos += 8
      if (protoType === protoTypes.double) return view.getFloat64(0, true)
      return protoType === 16 ? view.getBigInt64(0, true) : view.getBigUint64(0, true)
    }
    case 5: {
      const view = new DataView(r.buf.buffer, r.buf.byteOffset + r.pos, 4)
      r.pos += 4
      if (protoType === 2) return view.getFloat32(0, true)
      return protoType === 15 ? view.getInt32(0, true) : view.getUint32(0, true)
    }
    case 2:
      return protoType === protoTypes.string ? r.string(end) : r.bytes(end)
    default:
      throw r.malformed(`unsupported wire type ${wire}`)
  }
}

/** A decoded proto value as the Avro value of `field`, or why not. */
const toAvro = (field: Field, value: Value, path: string): Value | AvroError => {
  const bad = (what: string) => new AvroError(path, `${field.type} ${what}`)
  switch (field.type) {
    case "STRING":
    case "JSON":
    case "GEOGRAPHY":
      return typeof value === "string" ? value : bad("must be a string on the wire")
    case "BYTES":
      return value instanceof Uint8Array ? Buffer.from(value) : bad("must be bytes on the wire")
    case "INT64":
    case "TIMESTAMP":
      // a Avro long: exact 64 bits
      if (typeof value === "bigint") return BigInt.asIntN(64, value) === value ? value : bad("value beyond 64 bits")
      return Number.isInteger(value) ? BigInt(value as number) : bad("must be an integer on the wire")
    case "DATE": {
      const days = typeof value === "bigint" ? Number(value) : value
      return Number.isInteger(days) && Math.abs(days as number) <= 2 ** 31
        ? days
        : bad("must be a 32-bit integer on the wire")
    }
    case "FLOAT64":
      return typeof value === "number" ? value : bad("must be a number on the wire")
    case "BOOL":
      return typeof value === "boolean" ? value : bad("must be a bool on the wire")
    case "TIME": {
      const micros = typeof value === "string" ? timeMicros(value) : undefined
      return micros === undefined ? bad(`must be HH:MM:SS[.ffffff], was ${String(value)}`) : BigInt(micros)
    }
    case "DATETIME":
      // staged as the string itself (logical type `datetime`), once it is known to be one
      return typeof value === "string" && datetimeMicros(value) !== undefined
        ? value
        : bad(`must be YYYY-MM-DD HH:MM:SS[.ffffff], was ${String(value)}`)
    case "NUMERIC":
    case "BIGNUMERIC": {
      const bytes = typeof value === "string" ? decimalBytes(value, decimalShape(field).scale) : undefined
      return bytes === undefined
        ? bad(`must be a decimal string within its scale, was ${String(value)}`)
        : Buffer.from(bytes)
    }
    default:
      return bad("cannot be staged as Avro")
  }
}

/** Converts the serializer's protobuf rows of one destination into Avro records. @internal */
export interface RowConverter {
  readonly convert: (row: Uint8Array) => Record<string, Value> | AvroError
}

const isPackable = (protoType: number) =>
  protoType !== protoTypes.string && protoType !== protoTypes.bytes && protoType !== protoTypes.message

/** The wire type of each element of a packed repeated field: fixed64 kinds 1, fixed32 kinds 5, varints 0. */
const packedElementWire = (protoType: number): number =>
  protoType === protoTypes.double || protoType === 6 || protoType === 16
    ? 1
    : protoType === 2 || protoType === 7 || protoType === 15
    ? 5
    : 0

/** The message types of one descriptor, by full name, each as its wire fields by number. */
type MessageTypes = Map<string, Map<number, WireField>>

const joinPath = (path: string, name: string): string => path === "" ? name : `${path}.${name}`

/** Sets `field` in `out` to `value`, or appends it when the field is REPEATED. */
const store = (out: Record<string, Value>, field: Field, value: Value): void => {
  if (field.mode !== "REPEATED") {
    out[field.name] = value
    return
  }
  const list = out[field.name]
  if (Array.isArray(list)) list.push(value)
}

/** The first REQUIRED field of `fields` left without a value, as an error, or `undefined`. */
const missingRequired = (
  fields: ReadonlyArray<Field>,
  out: Record<string, Value>,
  path: string
): AvroError | undefined => {
  const missing = fields.find((f) => f.mode === "REQUIRED" && out[f.name] === null)
  return missing === undefined
    ? undefined
    : new AvroError(joinPath(path, missing.name), "a REQUIRED field has no value")
}

/**
 * The Avro values of one occurrence of `field` on the wire: a nested record, a packed run of
 * scalars, or one scalar.
 */
const readOccurrence = (
  types: MessageTypes,
  r: ProtoReader,
  occurrence: { readonly wf: WireField; readonly field: Field; readonly wire: number; readonly end: number },
  at: string,
  depth: number
): Array<Value> | AvroError => {
  const { end, field, wf, wire } = occurrence
  if (field.type === "RECORD") {
    const to = r.delimited(end)
    const nested = decodeMessage(
      types,
      r,
      { end: to, typeName: wf.typeName ?? "", fields: field.fields },
      at,
      depth + 1
    )
    r.pos = to
    return nested instanceof AvroError ? nested : [nested]
  }
  const raw: Array<Value> = []
  if (wire === 2 && isPackable(wf.protoType)) {
    const to = r.delimited(end)
    const elementWire = packedElementWire(wf.protoType)
    while (r.pos < to) raw.push(readScalar(r, wf.protoType, elementWire, to))
  } else {
    raw.push(readScalar(r, wf.protoType, wire, end))
  }
  const values: Array<Value> = []
  for (const value of raw) {
    const converted = toAvro(field, value, at)
    if (converted instanceof AvroError) return converted
    values.push(converted)
  }
  return values
}

/** Decodes the message of type `typeName` ending at `end` into an Avro record of `fields`. */
const decodeMessage = (
  types: MessageTypes,
  r: ProtoReader,
  message: { readonly end: number; readonly typeName: string; readonly fields: ReadonlyArray<Field> },
  path: string,
  depth: number
): Record<string, Value> | AvroError => {
  if (depth > 100) throw r.malformed("nesting deeper than 100")
  const { end, fields } = message
  const wireFields = types.get(message.typeName) ?? new Map<number, WireField>()
  const byName = new Map(fields.map((f) => [f.name.toLowerCase(), f]))
  const out: Record<string, Value> = {}
  for (const f of fields) out[f.name] = f.mode === "REPEATED" ? [] : null
  while (r.pos < end) {
    const key = r.key(end)
    const wire = key & 7
    const wf = wireFields.get(Math.floor(key / 8))
    const field = wf === undefined ? undefined : byName.get(wf.name.toLowerCase())
    if (wf === undefined || field === undefined) {
      r.skip(wire, end) // a field the table lacks: BigQuery ignores it on load too
      continue
    }
    const values = readOccurrence(types, r, { wf, field, wire, end }, joinPath(path, field.name), depth)
    if (values instanceof AvroError) return values
    for (const value of values) store(out, field, value)
  }
  return missingRequired(fields, out, path) ?? out
}

/** A converter for rows encoded with `descriptor` into records of `schema`'s Avro schema. @internal */
export const converter = (schema: TableSchema, descriptor: DescriptorProto): RowConverter => {
  const types = messages(descriptor)
  return {
    convert: (row) => {
      try {
        const message = { end: row.length, typeName: descriptor.name, fields: schema.fields }
        return decodeMessage(types, new ProtoReader(row, "row"), message, "", 0)
      } catch (e) {
        return new AvroError("", `the serialized row is malformed: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
  }
}
