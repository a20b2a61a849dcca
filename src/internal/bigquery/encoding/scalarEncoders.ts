/**
 * One validating writer per BigQuery scalar type, in the Storage Write API's documented encodings:
 * INT64 and TIMESTAMP (µs since the epoch) as int64 varints, DATE as int32 days, FLOAT64 as double,
 * BOOL as bool, BYTES as bytes, and STRING, NUMERIC, BIGNUMERIC, DATETIME, TIME, GEOGRAPHY and JSON
 * as strings. A writer returns `undefined` when it wrote the value, else a message saying why the
 * value is refused; nothing is coerced.
 *
 * @internal
 */
import * as DateTime from "effect/DateTime"
import * as Predicate from "effect/Predicate"
import type { Field, ScalarType } from "../../../BigQuery/TableSchema.ts"
import * as civil from "./civilTime.ts"
import * as decimal from "./decimal.ts"
import * as json from "./jsonText.ts"
import { describeValue as describe } from "./valueText.ts"
import type { WireWriter } from "./wireWriter.ts"

/** Writes one value (no tag) or says why it cannot. @internal */
export type ScalarEncoder = (w: WireWriter, value: unknown) => string | undefined

/** The protobuf wire type of each scalar encoding. @internal */
export const wireTypeOf = (type: ScalarType): 0 | 1 | 2 => {
  switch (type) {
    case "INT64":
    case "TIMESTAMP":
    case "DATE":
    case "BOOL":
      return 0
    case "FLOAT64":
      return 1
    default:
      return 2
  }
}

const minInt64 = -(2n ** 63n)
const maxInt64 = 2n ** 63n - 1n
const minMicros = BigInt(civil.minSeconds) * 1_000_000n
const maxMicros = BigInt(civil.maxSeconds) * 1_000_000n + 999_999n
const integerPattern = /^[+-]?\d+$/

const refuse = (type: string, takes: string, value: unknown): string => `${type} takes ${takes}, was ${describe(value)}`

const lone = (type: string, index: number): string =>
  `${type} is not well-formed Unicode: lone surrogate at index ${index}`

const writeString = (type: string, w: WireWriter, s: string): string | undefined => {
  const bad = w.string(s)
  return bad < 0 ? undefined : lone(type, bad)
}

const codePoints = (s: string): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0xd800 || c > 0xdbff) n++
  }
  return n
}

const string = (maxLength: number | undefined): ScalarEncoder => (w, v) => {
  if (!Predicate.isString(v)) return refuse("STRING", "a string", v)
  if (maxLength !== undefined && v.length > maxLength && codePoints(v) > maxLength) {
    return `STRING(${maxLength}) takes at most ${maxLength} characters, was ${codePoints(v)}`
  }
  return writeString("STRING", w, v)
}

const bytes = (maxLength: number | undefined): ScalarEncoder => (w, v) => {
  if (!(v instanceof Uint8Array)) return refuse("BYTES", "a Uint8Array", v)
  if (maxLength !== undefined && v.length > maxLength) {
    return `BYTES(${maxLength}) takes at most ${maxLength} bytes, was ${v.length}`
  }
  w.bytes(v)
  return undefined
}

// the usual value (a safe integer) in a function small enough for the compiler to inline into a
// generated field walk; the rest in one it calls
const int64: ScalarEncoder = (w, v) => {
  if (typeof v === "number" && Number.isSafeInteger(v)) {
    w.int64Number(v)
    return undefined
  }
  return int64Other(w, v)
}

const int64Other: ScalarEncoder = (w, v) => {
  if (Predicate.isNumber(v)) {
    return Number.isInteger(v)
      ? refuse("INT64", "a safe integer (use a bigint beyond ±2^53)", v)
      : `INT64 takes an integer, was ${describe(v)} (not an integer)`
  }
  if (Predicate.isBigInt(v)) {
    if (v < minInt64 || v > maxInt64) return refuse("INT64", "a value in [-2^63, 2^63)", v)
    w.int64BigInt(v)
    return undefined
  }
  if (Predicate.isString(v) && integerPattern.test(v)) {
    const n = BigInt(v)
    if (n < minInt64 || n > maxInt64) return refuse("INT64", "a value in [-2^63, 2^63)", v)
    w.int64BigInt(n)
    return undefined
  }
  return refuse("INT64", "an integer (number, bigint or decimal string)", v)
}

