/**
 * Option rules shared by every sink and layer (reference 1.2). Each check fails with a
 * `SinkConfigError` naming the option path the user wrote.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { SinkConfigError } from "../Sink/SinkConfigError.ts"

/** @internal */
export const fail = (path: string, message: string): Effect.Effect<never, SinkConfigError> =>
  Effect.fail(new SinkConfigError({ path, message }))

const maxNanos = 9_223_372_036_854_775_807n

/**
 * How small a duration may be:
 * - `positive`: greater than zero;
 * - `atLeastOneMilli`: at least 1 ms, because the value is used at millisecond granularity;
 * - `atLeastOneMilliOrZero`: 0 is a sentinel ("none"); otherwise at least 1 ms, since a positive
 *   sub-millisecond value would silently become the sentinel.
 *
 * @internal
 */
export type DurationRule = "positive" | "atLeastOneMilli" | "atLeastOneMilliOrZero"

/** @internal */
export const duration = (
  path: string,
  input: unknown,
  rule: DurationRule
): Effect.Effect<Duration.Duration, SinkConfigError> => {
  const decoded = isDurationInput(input) ? Duration.fromInput(input) : Option.none()
  if (Option.isNone(decoded)) return fail(path, `must be a duration, was ${describe(input)}`)
  const value = decoded.value
  const nanos = Duration.toNanos(value)
  if (Option.isNone(nanos) || nanos.value > maxNanos) {
    return fail(path, "must be expressible in nanoseconds (at most about 292 years)")
  }
  const ns = nanos.value
  switch (rule) {
    case "positive":
      return ns > 0n ? Effect.succeed(value) : fail(path, `must be positive, was ${Duration.format(value)}`)
    case "atLeastOneMilli":
      return ns >= 1_000_000n
        ? Effect.succeed(value)
        : fail(path, `must be at least 1 ms, was ${Duration.format(value)}`)
    case "atLeastOneMilliOrZero":
      return ns === 0n || ns >= 1_000_000n
        ? Effect.succeed(value)
        : fail(path, `must be 0 or at least 1 ms, was ${Duration.format(value)}`)
  }
}

/** @internal */
export const integer = (
  path: string,
  value: unknown,
  bounds: { readonly min: number; readonly max?: number | undefined; readonly sentinel?: number | undefined }
): Effect.Effect<number, SinkConfigError> => {
  if (!Predicate.isNumber(value) || !Number.isSafeInteger(value)) {
    return fail(path, `must be an integer, was ${describe(value)}`)
  }
  if (bounds.sentinel !== undefined && value === bounds.sentinel) return Effect.succeed(value)
  const max = bounds.max ?? Number.MAX_SAFE_INTEGER
  if (value < bounds.min || value > max) {
    const range = bounds.max === undefined ? `at least ${bounds.min}` : `between ${bounds.min} and ${bounds.max}`
    const sentinel = bounds.sentinel === undefined ? "" : ` (or ${bounds.sentinel})`
    return fail(path, `must be ${range}${sentinel}, was ${value}`)
  }
  return Effect.succeed(value)
}

/** @internal */
export const boolean = (path: string, value: unknown): Effect.Effect<boolean, SinkConfigError> =>
  Predicate.isBoolean(value) ? Effect.succeed(value) : fail(path, `must be a boolean, was ${describe(value)}`)

/**
 * A resource id component (project, dataset, instance, table): not blank, no surrounding
 * whitespace, no `/`.
 *
 * @internal
 */
export const component = (path: string, value: unknown): Effect.Effect<string, SinkConfigError> => {
  if (!Predicate.isString(value)) return fail(path, `must be a string, was ${describe(value)}`)
  if (value.trim().length === 0) return fail(path, "must not be blank")
  if (value.trim() !== value) return fail(path, `must not have leading or trailing whitespace, was '${value}'`)
  if (value.includes("/")) return fail(path, `must not contain '/', was '${value}'`)
  return Effect.succeed(value)
}

/** A value forwarded to the service as is (app profile, location): only not blank. @internal */
export const notBlank = (path: string, value: unknown): Effect.Effect<string, SinkConfigError> => {
  if (!Predicate.isString(value)) return fail(path, `must be a string, was ${describe(value)}`)
  return value.trim().length === 0 ? fail(path, "must not be blank") : Effect.succeed(value)
}

const isDurationInput = (input: unknown): input is Duration.Input =>
  Predicate.isNumber(input) || Predicate.isBigInt(input) || Predicate.isString(input) || Duration.isDuration(input) ||
  Array.isArray(input) || Predicate.isObject(input)

/** A short, safe rendering of a rejected value for an error message. @internal */
export const describe = (value: unknown): string => {
  if (value === undefined) return "undefined"
  if (value === null) return "null"
  if (Predicate.isString(value)) return `'${value.length > 64 ? `${value.slice(0, 64)}...` : value}'`
  if (Predicate.isNumber(value) || Predicate.isBoolean(value) || Predicate.isBigInt(value)) return String(value)
  if (Duration.isDuration(value)) return Duration.format(value)
  return Array.isArray(value) ? "an array" : `a value of type ${typeof value}`
}
