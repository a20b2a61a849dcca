/**
 * Backoff of the reference `RetrySchedule` (section 1.3) as pure arithmetic and as an Effect `Schedule`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"

/** Project-wide jitter: each delay is scaled by a uniform factor in [0.75, 1.25]. @internal */
export const jitter = 0.25

/**
 * A retry budget: `maxAttempts` attempts in all, the waits growing by `multiplier` (default 2) from
 * `initialBackoff` up to `maxBackoff`, and no retry once `maxDuration` (default: no limit) has passed
 * since the first failure.
 *
 * @internal
 */
export interface Policy {
  readonly initialBackoff: Duration.Duration
  readonly maxBackoff: Duration.Duration
  readonly maxAttempts: number
  readonly multiplier?: number | undefined
  readonly maxDuration?: Duration.Duration | undefined
}

/**
 * The delay in milliseconds after failed attempt `attempt` (1-based), given a uniform sample
 * `u` in [0, 1): the initial backoff times `multiplier` (default 2) per attempt, capped at the maximum, then scaled by
 * `1 - jitter + 2 * jitter * u`, and never below 1 ms.
 *
 * @internal
 */
export const delayMillis = (policy: Policy, attempt: number, u: number): number => {
  const initial = Duration.toMillis(policy.initialBackoff)
  const max = Duration.toMillis(policy.maxBackoff)
  const exponent = Math.max(0, attempt - 1)
  // 2^1024 overflows to Infinity, which the cap turns back into max.
  const base = Math.min(initial * Math.pow(policy.multiplier ?? 2, exponent), max)
  const factor = 1 - jitter + 2 * jitter * u
  return Math.max(1, base * factor)
}

/**
 * A schedule allowing `maxAttempts` attempts in all (so `maxAttempts - 1` retries), and none past
 * `maxDuration` since its first step; its output is the delay before the next attempt.
 *
 * @internal
 */
export const toSchedule = (policy: Policy): Schedule.Schedule<Duration.Duration, unknown> =>
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