const float64: ScalarEncoder = (w, v) => {
  if (!Predicate.isNumber(v)) return refuse("FLOAT64", "a number", v)
  w.double(v)
  return undefined
}

const bool: ScalarEncoder = (w, v) => {
  if (!Predicate.isBoolean(v)) return refuse("BOOL", "a boolean", v)
  w.bool(v)
  return undefined
}

/** `seconds * 10^6 + micros` (micros in 0..999999) as an int64 varint. */
const writeMicros = (w: WireWriter, seconds: number, micros: number): void => {
  if (seconds >= 0) w.scaledInt64(seconds, 1_000_000, micros, false)
  else if (micros === 0) w.scaledInt64(-seconds, 1_000_000, 0, true)
  else w.scaledInt64(-seconds - 1, 1_000_000, 1_000_000 - micros, true)
}

const timestampRange = "a time from 0001-01-01 to 9999-12-31 UTC"

const fromMillis = (w: WireWriter, ms: number, v: unknown): string | undefined => {
  if (!Number.isFinite(ms)) return refuse("TIMESTAMP", "a valid Date", v)
  const seconds = Math.floor(ms / 1000)
  if (seconds < civil.minSeconds || seconds > civil.maxSeconds) return refuse("TIMESTAMP", timestampRange, v)
  writeMicros(w, seconds, (ms - seconds * 1000) * 1000)
  return undefined
}

/** Milliseconds whose microseconds are a safe integer (1685 to 2255): written as one exact product. */
const maxExactMillis = Math.floor(Number.MAX_SAFE_INTEGER / 1000)

// the usual value (a Date from 1685 to 2255) inlinable, as `int64`
const timestamp: ScalarEncoder = (w, v) => {
  if (Predicate.isDate(v)) {
    const ms = v.getTime()
    if (ms >= -maxExactMillis && ms <= maxExactMillis) {
      w.int64Number(ms * 1000)
      return undefined
    }
  }
  return timestampOther(w, v)
}

const timestampOther: ScalarEncoder = (w, v) => {
  if (Predicate.isDate(v)) return fromMillis(w, v.getTime(), v)
  if (DateTime.isDateTime(v)) return fromMillis(w, v.epochMilliseconds, v)
  if (Predicate.isBigInt(v)) {
    if (v < minMicros || v > maxMicros) return refuse("TIMESTAMP", `microseconds since the epoch, ${timestampRange}`, v)
    w.int64BigInt(v)
    return undefined
  }
  if (Predicate.isString(v)) {
    const parsed = civil.parseTimestamp(v)
    if (parsed === undefined) return refuse("TIMESTAMP", "an RFC 3339 string with a zone, like 2024-01-31T12:00:00Z", v)
    if (parsed[0] < civil.minSeconds || parsed[0] > civil.maxSeconds) return refuse("TIMESTAMP", timestampRange, v)
    writeMicros(w, parsed[0], parsed[1])
    return undefined
  }
  return refuse("TIMESTAMP", "a Date, a DateTime, a bigint of microseconds or an RFC 3339 string", v)
}

