/**
 * Option decoding with `Schema` (DESIGN section 3): the leaf schemas every option is built from
 * (durations, counts, flags, strings, values the caller built), each decoding from `unknown` with a
 * message that names the rule and the value given, and the mapping of a `Schema` issue to a
 * `SinkConfigError` whose path is the option as the user wrote it (`writeMethod.maxInFlightBytes`).
 *
 * Options arrive from untyped JavaScript and from `Config` too: nothing here trusts a type, and no
 * input makes decoding throw.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as emulatorEndpoint from "../wire/emulatorEndpoint.ts"

/** A short, safe rendering of a rejected value for an error message. @internal */
export const describe = (value: unknown): string => {
  if (value === undefined) return "undefined"
  if (value === null) return "null"
  if (Predicate.isString(value)) return `'${value.length > 64 ? `${value.slice(0, 64)}...` : value}'`
  if (Predicate.isNumber(value) || Predicate.isBoolean(value) || Predicate.isBigInt(value)) return String(value)
  if (Duration.isDuration(value)) return Duration.format(value)
  return Array.isArray(value) ? "an array" : `a value of type ${typeof value}`
}

/** A leaf rule: the value, or the message of the rule it broke. @internal */
export type Rule<A> = (input: unknown) => Result.Result<A, string>

/** The parse options of every option decode: all keys known, first error reported. @internal */
export const parseOptions: SchemaAST.ParseOptions = { errors: "first", onExcessProperty: "error", reportInput: true }

const invalid = (message: string, input: unknown): SchemaIssue.Issue => new SchemaIssue.InvalidValue({ message }, input)

/**
 * A schema decoding `unknown` with an effectful step that may fail with an issue (nested decodes
 * keep their paths). `is` guards the decoded type.
 *
 * @internal
 */
export const fromEffect = <A>(
  is: (u: unknown) => u is A,
  decode: (input: unknown, options: SchemaAST.ParseOptions) => Effect.Effect<A, SchemaIssue.Issue>
): Schema.Codec<A, unknown> =>
  Schema.Unknown.pipe(
    Schema.decodeTo(
      Schema.declare(is),
      SchemaTransformation.transformEffect({ decode, encode: (a: A) => Effect.succeed<unknown>(a) })
    )
  )

/** A schema from a leaf rule. @internal */
export const leaf = <A>(is: (u: unknown) => u is A, rule: Rule<A>): Schema.Codec<A, unknown> =>
  fromEffect(is, (input) =>
    Result.match(rule(input), {
      onFailure: (message) => Effect.fail(invalid(message, input)),
      onSuccess: Effect.succeed
    }))

/** The rule with `undefined` meaning `fallback`. @internal */
export const orElse = <A, B>(rule: Rule<A>, fallback: B): Rule<A | B> => (input) =>
  input === undefined ? Result.succeed(fallback) : rule(input)

const ok = Result.succeed
const no = Result.fail

const maxNanos = 9_223_372_036_854_775_807n

/** Every number inside a duration input (a number, an hrtime pair, a duration object) is finite. */
const finiteParts = (input: unknown): boolean => {
  if (Predicate.isNumber(input)) return Number.isFinite(input)
  if (Array.isArray(input)) return input.every((n) => !Predicate.isNumber(n) || Number.isFinite(n))
  if (Predicate.isObject(input) && !Duration.isDuration(input)) {
    return Object.values(input).every((n) => !Predicate.isNumber(n) || Number.isFinite(n))
  }
  return true
}

const durationObjectKeys: ReadonlySet<string> = new Set([
  "weeks",
  "days",
  "hours",
  "minutes",
  "seconds",
  "milliseconds",
  "microseconds",
  "nanoseconds"
])

/** A `Duration.DurationObject`: only its keys, each a number (or undefined). */
const isDurationObject = (input: object): boolean =>
  Object.entries(input).every(([key, value]) =>
    durationObjectKeys.has(key) && (value === undefined || Predicate.isNumber(value))
  )

const isDurationInput = (input: unknown): input is Duration.Input =>
  Predicate.isNumber(input) || Predicate.isBigInt(input) || Predicate.isString(input) || Duration.isDuration(input) ||
  Array.isArray(input) || (Predicate.isObject(input) && isDurationObject(input))

/**
 * How small a duration may be:
 * - `positive`: greater than zero;
 * - `atLeastOneMilli`: at least 1 ms, because the value is used at millisecond granularity.
 *
 * @internal
 */
export type DurationRule = "positive" | "atLeastOneMilli"

/**
 * A finite duration (`NaN` and infinities rejected, whatever their spelling: `Duration.fromInput(NaN)`
 * is 0 in effect 4.1, which would pass a "0 = none" rule), expressible in nanoseconds, within `rule`.
 *
 * @internal
 */
