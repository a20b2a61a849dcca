/**
 * Option decoding with plain `Schema`: the few leaf schemas the options share
 * (bounded integers, durations, resource id components, values the caller built), each built from
 * `Schema`'s own types and checks, and the mapping of a `Schema` issue to a `SinkConfigError` whose
 * path is the option as the user wrote it (`writeMethod.maxInFlightBytes`).
 *
 * Messages come from annotations, so that every check names its rule and the value given:
 * - `expected: "at least 1"` on a type or a check reads `must be at least 1, was 0`;
 * - `rule: "must not contain '/'"` on a check reads `must not contain '/', was 'a/b'`;
 * - `message` is the message as is (no value: `must not be blank`).
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
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as emulatorEndpoint from "../wire/emulatorEndpoint.ts"
import * as suggest from "./suggest.ts"

/** A short, safe rendering of a rejected value for an error message. @internal */
export const describe = (value: unknown): string => {
  if (value === undefined) return "undefined"
  if (value === null) return "null"
  if (Predicate.isString(value)) return `'${value.length > 64 ? `${value.slice(0, 64)}...` : value}'`
  if (Predicate.isNumber(value) || Predicate.isBoolean(value) || Predicate.isBigInt(value)) return String(value)
  if (Duration.isDuration(value)) return Duration.format(value)
  return Array.isArray(value) ? "an array" : `a value of type ${typeof value}`
}

/** The parse options of every option decode: all keys known, first error reported. @internal */
export const parseOptions: SchemaAST.ParseOptions = { errors: "first", onExcessProperty: "error", reportInput: true }

/** @internal */
export const isRecord = (u: unknown): u is Record<string, unknown> => Predicate.isObject(u) && !Array.isArray(u)

/** An issue with `message` as is, about `input`. @internal */
export const invalid = (message: string, input?: unknown): SchemaIssue.Issue =>
  new SchemaIssue.InvalidValue({ message }, input)

/** A value the caller built, checked by a guard; `expected` names it in the message. @internal */
export const guard = <A>(is: (u: unknown) => u is A, expected: string) => Schema.declare(is, { expected })

/**
 * An integer within bounds (`NaN`, infinities and fractions rejected); `sentinel` is allowed too.
 *
 * @internal
 */
export const Int = (
  bounds: { readonly min: number; readonly max?: number | undefined; readonly sentinel?: number | undefined }
) => {
  const range = bounds.max === undefined ? `at least ${bounds.min}` : `between ${bounds.min} and ${bounds.max}`
  const expected = bounds.sentinel === undefined ? range : `${range} (or ${bounds.sentinel})`
  const max = bounds.max ?? Number.MAX_SAFE_INTEGER
  return Schema.Number.annotate({ expected: "an integer" }).check(
    Schema.makeFilter((n: number) => Number.isInteger(n), { expected: "an integer" }),
    Schema.isInt({ expected: "a safe integer (at most 2^53 - 1)" }),
    bounds.sentinel === undefined
      ? Schema.isBetween({ minimum: bounds.min, maximum: max }, { expected })
      : Schema.makeFilter((n: number) => n === bounds.sentinel || (n >= bounds.min && n <= max), { expected })
  )
}

/** A finite number of at least `min` (`NaN` and infinities rejected). @internal */
export const FiniteAtLeast = (min: number) => {
  const expected = `a finite number of at least ${min}`
  return Schema.Number.annotate({ expected }).check(
    Schema.isFinite({ expected }),
    Schema.isGreaterThanOrEqualTo(min, { expected })
  )
}

/** @internal */
export const Bool = Schema.Boolean.annotate({ expected: "a boolean" })

const isNotBlank = Schema.makeFilter((s: string) => s.trim().length > 0, { message: "must not be blank" })

/** A value forwarded as is (app profile, location): a string, not blank. @internal */
export const NotBlank = Schema.String.annotate({ expected: "a string" }).check(isNotBlank)

/**
 * A resource id component (project, dataset, instance, table): a string, not blank, no surrounding
 * whitespace, no `/`.
 *
 * @internal
 */
