/**
 * Validation of NUMERIC and BIGNUMERIC values as exact decimal strings: digit counts against the
 * column's precision and scale, and the exact BIGNUMERIC bounds (±(2^255)/10^38, precision 76.76).
 *
 * @internal
 */
import * as BigDecimal from "effect/BigDecimal"
import * as Predicate from "effect/Predicate"

/**
 * The digits a decimal column takes: at most `integerDigits` significant digits before the point
 * and `scale` after it (trailing zeros do not count). `bigNumericBounds` adds the exact
 * BIGNUMERIC range check for 39 integer digits.
 *
 * @internal
 */
export interface DecimalLimits {
  readonly typeName: "NUMERIC" | "BIGNUMERIC"
  readonly integerDigits: number
  readonly scale: number
  readonly bigNumericBounds: boolean
}

/** NUMERIC: precision 38, scale 9. @internal */
export const numericLimits: DecimalLimits = {
  typeName: "NUMERIC",
  integerDigits: 29,
  scale: 9,
  bigNumericBounds: false
}

/** BIGNUMERIC: precision 76.76, scale 38. @internal */
export const bigNumericLimits: DecimalLimits = {
  typeName: "BIGNUMERIC",
  integerDigits: 39,
  scale: 38,
  bigNumericBounds: true
}

/**
 * The limits of `NUMERIC(P[, S])` / `BIGNUMERIC(P[, S])`; the defaults when no precision is given.
 *
 * @internal
 */
export const limitsOf = (
  typeName: "NUMERIC" | "BIGNUMERIC",
  precision: number | undefined,
  scale: number | undefined
): DecimalLimits => {
  const base = typeName === "NUMERIC" ? numericLimits : bigNumericLimits
  if (precision === undefined) return base
  const s = scale ?? 0
  return { typeName, integerDigits: precision - s, scale: s, bigNumericBounds: false }
}

const two255 = 2n ** 255n

/**
 * The decimal string to send for a NUMERIC/BIGNUMERIC value, or an error message (as
 * `{ error }`). Accepts a plain decimal string (`-?digits[.digits]`), a bigint or an
 * `effect/BigDecimal`; numbers are refused because they are binary approximations.
 *
 * @internal
 */
export const decimalString = (value: unknown, limits: DecimalLimits): string | { readonly error: string } => {
  const s = Predicate.isString(value)
    ? value
    : Predicate.isBigInt(value)
    ? value.toString()
    : BigDecimal.isBigDecimal(value)
    ? plainString(value)
    : undefined
  if (s === undefined) {
    return { error: `${limits.typeName} takes a decimal string, a bigint or a BigDecimal (numbers are inexact)` }
  }
  const error = checkDecimal(s, limits)
  return error === undefined ? s : { error }
}

/** A BigDecimal as a plain decimal string (never exponent notation). */
const plainString = (value: BigDecimal.BigDecimal): string => {
  const negative = value.value < 0n
  const digits = (negative ? -value.value : value.value).toString()
  const sign = negative ? "-" : ""
  if (value.scale <= 0) return `${sign}${digits}${"0".repeat(-value.scale)}`
  const padded = digits.padStart(value.scale + 1, "0")
  const point = padded.length - value.scale
  return `${sign}${padded.slice(0, point)}.${padded.slice(point)}`
}

/** Why `s` does not fit the limits, or `undefined`. @internal */
export const checkDecimal = (s: string, limits: DecimalLimits): string | undefined => {
  const n = s.length
  let i = s.charCodeAt(0) === 45 ? 1 : 0
  const intStart = i
  while (i < n && isDigit(s.charCodeAt(i))) i++
  const intEnd = i
  let fracStart = i
  let fracEnd = i
  if (i < n && s.charCodeAt(i) === 46) {
    fracStart = ++i
    while (i < n && isDigit(s.charCodeAt(i))) i++
    fracEnd = i
    if (fracEnd === fracStart) return `${limits.typeName} must be a decimal like -12.5, was '${clip(s)}'`
  }
  if (i !== n || intEnd === intStart) return `${limits.typeName} must be a decimal like -12.5, was '${clip(s)}'`
  let firstSignificant = intStart
  while (firstSignificant < intEnd - 1 && s.charCodeAt(firstSignificant) === 48) firstSignificant++
  const integerDigits = s.charCodeAt(firstSignificant) === 48 ? 0 : intEnd - firstSignificant
  let lastSignificant = fracEnd
  while (lastSignificant > fracStart && s.charCodeAt(lastSignificant - 1) === 48) lastSignificant--
  const fractionDigits = lastSignificant - fracStart
  if (fractionDigits > limits.scale) {
    return `${limits.typeName} takes at most ${limits.scale} fractional digits, was '${clip(s)}'`
  }
  if (integerDigits > limits.integerDigits) {
    return `${limits.typeName} takes at most ${limits.integerDigits} integer digits, was '${clip(s)}'`
  }
  if (limits.bigNumericBounds && integerDigits === limits.integerDigits) {
    const fraction = s.slice(fracStart, lastSignificant).padEnd(38, "0")
    const scaled = BigInt(s.slice(firstSignificant, intEnd) + fraction)
    const negative = intStart === 1
    if (negative ? scaled > two255 : scaled >= two255) {
      return `BIGNUMERIC must be within ±5.78960446186580977117854925043439539266E+38, was '${clip(s)}'`
    }
  }
  return undefined
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57

const clip = (s: string): string => (s.length > 80 ? `${s.slice(0, 80)}...` : s)
