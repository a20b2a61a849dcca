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

/** @internal */
export interface Policy {
  readonly initialBackoff: Duration.Duration
  readonly maxBackoff: Duration.Duration
  readonly maxAttempts: number
}

/**
 * The delay in milliseconds after failed attempt `attempt` (1-based), given a uniform sample
 * `u` in [0, 1): the initial backoff doubled per attempt, capped at the maximum, then scaled by
 * `1 - jitter + 2 * jitter * u`, and never below 1 ms.
 *
 * @internal
 */
export const delayMillis = (policy: Policy, attempt: number, u: number): number => {
  const initial = Duration.toMillis(policy.initialBackoff)
  const max = Duration.toMillis(policy.maxBackoff)
  const exponent = Math.max(0, attempt - 1)
  // 2^1024 overflows to Infinity, which the cap turns back into max.
  const base = Math.min(initial * Math.pow(2, exponent), max)
  const factor = 1 - jitter + 2 * jitter * u
  return Math.max(1, base * factor)
}

/**
 * A schedule allowing `maxAttempts` attempts in all (so `maxAttempts - 1` retries); its output is
 * the delay before the next attempt.
 *
 * @internal
 */
export const toSchedule = (policy: Policy): Schedule.Schedule<Duration.Duration, unknown> =>
  Schedule.forever.pipe(
    Schedule.upTo({ times: Math.max(0, policy.maxAttempts - 1) }),
    Schedule.modifyDelay(({ attempt }) =>
      Effect.map(Random.next, (u) => Duration.millis(delayMillis(policy, attempt, u)))
    ),
    Schedule.map(({ duration }) => duration)
  )