export const Component = Schema.String.annotate({ expected: "a string" }).check(
  isNotBlank,
  Schema.isTrimmed({ rule: "must not have leading or trailing whitespace" }),
  Schema.makeFilter((s: string) => !s.includes("/"), { rule: "must not contain '/'" })
)

/**
 * A check of a value the caller built (a table destination: `new` skips `make`'s checks): each of
 * `keys` is a {@link Component}, the first that is not named in the path.
 *
 * @internal
 */
export const hasComponents = <K extends string>(keys: ReadonlyArray<K>) =>
  Schema.makeFilter((value: { readonly [key in K]: unknown }) => {
    for (const key of keys) {
      const decoded = Schema.decodeUnknownResult(Component)(value[key], parseOptions)
      if (Result.isFailure(decoded)) return { path: [key], issue: decoded.failure.issue }
    }
    return undefined
  })

/**
 * The cross-field rule of every client's settings: an emulator takes no credentials, so a key file
 * given with one is a mistake, named at `serviceAccountKeyFile` with `why`.
 *
 * @internal
 */
export const noKeyFileWithEmulator = (why: string) =>
  Schema.makeFilter((c: { readonly serviceAccountKeyFile: unknown; readonly emulator: unknown }) =>
    c.emulator === undefined || c.serviceAccountKeyFile === undefined ||
    { path: ["serviceAccountKeyFile"], issue: `cannot be combined with emulator: ${why}` }
  )

/** One of the given string literals. @internal */
export const literals = <const L extends ReadonlyArray<string>>(values: L) =>
  Schema.Literals(values).annotate({ expected: values.join(" or ") })

/**
 * How small a duration may be:
 * - `positive`: greater than zero;
 * - `atLeastOneMilli`: at least 1 ms, because the value is used at millisecond granularity.
 *
 * @internal
 */
export type DurationRule = "positive" | "atLeastOneMilli"

const maxNanos = 9_223_372_036_854_775_807n

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

/** Every number inside a duration input (a number, an hrtime pair, a duration object) is finite. */
const finiteParts = (input: Duration.Input): boolean => {
  if (Predicate.isNumber(input)) return Number.isFinite(input)
  if (Array.isArray(input)) return input.every((n) => !Predicate.isNumber(n) || Number.isFinite(n))
  if (Predicate.isObject(input) && !Duration.isDuration(input)) {
    return Object.values(input).every((n) => !Predicate.isNumber(n) || Number.isFinite(n))
  }
  return true
}

/**
 * A `Duration.Input` (`"1 second"`, millis, a `Duration`, ...) decoded to a finite `Duration`:
 * `NaN` and infinities are rejected whatever their spelling (`Duration.fromInput(NaN)` is 0 in
 * effect 4.1, which would pass a "0 = none" rule), and so is what nanoseconds cannot express.
 */
const DurationFromInput = Schema.declare(isDurationInput, { expected: "a duration" }).pipe(
  Schema.decodeTo(
    Schema.Duration,
    SchemaTransformation.transformEffect({
      decode: (input) => {
        if (!finiteParts(input)) return Effect.fail(invalid(`must be a finite duration, was ${describe(input)}`))
        const decoded = Duration.fromInput(input)
        if (decoded._tag === "None") return Effect.fail(invalid(`must be a duration, was ${describe(input)}`))
        const nanos = Duration.toNanos(decoded.value)
        return nanos._tag === "None" || nanos.value > maxNanos
          ? Effect.fail(invalid("must be finite and expressible in nanoseconds (at most about 292 years)"))
          : Effect.succeed(decoded.value)
      },
      encode: (d: Duration.Duration) => Effect.succeed<Duration.Input>(d)
    })
  )
)

const nanosOf = (d: Duration.Duration): bigint => Duration.toNanosUnsafe(d)

