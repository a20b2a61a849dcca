/**
 * Decoding `RetryPolicyOptions` (and policies built elsewhere) with `Schema` into a validated
 * `RetryPolicy`, errors naming the option under its path (`writeMethod.retry.initialBackoff`).
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { RetryPolicy, RetryPolicyOptions } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import { defaultMultiplier } from "../core/retrySchedule.ts"
import * as O from "./schema.ts"

/**
 * `RetryPolicyOptions` (and a `Backoff` value): every required field present, `maxBackoff` at least
 * `initialBackoff`.
 */
const BackoffSchema = Schema.Struct({
  _tag: O.maybe(O.literals(["Backoff"])),
  initialBackoff: O.DurationSchema("atLeastOneMilli"),
  maxBackoff: O.DurationSchema("atLeastOneMilli"),
  maxAttempts: O.Int({ min: 1 }),
  multiplier: O.FiniteAtLeast(1).pipe(O.withDefault(defaultMultiplier)),
  maxDuration: O.maybe(O.DurationSchema("atLeastOneMilli"))
}).pipe(
  Schema.check(Schema.makeFilter((o) =>
    Duration.isLessThan(o.maxBackoff, o.initialBackoff)
      ? {
        path: ["maxBackoff"],
        issue: `must be at least initialBackoff (${Duration.format(o.initialBackoff)}), was ${
          Duration.format(o.maxBackoff)
        }`
      }
      : undefined
  ))
)

const toBackoff = (o: typeof BackoffSchema.Type): RetryPolicy.Backoff => ({
  _tag: "Backoff",
  initialBackoff: o.initialBackoff,
  maxBackoff: o.maxBackoff,
  maxAttempts: o.maxAttempts,
  multiplier: o.multiplier,
  maxDuration: o.maxDuration
})

/** `RetryPolicy.isRetryPolicy`: a `FromSchedule` holding a `Schedule`, or a `Backoff`. @internal */
export const isRetryPolicy = (u: unknown): u is RetryPolicy =>
  Predicate.isObject(u) && "_tag" in u &&
  ((u._tag === "FromSchedule" && "schedule" in u && Schedule.isSchedule(u.schedule)) ||
    (u._tag === "Backoff" && "initialBackoff" in u && Duration.isDuration(u.initialBackoff)))

const decodePolicy = (input: unknown): Effect.Effect<RetryPolicy, SchemaIssue.Issue> => {
  if (!O.isRecord(input)) {
    return Effect.fail(O.invalid(`must be RetryPolicyOptions or a RetryPolicy, was ${O.describe(input)}`, input))
  }
  if (input._tag === "FromSchedule") {
    return isRetryPolicy(input)
      ? Effect.succeed<RetryPolicy>(input)
      : Effect.fail(
        new SchemaIssue.Pointer(
          ["schedule"],
          O.invalid(`must be a Schedule (RetryPolicy.fromSchedule), was ${O.describe(input.schedule)}`)
        )
      )
  }
  return Effect.map(O.decodeIssue(BackoffSchema)(input), toBackoff)
}

/**
 * A `retry` / `recovery` option as a schema: `undefined` is `fallback`; a `RetryPolicy.fromSchedule`
 * value must hold a `Schedule`; options (or a `Backoff` value, checked again: it may be hand-built)
 * are validated field by field.
 *
 * @internal
 */
export const schema = (fallback: RetryPolicy) =>
  Schema.Unknown.pipe(
    Schema.decodeTo(
      Schema.declare(isRetryPolicy),
      SchemaTransformation.transformEffect({
        decode: decodePolicy,
        encode: (p: RetryPolicy) => Effect.succeed<unknown>(p)
      })
    ),
    O.withDefault(fallback)
  )

/** @internal */
export const make = (options: RetryPolicyOptions, path: string): Effect.Effect<RetryPolicy.Backoff, SinkConfigError> =>
  Effect.map(O.decode(BackoffSchema, path)(options), toBackoff)

/** A `Backoff` from trusted values (defaults). @internal */
export const backoff = (o: {
  readonly initialBackoff: Duration.Duration
  readonly maxBackoff: Duration.Duration
  readonly maxAttempts: number
  readonly multiplier?: number | undefined
  readonly maxDuration?: Duration.Duration | undefined
}): RetryPolicy.Backoff => ({
  _tag: "Backoff",
  initialBackoff: o.initialBackoff,
  maxBackoff: o.maxBackoff,
  maxAttempts: o.maxAttempts,
  multiplier: o.multiplier ?? defaultMultiplier,
  maxDuration: o.maxDuration
})
