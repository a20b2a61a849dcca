/**
 * Bounded exponential backoff with jitter, validated and turned into an Effect `Schedule`.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Schedule from "effect/Schedule"
import * as check from "../internal/optionChecks.ts"
import * as internal from "../internal/retrySchedule.ts"
import type { SinkConfigError } from "./SinkConfigError.ts"

/**
 * A validated retry policy: at most `maxAttempts` attempts in all, waiting `initialBackoff` after
 * the first failure, doubling per attempt up to `maxBackoff`, each wait scaled by a random factor
 * in [0.75, 1.25] (±25 %, mean-preserving, never below 1 ms).
 *
 * @category models
 * @since 0.1.0
 */
export interface RetryPolicy {
  readonly initialBackoff: Duration.Duration
  readonly maxBackoff: Duration.Duration
  readonly maxAttempts: number
}

/**
 * The options of {@link RetryPolicy.make}.
 *
 * - `initialBackoff`: the first wait; at least 1 ms.
 * - `maxBackoff`: the cap on any wait; at least 1 ms and at least `initialBackoff`.
 * - `maxAttempts`: attempts in all, the first included; an integer of at least 1 (1 means no retry).
 *
 * @category models
 * @since 0.1.0
 */
export interface RetryPolicyOptions {
  readonly initialBackoff: Duration.Input
  readonly maxBackoff: Duration.Input
  readonly maxAttempts: number
}

/**
 * Validates options into a {@link RetryPolicy}.
 *
 * **Details**
 *
 * Errors are `SinkConfigError`s whose path is `path` (default `"retry"`) followed by the field,
 * so a policy nested in a sink's options reports `writerOptions.retry.maxAttempts`.
 *
 * **Example** (A policy of five attempts)
 * ```ts
 * import { Effect } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * const policy = Effect.runSync(RetryPolicy.make({ initialBackoff: "100 millis", maxBackoff: "5 seconds", maxAttempts: 5 }))
 * policy.maxAttempts
 * // => 5
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const make = (options: RetryPolicyOptions, path = "retry"): Effect.Effect<RetryPolicy, SinkConfigError> =>
  Effect.gen(function*() {
    const initialBackoff = yield* check.duration(`${path}.initialBackoff`, options.initialBackoff, "atLeastOneMilli")
    const maxBackoff = yield* check.duration(`${path}.maxBackoff`, options.maxBackoff, "atLeastOneMilli")
    if (Duration.isLessThan(maxBackoff, initialBackoff)) {
      return yield* check.fail(
        `${path}.maxBackoff`,
        `must be at least initialBackoff (${Duration.format(initialBackoff)}), was ${Duration.format(maxBackoff)}`
      )
    }
    const maxAttempts = yield* check.integer(`${path}.maxAttempts`, options.maxAttempts, { min: 1 })
    return { initialBackoff, maxBackoff, maxAttempts }
  })

/**
 * Turns a policy into a `Schedule` for `Effect.retry`: it recurs `maxAttempts - 1` times, so the
 * retried effect runs at most `maxAttempts` times; its output is the delay before the next attempt.
 *
 * **Example** (Retrying a flaky call)
 * ```ts
 * import { Effect } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * declare const policy: RetryPolicy
 * declare const call: Effect.Effect<string, Error>
 * const retried = call.pipe(Effect.retry(RetryPolicy.toSchedule(policy)))
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
const toSchedule: (policy: RetryPolicy) => Schedule.Schedule<Duration.Duration, unknown> = internal.toSchedule

/**
 * The wait after failed attempt `attempt` (1-based) before jitter: `initialBackoff * 2^(attempt-1)`
 * capped at `maxBackoff`. The actual wait is this times a factor in [0.75, 1.25].
 *
 * **Example** (The third wait)
 * ```ts
 * import { Duration } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * declare const policy: RetryPolicy // 100 ms .. 5 s
 * Duration.toMillis(RetryPolicy.baseDelay(policy, 3))
 * // => 400
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
const baseDelay = (policy: RetryPolicy, attempt: number): Duration.Duration =>
  Duration.millis(internal.delayMillis({ ...policy }, attempt, 0.5))

/**
 * Returns a copy of the policy with another attempt budget (not validated; use {@link RetryPolicy.make}
 * for untrusted values).
 *
 * @category combinators
 * @since 0.1.0
 */
const withMaxAttempts: {
  (maxAttempts: number): (self: RetryPolicy) => RetryPolicy
  (self: RetryPolicy, maxAttempts: number): RetryPolicy
} = dual(2, (self: RetryPolicy, maxAttempts: number): RetryPolicy => ({ ...self, maxAttempts }))

/**
 * Constructors and combinators of {@link RetryPolicy}.
 *
 * @category constructors
 * @since 0.1.0
 */
export const RetryPolicy: {
  readonly make: typeof make
  readonly toSchedule: typeof toSchedule
  readonly baseDelay: typeof baseDelay
  readonly withMaxAttempts: typeof withMaxAttempts
  /** The jitter applied to every wait: ±25 %. */
  readonly jitter: number
} = { make, toSchedule, baseDelay, withMaxAttempts, jitter: internal.jitter }