/** A finite duration (see `DurationFromInput`) within `rule`. @internal */
export const DurationSchema = (rule: DurationRule) =>
  DurationFromInput.check(
    rule === "positive"
      ? Schema.makeFilter((d: Duration.Duration) => nanosOf(d) > 0n, { expected: "positive" })
      : Schema.makeFilter((d: Duration.Duration) => nanosOf(d) >= 1_000_000n, { expected: "at least 1 ms" })
  )

/** A field that is `value` when absent or `undefined`. @internal */
export const withDefault = <S extends Schema.Top>(value: S["Type"]) =>
  Schema.withDecodingDefaultType<S>(Effect.succeed(value))

/** A field whose absence stays `undefined` (a key of the decoded value, unlike `Schema.optional`). @internal */
export const maybe = <S extends Schema.Top>(schema: S) =>
  Schema.UndefinedOr(schema).pipe(Schema.withDecodingDefaultType(Effect.undefined))

/**
 * A required field whose absence is decoded as `undefined`, so that `schema`'s own message names the
 * rule (`must be a function, was undefined`) rather than a bare "is required".
 *
 * @internal
 */
export const requiredValue = <S extends Schema.Top>(schema: S) =>
  Schema.Unknown.pipe(
    Schema.decodeTo(schema, SchemaTransformation.passthroughSupertype<S["Encoded"], unknown>()),
    Schema.withDecodingDefaultKey(Effect.undefined)
  )

const isEndpoint = (u: unknown): u is emulatorEndpoint.Endpoint =>
  isRecord(u) && Predicate.isString(u.host) && Predicate.isNumber(u.port)

/**
 * A `host:port` emulator endpoint (a string: `8086` or `null` is rejected, never thrown on), with
 * the message of `EmulatorEndpoint.parse`.
 *
 * @internal
 */
export const Endpoint = Schema.Unknown.pipe(Schema.decodeTo(
  Schema.declare(isEndpoint),
  SchemaTransformation.transformEffect({
    decode: (input) => {
      if (!Predicate.isString(input)) {
        return Effect.fail(invalid(`must be host:port (a string), was ${describe(input)}`))
      }
      const parsed = emulatorEndpoint.parse(input)
      return parsed === undefined
        ? Effect.fail(invalid(emulatorEndpoint.message(input)))
        : Effect.succeed(parsed)
    },
    encode: (e: emulatorEndpoint.Endpoint) => Effect.succeed<unknown>(`${e.host}:${e.port}`)
  })
))

const redactedExpected = "must be a Redacted path (Redacted.make or Config.Redacted)"

/**
 * A secret path: a `Redacted` string, not blank. A plain string is rejected (the type says
 * `Redacted`; a path in a message or log is what it prevents), and no message shows the value.
 *
 * @internal
 */
export const RedactedPath = Schema.Unknown.pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is Redacted.Redacted<string> => Redacted.isRedacted(u)),
  SchemaTransformation.transformEffect({
    decode: (input) => {
      if (!Redacted.isRedacted(input)) {
        const was = Predicate.isString(input) ? "a plain string" : describe(input)
        return Effect.fail(invalid(`${redactedExpected}, was ${was}`))
      }
      const value: unknown = Redacted.value(input)
      if (!Predicate.isString(value)) return Effect.fail(invalid("must be a Redacted string"))
      return value.trim().length === 0
        ? Effect.fail(invalid("must not be blank"))
        : Effect.succeed(Redacted.make(value))
    },
    encode: (r: Redacted.Redacted<string>) => Effect.succeed<unknown>(r)
  })
))

const annotation = (annotations: Schema.Annotations.Annotations | undefined, key: string): string | undefined => {
  const value = annotations?.[key]
  return Predicate.isString(value) ? value : undefined
}

/** The message of annotations (see the module comment), about `input`. */
const annotated = (annotations: Schema.Annotations.Annotations | undefined, input: unknown): string | undefined => {
  const message = annotation(annotations, "message")
  if (message !== undefined) return message
  const rule = annotation(annotations, "rule")
  if (rule !== undefined) return `${rule}, was ${describe(input)}`
  const expected = annotation(annotations, "expected")
  return expected === undefined ? undefined : `must be ${expected}, was ${describe(input)}`
}

