/**
 * How a row value the encoder refuses is named in a `RowSerializationError`: what was given, so
 * `5n` reads as a bigint, an invalid `Date` as such, and an object by its class.
 *
 * @internal
 */
import * as DateTime from "effect/DateTime"
import * as Predicate from "effect/Predicate"

const maxStringLength = 64

/**
 * A short rendering of a refused value: strings quoted (cut at 64 characters), numbers as written
 * (`1.5`, `NaN`), bigints with their `n` (`5n (bigint)`), `Date`s by their instant or `an invalid
 * Date`, byte arrays by their length, other objects by their class.
 *
 * @internal
 */
export const describeValue = (value: unknown): string => {
  if (value === undefined) return "undefined"
  if (value === null) return "null"
  if (Predicate.isString(value)) {
    return `'${value.length > maxStringLength ? `${value.slice(0, maxStringLength)}...` : value}'`
  }
  if (Predicate.isNumber(value) || Predicate.isBoolean(value)) return String(value)
  if (Predicate.isBigInt(value)) return `${value}n (bigint)`
  if (Predicate.isDate(value)) {
    return Number.isFinite(value.getTime()) ? `the Date ${value.toISOString()}` : "an invalid Date"
  }
  if (DateTime.isDateTime(value)) return `the DateTime ${DateTime.formatIso(value)}`
  if (value instanceof Uint8Array) return `a Uint8Array of ${value.length} bytes`
  if (Array.isArray(value)) return "an array"
  if (Predicate.isFunction(value)) return "a function"
  if (Predicate.isObject(value)) {
    const name: unknown = Object.getPrototypeOf(value)?.constructor?.name
    return Predicate.isString(name) && name !== "" && name !== "Object" ? `an object of class ${name}` : "an object"
  }
  return `a value of type ${typeof value}`
}
