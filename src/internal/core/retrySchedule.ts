/**
 * Backoff of the reference `RetrySchedule` (section 1.3) as pure arithmetic and as an Effect
 * `Schedule`, and the one way behaviour code runs a `RetryPolicy`: through its `Schedule`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"

/** Project-wide jitter: each delay is scaled by a uniform factor in [0.75, 1.25]. @internal */
export const jitter = 0.25

/** The default growth of each wait over the previous one. @internal */
export const defaultMultiplier = 2

/** Bounded exponential backoff, the arithmetic part of a `RetryPolicy.Backoff`. @internal */
export interface Policy {
  readonly initialBackoff: Duration.Duration
  readonly maxBackoff: Duration.Duration
  readonly maxAttempts: number
  /** Growth per attempt, at least 1; default 2. */
  readonly multiplier?: number | undefined
  /** A bound on the time spent retrying; `undefined` = none. */
  readonly maxDuration?: Duration.Duration | undefined
}

/** A policy: bounded exponential backoff, or a caller's `Schedule`. @internal */
export type AnyPolicy =
  | (Policy & { readonly _tag: "Backoff" })
  | { readonly _tag: "FromSchedule"; readonly schedule: Schedule.Schedule<unknown, unknown> }

/**
 * The delay in milliseconds after failed attempt `attempt` (1-based), given a uniform sample
 * `u` in [0, 1): the initial backoff times `multiplier^(attempt-1)`, capped at the maximum, then
 * scaled by `1 - jitter + 2 * jitter * u`, and never below 1 ms.
 *
 * @internal
 */
export const delayMillis = (policy: Policy, attempt: number, u: number): number => {
  const initial = Duration.toMillis(policy.initialBackoff)
  const max = Duration.toMillis(policy.maxBackoff)
  const exponent = Math.max(0, attempt - 1)
  // multiplier^1024 overflows to Infinity, which the cap turns back into max.
  const base = Math.min(initial * Math.pow(policy.multiplier ?? defaultMultiplier, exponent), max)
  const factor = 1 - jitter + 2 * jitter * u
  return Math.max(1, base * factor)
}

/**
 * A schedule allowing `maxAttempts` attempts in all (so `maxAttempts - 1` retries), and no retry
 * once `maxDuration` has passed since the first; its output is the delay before the next attempt.
 *
 * @internal
 */
export const backoffSchedule = (policy: Policy): Schedule.Schedule<Duration.Duration, unknown> =>
  Schedule.forever.pipe(
    Schedule.upTo(
      policy.maxDuration === undefined
        ? { times: Math.max(0, policy.maxAttempts - 1) }
        : { times: Math.max(0, policy.maxAttempts - 1), duration: policy.maxDuration }
    ),
    Schedule.modifyDelay(({ attempt }) =>
      Effect.map(Random.next, (u) => Duration.millis(delayMillis(policy, attempt, u)))
    ),
    Schedule.map(({ duration }) => duration)
  )

/** The schedule of any policy: the backoff's, or the caller's own. @internal */
export const toSchedule = (policy: AnyPolicy | Policy): Schedule.Schedule<unknown, unknown> =>
  "_tag" in policy && policy._tag === "FromSchedule" ? policy.schedule : backoffSchedule(policy)

/**
/**
 * `schedule` stepped with `f(input)`: a retry whose own failure is an internal wrapper still hands the
 * caller's schedule the typed failure its policy promises (`RetryPolicy.fromSchedule`: the failure
 * being retried is the input).
 *
 * @internal
 */
export const mapInput = <Output, Input, Next>(
  schedule: Schedule.Schedule<Output, Input>,
  f: (input: Next) => Input
): Schedule.Schedule<Output, Next> =>
  Schedule.fromStep(Effect.map(Schedule.toStep(schedule), (step) => (now: number, input: Next) => step(now, f(input))))

/**
 * The schedule of `policy`, fed `typed(failure)` for each failure a loop retries on: whatever the
 * loop's own error (an internal wrapper, a transport failure), the policy's schedule sees the typed
 * error the write ends with if it stops there, as `RetryPolicy.fromSchedule` promises a caller's
 * schedule.
 *
 * @internal
 */
export const toScheduleOf = <In>(
  policy: AnyPolicy | Policy,
  typed: (failure: In) => unknown
): Schedule.Schedule<unknown, In> => mapInput(toSchedule(policy), typed)