export const duration = (rule: DurationRule): Rule<Duration.Duration> => (input) => {
  if (!isDurationInput(input)) return no(`must be a duration, was ${describe(input)}`)
  if (!finiteParts(input)) return no(`must be a finite duration, was ${describe(input)}`)
  const decoded = Duration.fromInput(input)
  if (decoded._tag === "None") return no(`must be a duration, was ${describe(input)}`)
  const value = decoded.value
  const nanos = Duration.toNanos(value)
  if (nanos._tag === "None" || nanos.value > maxNanos) {
    return no("must be finite and expressible in nanoseconds (at most about 292 years)")
  }
  switch (rule) {
    case "positive":
      return nanos.value > 0n ? ok(value) : no(`must be positive, was ${Duration.format(value)}`)
    case "atLeastOneMilli":
      return nanos.value >= 1_000_000n ? ok(value) : no(`must be at least 1 ms, was ${Duration.format(value)}`)
  }
}

/** An integer within bounds (`NaN`, infinities and fractions rejected); `sentinel` is allowed too. @internal */
export const integer = (
  bounds: { readonly min: number; readonly max?: number | undefined; readonly sentinel?: number | undefined }
): Rule<number> =>
(input) => {
  if (!Predicate.isNumber(input) || !Number.isInteger(input)) return no(`must be an integer, was ${describe(input)}`)
  if (!Number.isSafeInteger(input)) return no(`must be a safe integer (at most 2^53 - 1), was ${describe(input)}`)
  if (bounds.sentinel !== undefined && input === bounds.sentinel) return ok(input)
  const max = bounds.max ?? Number.MAX_SAFE_INTEGER
  if (input >= bounds.min && input <= max) return ok(input)
  const range = bounds.max === undefined ? `at least ${bounds.min}` : `between ${bounds.min} and ${bounds.max}`
  const sentinel = bounds.sentinel === undefined ? "" : ` (or ${bounds.sentinel})`
  return no(`must be ${range}${sentinel}, was ${input}`)
}

/** A finite number of at least `min` (`NaN` and infinities rejected). @internal */
export const finiteAtLeast = (min: number): Rule<number> => (input) =>
  Predicate.isNumber(input) && Number.isFinite(input) && input >= min
    ? ok(input)
    : no(`must be a finite number of at least ${min}, was ${describe(input)}`)

/** @internal */
export const boolean: Rule<boolean> = (input) =>
  Predicate.isBoolean(input) ? ok(input) : no(`must be a boolean, was ${describe(input)}`)

/** A value forwarded as is (app profile, location): a string, not blank. @internal */
export const notBlank: Rule<string> = (input) => {
  if (!Predicate.isString(input)) return no(`must be a string, was ${describe(input)}`)
  return input.trim().length === 0 ? no("must not be blank") : ok(input)
}

/**
 * A resource id component (project, dataset, instance, table): a string, not blank, no surrounding
 * whitespace, no `/`.
 *
 * @internal
 */
export const component: Rule<string> = (input) => {
  if (!Predicate.isString(input)) return no(`must be a string, was ${describe(input)}`)
  if (input.trim().length === 0) return no("must not be blank")
  if (input.trim() !== input) return no(`must not have leading or trailing whitespace, was '${input}'`)
  if (input.includes("/")) return no(`must not contain '/', was '${input}'`)
  return ok(input)
}

/** One of the given string literals. @internal */
export const literal = <const L extends string>(values: ReadonlyArray<L>): Rule<L> => (input) => {
  const found = values.find((v) => v === input)
  return found === undefined ? no(`must be ${values.join(" or ")}, was ${describe(input)}`) : ok(found)
}

/** A value checked by a guard, `expected` naming it in the message. @internal */
export const guarded = <A>(is: (u: unknown) => u is A, expected: string): Rule<A> => (input) =>
  is(input) ? ok(input) : no(`must be ${expected}, was ${describe(input)}`)

/** @internal */
export const isRecord = (u: unknown): u is Record<string, unknown> => Predicate.isObject(u) && !Array.isArray(u)

/**
 * A nested options object: `undefined` is `fallback`, a non-object is rejected with `must be an
 * object`, an object is decoded by `schema` with its issues' paths kept under this option.
 *
 * @internal
 */
export const object = <A, B>(schema: Schema.Decoder<A>, fallback: B, is: (u: unknown) => u is A | B) =>
  fromEffect(is, (input, options) => {
    if (input === undefined) return Effect.succeed(fallback)
    if (!isRecord(input)) return Effect.fail(invalid(`must be an object, was ${describe(input)}`, input))
    return Effect.mapError(Schema.decodeUnknownEffect(schema)(input, options), (error) => error.issue)
  })

/** An optional field: a missing key is decoded like `undefined`, so the leaf applies its default. @internal */
export const field = <A>(schema: Schema.Codec<A, unknown>) => schema.pipe(Schema.withDecodingDefaultKey(Effect.void))

