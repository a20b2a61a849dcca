/**
 * fast-check generators for BigQuery table schemas and rows, each valid value paired with what
 * protobufjs decodes it to (`toObject` with `longs: String`), plus a protobufjs decoder built from
 * our descriptor bytes: the independent oracle of the encoder tests.
 */
import * as fc from "fast-check"
import protobuf from "protobufjs"
import descriptorExt from "protobufjs/ext/descriptor/index.js"
import type * as TableSchema from "../../src/BigQuery/TableSchema.ts"
import {
  civilFromDays,
  maxDays,
  maxSeconds,
  minDays,
  minSeconds
} from "../../src/internal/bigquery/encoding/civilTime.ts"
import { scalarTypeNames } from "../../src/internal/bigquery/schema/model.ts"

export const scalarTypes: ReadonlyArray<TableSchema.ScalarType> = scalarTypeNames

const modes: ReadonlyArray<TableSchema.Mode> = ["NULLABLE", "REQUIRED", "REPEATED"]

const nameArb = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/)

const fieldArb = (depth: number): fc.Arbitrary<TableSchema.Field> => {
  const scalar = fc.record({
    name: nameArb,
    type: fc.constantFrom(...scalarTypes),
    mode: fc.constantFrom(...modes)
  })
  const range = fc.record({
    name: nameArb,
    type: fc.constant("RANGE" as const),
    mode: fc.constantFrom(...modes),
    rangeElementType: fc.constantFrom("DATE" as const, "DATETIME" as const, "TIMESTAMP" as const)
  })
  if (depth >= 2) return fc.oneof(scalar, range)
  const record = fc.record({
    name: nameArb,
    type: fc.constant("RECORD" as const),
    mode: fc.constantFrom(...modes),
    fields: fieldsArb(depth + 1, 4)
  })
  return fc.oneof({ weight: 6, arbitrary: scalar }, { weight: 1, arbitrary: range }, { weight: 2, arbitrary: record })
}

export const fieldsArb = (depth = 0, maxLength = 8): fc.Arbitrary<ReadonlyArray<TableSchema.Field>> =>
  fc.uniqueArray(fieldArb(depth), { minLength: 1, maxLength, selector: (f) => f.name.toLowerCase() })

export const tableSchemaArb: fc.Arbitrary<TableSchema.TableSchema> = fieldsArb().map((fields) => ({ fields }))

/** A valid value and what protobufjs decodes it to. */
export interface Sample {
  readonly value: unknown
  readonly decoded: unknown
}

const pad = (n: number, width: number) => String(n).padStart(width, "0")

export const formatDate = (days: number): string => {
  const [y, m, d] = civilFromDays(days)
  return `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`
}

const microsOfDay = fc.integer({ min: 0, max: 86_399_999_999 })

export const formatTime = (micros: number, digits: number): string => {
  const seconds = Math.floor(micros / 1e6)
  const fraction = micros % 1e6
  const base = `${pad(Math.floor(seconds / 3600), 2)}:${pad(Math.floor(seconds / 60) % 60, 2)}:${pad(seconds % 60, 2)}`
  if (digits === 0) return base
  return `${base}.${pad(fraction, 6).slice(0, digits)}`
}

/** A time whose fraction has exactly `digits` digits (trailing digits dropped from `micros`). */
const timeArb = fc.tuple(microsOfDay, fc.integer({ min: 0, max: 6 })).map(([micros, digits]) => {
  const unit = 10 ** (6 - digits)
  return { micros: micros - (micros % unit), text: formatTime(micros - (micros % unit), digits) }
})

const daysArb = fc.integer({ min: minDays, max: maxDays })
const minMicros = BigInt(minSeconds) * 1_000_000n
const maxMicros = BigInt(maxSeconds) * 1_000_000n + 999_999n

export const formatTimestamp = (micros: bigint, offsetMinutes: number): string => {
  const local = micros + BigInt(offsetMinutes) * 60_000_000n
  const days = Number(local / 86_400_000_000n) - (local % 86_400_000_000n < 0n ? 1 : 0)
  const ofDay = Number(local - BigInt(days) * 86_400_000_000n)
  const sign = offsetMinutes < 0 ? "-" : "+"
  const abs = Math.abs(offsetMinutes)
  const zone = offsetMinutes === 0 ? "Z" : `${sign}${pad(Math.floor(abs / 60), 2)}:${pad(abs % 60, 2)}`
  return `${formatDate(days)}T${formatTime(ofDay, 6)}${zone}`
}

const decimalArb = (integerDigits: number, scale: number) =>
  fc.tuple(
    fc.boolean(),
    fc.stringMatching(new RegExp(`^[0-9]{1,${integerDigits}}$`)),
    fc.option(fc.stringMatching(new RegExp(`^[0-9]{1,${scale}}$`)), { nil: undefined })
  ).map(([negative, int, frac]) => `${negative ? "-" : ""}${int}${frac === undefined ? "" : `.${frac}`}`)