const inputOf = (issue: SchemaIssue.Issue): unknown => SchemaIssue.hasInput(issue) ? issue.input : undefined

/** A type mismatch: the schema's `expected`, or, for a union with `undefined` (an optional field), its member's. */
const typeMessage = (ast: SchemaAST.AST, input: unknown): string => {
  const types = SchemaAST.isUnion(ast) ? ast.types.filter((t) => !SchemaAST.isUndefined(t)) : [ast]
  const [only] = types
  const own = annotated(ast.annotations, input)
  if (own !== undefined) return own
  if (types.length === 1 && only !== undefined && only !== ast) return typeMessage(only, input)
  return `must be an object, was ${describe(input)}`
}

/** The options a struct accepts: its property names. */
const optionNames = (ast: SchemaAST.AST): ReadonlyArray<string> =>
  SchemaAST.isObjects(ast) ? ast.propertySignatures.map((p) => String(p.name)) : []

const leafMessage = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): string => {
  switch (issue._tag) {
    case "MissingKey":
      return "is required"
    case "UnexpectedKey":
      return suggest.unknownKey(String(path.at(-1) ?? ""), optionNames(issue.ast))
    case "InvalidType":
      return typeMessage(issue.ast, issue.input)
    case "InvalidValue":
      return annotated(issue.annotations, issue.input) ?? "is invalid"
    default:
      return "is invalid"
  }
}

type First = { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }

/** The first issue of a tree, with its path and message. */
const first = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): First => {
  switch (issue._tag) {
    case "Filter": {
      const message = annotated(issue.filter.annotations, inputOf(issue))
      return message === undefined ? first(issue.issue, path) : { path, message }
    }
    case "Encoding":
      return first(issue.issue, path)
    case "Pointer":
      return first(issue.issue, [...path, ...issue.path])
    case "Composite":
      return first(issue.issues[0], path)
    case "AnyOf": {
      const [head] = issue.issues
      return head === undefined ? { path, message: typeMessage(issue.ast, inputOf(issue)) } : first(head, path)
    }
    default:
      return { path, message: leafMessage(issue, path) }
  }
}

const renderPath = (prefix: string, path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => {
    if (Predicate.isNumber(key)) return `${acc}[${key}]`
    const name = String(key)
    return acc.length === 0 ? name : `${acc}.${name}`
  }, prefix)

/**
 * The first issue of a failed decode as a `SinkConfigError`: its path is `prefix` followed by the
 * issue's path (`writeMethod` + `["retry", "maxAttempts"]` = `writeMethod.retry.maxAttempts`).
 *
 * @internal
 */
export const toConfigError = (prefix: string) => (issue: SchemaIssue.Issue): SinkConfigError => {
  const found = first(issue, [])
  const path = renderPath(prefix, found.path)
  return new SinkConfigError({ path: path.length === 0 ? "options" : path, detail: found.message })
}

/**
 * Decodes `input` with `schema`, failing with a `SinkConfigError` whose path starts at `prefix`
 * (empty for a top-level options object).
 *
 * @internal
 */
export const decode = <A, RD>(schema: Schema.Decoder<A, RD>, prefix = "") => (input: unknown) =>
  Effect.mapError(
    Schema.decodeUnknownEffect(schema)(input, parseOptions),
    (error) => toConfigError(prefix)(error.issue)
  )

/** Decodes a nested value inside a transformation, its issues' paths kept. @internal */
export const decodeIssue = <A, RD>(schema: Schema.Decoder<A, RD>) => (input: unknown) =>
  Effect.mapError(Schema.decodeUnknownEffect(schema)(input, parseOptions), (error) => error.issue)

/** @internal */
export const fail = (path: string, message: string): Effect.Effect<never, SinkConfigError> =>
  Effect.fail(new SinkConfigError({ path, detail: message }))

/** A value decoded by `schema` at `path`, failing with a `SinkConfigError`. @internal */
export const decodeAt = <A>(path: string, schema: Schema.Decoder<A>, input: unknown) => decode(schema, path)(input)