/** An optional field from a rule. @internal */
export const optional = <A>(is: (u: unknown) => u is A, rule: Rule<A>, fallback: A) =>
  field(leaf(is, orElse(rule, fallback)))

/** An optional field whose absence stays `undefined`. @internal */
export const maybe = <A>(is: (u: unknown) => u is A, rule: Rule<A>) =>
  field(leaf((u): u is A | undefined => u === undefined || is(u), orElse(rule, undefined)))

/** @internal */
export const isDuration = (u: unknown): u is Duration.Duration => Duration.isDuration(u)
/** @internal */
export const isNumber = (u: unknown): u is number => Predicate.isNumber(u)
/** @internal */
export const isString = (u: unknown): u is string => Predicate.isString(u)
/** @internal */
export const isBoolean = (u: unknown): u is boolean => Predicate.isBoolean(u)

const renderPath = (prefix: string, path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string =>
  path.reduce<string>((acc, segment) => {
    const key = Predicate.isObject(segment) ? segment.key : segment
    if (Predicate.isNumber(key)) return `${acc}[${key}]`
    const name = String(key)
    return acc.length === 0 ? name : `${acc}.${name}`
  }, prefix)

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => {
    switch (issue._tag) {
      case "MissingKey":
        return "is required"
      case "UnexpectedKey":
        return "is not an option here (misspelt, or renamed: see docs/adr/0016-shared-option-vocabulary.md)"
      case "InvalidType":
        return `must be an object, was ${describe(SchemaIssue.hasInput(issue) ? issue.input : undefined)}`
      default:
        return SchemaIssue.defaultLeafHook(issue)
    }
  }
})

/**
 * The first issue of a failed decode as a `SinkConfigError`: its path is `prefix` followed by the
 * issue's path (`writeMethod` + `["retry", "maxAttempts"]` = `writeMethod.retry.maxAttempts`).
 *
 * @internal
 */
export const toConfigError = (prefix: string) => (issue: SchemaIssue.Issue): SinkConfigError => {
  const first = formatter(issue).issues[0]
  const path = renderPath(prefix, first?.path ?? [])
  return new SinkConfigError({ path: path.length === 0 ? "options" : path, message: first?.message ?? "is invalid" })
}

/**
 * Decodes `input` with `schema`, failing with a `SinkConfigError` whose path starts at `prefix`
 * (empty for a top-level options object).
 *
 * @internal
 */
export const decode = <A>(schema: Schema.Decoder<A>, prefix = "") => (input: unknown) =>
  Effect.mapError(
    Schema.decodeUnknownEffect(schema)(input, parseOptions),
    (error) => toConfigError(prefix)(error.issue)
  )

/** Decodes a leaf rule at `path`. @internal */
export const decodeRule = <A>(path: string, rule: Rule<A>, input: unknown): Effect.Effect<A, SinkConfigError> =>
  Result.match(rule(input), {
    onFailure: (message) => Effect.fail(new SinkConfigError({ path, message })),
    onSuccess: Effect.succeed
  })

/** @internal */
export const fail = (path: string, message: string): Effect.Effect<never, SinkConfigError> =>
  Effect.fail(new SinkConfigError({ path, message }))

/**
 * A `host:port` emulator endpoint (a string: `8086` or `null` is rejected, never thrown on); the
 * message names the option as `EmulatorEndpoint.parse` does (DESIGN section 3).
 *
 * @internal
 */
export const endpoint = (optionName: string): Rule<emulatorEndpoint.Endpoint> => (input) => {
  if (!Predicate.isString(input)) return no(`${optionName} must be host:port (a string), was ${describe(input)}`)
  const parsed = emulatorEndpoint.parse(input)
  return parsed === undefined ? no(emulatorEndpoint.message(optionName, input)) : ok(parsed)
}

/** @internal */
export const isEndpoint = (u: unknown): u is emulatorEndpoint.Endpoint =>
  isRecord(u) && Predicate.isString(u.host) && Predicate.isNumber(u.port)

/**
 * A secret path: a `Redacted` string, not blank. A plain string is rejected (the type says
 * `Redacted`; a path in a message or log is what it prevents), and no message shows the value.
 *
 * @internal
 */
export const redactedPath: Rule<Redacted.Redacted<string>> = (input) => {
  if (!Redacted.isRedacted(input)) {
    return no(
      Predicate.isString(input)
        ? "must be a Redacted path (Redacted.make or Config.Redacted), was a plain string"
        : `must be a Redacted path (Redacted.make or Config.Redacted), was ${describe(input)}`
    )
  }
  const value: unknown = Redacted.value(input)
  if (!Predicate.isString(value)) return no("must be a Redacted string")
  return value.trim().length === 0 ? no("must not be blank") : ok(Redacted.make(value))
}

/** @internal */
export const isRedacted = (u: unknown): u is Redacted.Redacted<string> => Redacted.isRedacted(u)
