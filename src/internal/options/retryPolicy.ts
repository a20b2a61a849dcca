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
import type { RetryPolicy, RetryPolicyOptions } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import { defaultMultiplier } from "../core/retrySchedule.ts"
import * as O from "./schema.ts"

const isBackoffTag = (u: unknown): u is "Backoff" => u === "Backoff"

/** The fields of `RetryPolicyOptions` (and of a `Backoff` value), validated one by one. */
const OptionsFields = Schema.Struct({
  _tag: O.maybe(isBackoffTag, O.literal(["Backoff"])),
  initialBackoff: O.leaf(O.isDuration, O.duration("atLeastOneMilli")),
  maxBackoff: O.leaf(O.isDuration, O.duration("atLeastOneMilli")),
  maxAttempts: O.leaf(O.isNumber, O.integer({ min: 1 })),
  multiplier: O.optional(O.isNumber, O.finiteAtLeast(1), defaultMultiplier),
  maxDuration: O.maybe(O.isDuration, O.duration("atLeastOneMilli"))
})

/** The options schema: every required field present, `maxBackoff` at least `initialBackoff`. */
const BackoffSchema = OptionsFields.pipe(
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

/**
 * A `retry` / `recovery` option as a schema: `undefined` is `fallback`; a `RetryPolicy.fromSchedule`
 * value must hold a `Schedule`; options (or a `Backoff` value, checked again: it may be hand-built)
 * are validated field by field.
 *
 * @internal
 */
export const schema = (fallback: RetryPolicy) =>
  O.fromEffect(isRetryPolicy, (input, options) => {
    if (input === undefined) return Effect.succeed(fallback)
    if (!O.isRecord(input)) {
      return Effect.fail(
        new SchemaIssue.InvalidValue({
          message: `must be RetryPolicyOptions or a RetryPolicy, was ${O.describe(input)}`
        }, input)
      )
    }
    if (input._tag === "FromSchedule") {
      return isRetryPolicy(input)
        ? Effect.succeed<RetryPolicy>(input)
        : Effect.fail(
          new SchemaIssue.Pointer(
            ["schedule"],
            new SchemaIssue.InvalidValue({
              message: `must be a Schedule (RetryPolicy.fromSchedule), was ${O.describe(input.schedule)}`
            }, input.schedule)
          )
        )
    }
    return Effect.mapBoth(Schema.decodeUnknownEffect(BackoffSchema)(input, options), {
      onFailure: (error) => error.issue,
      onSuccess: toBackoff
    })
  })

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
