/**
 * Backoff of the reference `RetrySchedule` (section 1.3) as pure arithmetic and as an Effect
 * `Schedule`, and the one way behaviour code runs a `RetryPolicy`: through its `Schedule`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Pull from "effect/Pull"
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
 * A policy run by hand, for loops whose retries are not one `Effect.retry` (a budget shared by
 * several kinds of failure): each call of the returned `next(failure)` sleeps the schedule's next
 * delay and returns `true`, or returns `false` at once when the budget is spent. One driver per
 * budget run; `failure` is the schedule's input.
 *
 * @internal
 */
export const driver = (
  policy: AnyPolicy | Policy
): Effect.Effect<(failure: unknown) => Effect.Effect<boolean>> =>
  Effect.map(
    Schedule.toStepWithSleep(toSchedule(policy)),
    (step) => (failure: unknown) => step(failure).pipe(Effect.as(true), Pull.catchDone(() => Effect.succeed(false)))
  )

/**
 * The delay before attempt `attempt + 1` after `attempt` failed ones (1-based), read from the
 * policy's schedule stepped `attempt` times, or `None` once the schedule is done. For owners that
 * keep a per-item attempt count instead of one running schedule.
 *
 * @internal
 */
export const nthDelay = (
  policy: AnyPolicy | Policy,
  attempt: number
): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(toSchedule(policy))
    let now = 0
    let delay: Option.Option<Duration.Duration> = Option.none()
    for (let i = 0; i < Math.max(1, attempt); i++) {
      const next = yield* step(now, undefined).pipe(
        Effect.map(([, d]) => Option.some(d)),
        Pull.catchDone(() => Effect.succeed(Option.none<Duration.Duration>())),
        Effect.orElseSucceed(() => Option.none<Duration.Duration>())
      )
      if (Option.isNone(next)) return next
      delay = next
      now += Duration.toMillis(next.value)
    }
    return delay
  })

/**
 * The attempts a policy allows, for messages and per-item budgets: `maxAttempts` of a backoff,
 * unbounded for a caller's schedule (whose end {@link nthDelay} reports).
 *
 * @internal
 */
export const attemptBudget = (policy: AnyPolicy | Policy): number =>
  "_tag" in policy && policy._tag === "FromSchedule" ? Number.POSITIVE_INFINITY : policy.maxAttempts

/**
 * The jittered wait after failed attempt `attempt` for owners that count attempts themselves and
 * check {@link attemptBudget}: a backoff's delay (no budget check), or a caller's schedule stepped
 * to that attempt (`None` once it is done).
 *
 * @internal
 */
export const delayAfter = (
  policy: AnyPolicy | Policy,
  attempt: number
): Effect.Effect<Option.Option<Duration.Duration>> =>
  "_tag" in policy && policy._tag === "FromSchedule"
    ? nthDelay(policy, attempt)
    : Effect.map(Random.next, (u) => Option.some(Duration.millis(delayMillis(policy, attempt, u))))