const scalarSample = (type: TableSchema.ScalarType): fc.Arbitrary<Sample> => {
  switch (type) {
    case "STRING":
      return fc.oneof(
        fc.string({ unit: "grapheme", maxLength: 30 }),
        fc.string({ unit: "grapheme", minLength: 40, maxLength: 200 })
      )
        .map((s) => ({ value: s, decoded: s }))
    case "BYTES":
      return fc.uint8Array({ maxLength: 40 }).map((b) => ({ value: b, decoded: Array.from(b) }))
    case "INT64":
      return fc.oneof(
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => ({ value: n, decoded: String(n) })),
        fc.maxSafeInteger().map((n) => ({ value: n, decoded: String(n) })),
        fc.integer().map((n) => ({ value: String(n), decoded: String(n) }))
      )
    case "FLOAT64":
      return fc.double().map((d) => ({ value: d, decoded: d }))
    case "NUMERIC":
      return decimalArb(29, 9).map((s) => ({ value: s, decoded: s }))
    case "BIGNUMERIC":
      return decimalArb(38, 38).map((s) => ({ value: s, decoded: s }))
    case "BOOL":
      return fc.boolean().map((b) => ({ value: b, decoded: b }))
    case "TIMESTAMP":
      return fc.oneof(
        fc.bigInt({ min: minMicros, max: maxMicros }).map((us) => ({ value: us, decoded: String(us) })),
        fc.integer({ min: minSeconds * 1000, max: maxSeconds * 1000 + 999 }).map((ms) => ({
          value: new Date(ms),
          decoded: String(BigInt(ms) * 1000n)
        })),
        fc.tuple(
          fc.bigInt({ min: minMicros + 86_400_000_000n, max: maxMicros - 86_400_000_000n }),
          fc.integer({ min: -14 * 60, max: 14 * 60 })
        )
          .map(([us, offset]) => ({ value: formatTimestamp(us, offset), decoded: String(us) }))
      )
    case "DATE":
      return fc.oneof(
        daysArb.map((d) => ({ value: d, decoded: d })),
        daysArb.map((d) => ({ value: formatDate(d), decoded: d }))
      )
    case "TIME":
      return timeArb.map((t) => ({ value: t.text, decoded: t.text }))
    case "DATETIME":
      return fc.tuple(daysArb, timeArb, fc.constantFrom(" ", "T")).map(([d, t, sep]) => ({
        value: `${formatDate(d)}${sep}${t.text}`,
        decoded: `${formatDate(d)} ${t.text}`
      }))
    case "GEOGRAPHY":
      return fc.tuple(fc.integer({ min: -180, max: 180 }), fc.integer({ min: -90, max: 90 })).map(([x, y]) => {
        const wkt = `POINT(${x} ${y})`
        return { value: wkt, decoded: wkt }
      })
    case "JSON":
      return fc.oneof(
        fc.json().map((text) => ({ value: text, decoded: text })),
        fc.jsonValue().filter((v) => typeof v !== "string" && v !== null).map((v) => ({
          value: v,
          decoded: JSON.stringify(v)
        }))
      )
  }
}

const singleSample = (field: TableSchema.Field): fc.Arbitrary<Sample> => {
  switch (field.type) {
    case "RECORD":
      return rowSample(field.fields)
    case "RANGE": {
      const bound = fc.option(scalarSample(field.rangeElementType), { nil: undefined })
      return fc.tuple(bound, bound).map(([start, end]) => ({
        value: { start: start?.value, end: end?.value ?? null },
        decoded: {
          ...(start === undefined ? {} : { start: start.decoded }),
          ...(end === undefined ? {} : { end: end.decoded })
        }
      }))
    }
    default:
      return scalarSample(field.type)
  }
}

const fieldSample = (field: TableSchema.Field): fc.Arbitrary<Sample | undefined> => {
  if (field.mode === "REPEATED") {
    return fc.array(singleSample(field), { maxLength: 3 }).map((items) => ({
      value: items.map((i) => i.value),
      decoded: items.length === 0 ? undefined : items.map((i) => i.decoded)
    }))
  }
  if (field.mode === "REQUIRED") return singleSample(field)
  return fc.option(singleSample(field), { nil: undefined })
}

/** A valid row of the fields and its decoded form. */
export const rowSample = (fields: ReadonlyArray<TableSchema.Field>): fc.Arbitrary<Sample> =>
  fc.tuple(...fields.map(fieldSample)).map((samples) => {
    const value: Record<string, unknown> = {}
    const decoded: Record<string, unknown> = {}
    fields.forEach((field, i) => {
      const sample = samples[i]
      value[field.name] = sample?.value ?? null
      if (sample !== undefined && sample.decoded !== undefined) decoded[field.name] = sample.decoded
    })
    return { value, decoded }
  })

const fromDescriptor: (descriptor: protobuf.Message) => protobuf.Type = Reflect.get(protobuf.Type, "fromDescriptor")

/** A protobufjs type built from encoded descriptor bytes (the oracle for decoding rows). */
export const decoderOf = (descriptorBytes: Uint8Array): protobuf.Type => {
  const type = fromDescriptor(descriptorExt.DescriptorProto.decode(descriptorBytes))
  new protobuf.Root().add(type)
  type.resolveAll()
  return type
}

/** Decodes a row with the oracle, bytes as arrays and int64 as decimal strings. */
export const decodeRow = (type: protobuf.Type, bytes: Uint8Array): unknown =>
  normalize(type.toObject(type.decode(bytes), { longs: String }))

const normalize = (u: unknown): unknown => {
  if (u instanceof Uint8Array) return Array.from(u)
  if (Array.isArray(u)) return u.map(normalize)
  if (u !== null && typeof u === "object") {
    return Object.fromEntries(Object.entries(u).map(([k, v]) => [k, normalize(v)]))
  }
  return u
}