const date: ScalarEncoder = (w, v) => {
  let days: number | undefined
  if (Predicate.isString(v)) {
    days = civil.parseDate(v)
    if (days === undefined) return refuse("DATE", "a date YYYY-MM-DD from 0001-01-01 to 9999-12-31", v)
  } else if (Predicate.isNumber(v)) {
    if (!Number.isInteger(v) || v < civil.minDays || v > civil.maxDays) {
      return refuse("DATE", `days since 1970-01-01, an integer from ${civil.minDays} to ${civil.maxDays}`, v)
    }
    days = v
  } else if (Predicate.isDate(v)) {
    const ms = v.getTime()
    if (!Number.isFinite(ms) || ms % 86_400_000 !== 0) return refuse("DATE", "a Date at midnight UTC", v)
    days = ms / 86_400_000
    if (days < civil.minDays || days > civil.maxDays) return refuse("DATE", "a date from 0001-01-01 to 9999-12-31", v)
  } else {
    return refuse("DATE", "a string YYYY-MM-DD, a number of days or a Date at midnight UTC", v)
  }
  w.int32(days)
  return undefined
}

const time: ScalarEncoder = (w, v) => {
  if (!Predicate.isString(v) || !civil.isTime(v)) return refuse("TIME", "a string HH:MM:SS[.ffffff]", v)
  return writeString("TIME", w, v)
}

const datetime: ScalarEncoder = (w, v) => {
  const canonical = Predicate.isString(v) ? civil.canonicalDatetime(v) : undefined
  if (canonical === undefined) return refuse("DATETIME", "a string YYYY-MM-DD HH:MM:SS[.ffffff]", v)
  return writeString("DATETIME", w, canonical)
}

const decimalEncoder = (limits: decimal.DecimalLimits): ScalarEncoder => (w, v) => {
  const s = decimal.decimalString(v, limits)
  return Predicate.isString(s) ? writeString(limits.typeName, w, s) : s.error
}

const wktTypes = /^\s*(POINT|LINESTRING|POLYGON|MULTIPOINT|MULTILINESTRING|MULTIPOLYGON|GEOMETRYCOLLECTION)\b/i

/** Why a GEOGRAPHY string is not WKT or GeoJSON (a light check; the service checks geometry). */
const geographyError = (s: string): string | undefined => {
  if (s.trimStart().startsWith("{")) {
    const error = json.jsonTextError(s)
    return error === undefined ? undefined : `GEOGRAPHY GeoJSON is not JSON: ${error}`
  }
  if (!wktTypes.test(s)) return refuse("GEOGRAPHY", "WKT (POINT(1 2), POLYGON(...), ...) or GeoJSON", s)
  let depth = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 40) depth++
    else if (c === 41 && --depth < 0) break
  }
  return depth === 0 ? undefined : `GEOGRAPHY WKT has unbalanced parentheses, was ${describe(s)}`
}

const geography: ScalarEncoder = (w, v) => {
  if (!Predicate.isString(v)) return refuse("GEOGRAPHY", "a WKT or GeoJSON string", v)
  const error = geographyError(v)
  return error === undefined ? writeString("GEOGRAPHY", w, v) : error
}

const jsonEncoder: ScalarEncoder = (w, v) => {
  if (Predicate.isString(v)) {
    const error = json.jsonTextError(v)
    return error === undefined ? writeString("JSON", w, v) : `JSON text is invalid: ${error}`
  }
  const text = json.stringifyJson(v)
  return Predicate.isString(text) ? writeString("JSON", w, text) : `JSON value is invalid: ${text.error}`
}

/** The writer of a scalar field, honouring its `maxLength`, `precision` and `scale`. @internal */
export const scalarEncoder = (type: ScalarType, field?: Field | undefined): ScalarEncoder => {
  switch (type) {
    case "STRING":
      return string(field?.maxLength)
    case "BYTES":
      return bytes(field?.maxLength)
    case "INT64":
      return int64
    case "FLOAT64":
      return float64
    case "BOOL":
      return bool
    case "TIMESTAMP":
      return timestamp
    case "DATE":
      return date
    case "TIME":
      return time
    case "DATETIME":
      return datetime
    case "NUMERIC":
    case "BIGNUMERIC":
      return decimalEncoder(decimal.limitsOf(type, field?.precision, field?.scale))
    case "GEOGRAPHY":
      return geography
    case "JSON":
      return jsonEncoder
  }
}
