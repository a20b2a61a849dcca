/**
 * Retry budgets: bounded exponential backoff with jitter, or a caller's own `Schedule`, both run
 * as an Effect `Schedule`. Every sink's `retry` and `recovery` option takes one.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Schedule from "effect/Schedule"
import * as retrySchedule from "../internal/core/retrySchedule.ts"
import * as internal from "../internal/options/retryPolicy.ts"
import type { SinkConfigError } from "./SinkConfigError.ts"

/**
 * A validated retry budget: {@link RetryPolicy.Backoff} or {@link RetryPolicy.FromSchedule}. Sinks run it only through
 * {@link RetryPolicy.toSchedule}.
 *
 * @category models
 * @since 0.1.0
 */
export type RetryPolicy = RetryPolicy.Backoff | RetryPolicy.FromSchedule

/**
 * The options of {@link RetryPolicy.make}, as the sinks' `retry` and `recovery` options take them.
 *
 * - `initialBackoff`: the first wait; at least 1 ms.
 * - `maxBackoff`: the cap on any wait; at least 1 ms and at least `initialBackoff`.
 * - `maxAttempts`: attempts in all, the first included; an integer of at least 1 (1 means no retry).
 * - `multiplier`: the growth of each wait over the previous one; a finite number of at least 1,
 *   default 2.
 * - `maxDuration`: no retry once this long has passed since the first failure; at least 1 ms,
 *   default none (only `maxAttempts` bounds the budget).
 *
 * `NaN` and infinities are rejected everywhere.
 *
 * @category models
 * @since 0.1.0
 */
export interface RetryPolicyOptions {
  readonly initialBackoff: Duration.Input
  readonly maxBackoff: Duration.Input
  readonly maxAttempts: number
  readonly multiplier?: number | undefined
  readonly maxDuration?: Duration.Input | undefined
}

/**
 * What a `retry` or `recovery` option takes: plain {@link RetryPolicyOptions} (validated when the
 * sink is built) or a {@link RetryPolicy} (such as `RetryPolicy.fromSchedule(schedule)`).
 *
 * @category models
 * @since 0.1.0
 */
export type RetryPolicyInput = RetryPolicyOptions | RetryPolicy

/**
 * Validates options into a {@link RetryPolicy.Backoff} policy.
 *
 * **Details**
 *
 * Errors are `SinkConfigError`s whose path is `path` (default `"retry"`) followed by the field,
 * so a policy nested in a sink's options reports `writeMethod.retry.maxAttempts`.
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
const make = (options: RetryPolicyOptions, path = "retry"): Effect.Effect<RetryPolicy.Backoff, SinkConfigError> =>
  internal.make(options, path)

/**
 * A policy running the caller's `Schedule`: each failure is its input, each of its delays the wait
 * before the next attempt, and the retries end when it ends.
 *
 * **Details**
 *
 * The input is the sink's typed error (a `BigQueryError`, a `BigtableError`) the write ends with if
 * the schedule stops there, so a schedule may read it and decide on it (`Schedule.while`).
 *
 * **When to use**
 *
 * When backoff with a cap and an attempt budget is not the shape you need: a fixed spacing, a
 * time window (`Schedule.during`), a predicate on the failure.
 *
 * **Example** (At most 3 retries, one second apart)
 * ```ts
 * import { Schedule } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * const policy = RetryPolicy.fromSchedule(Schedule.spaced("1 second").pipe(Schedule.upTo({ times: 3 })))
 * policy._tag
 * // => "FromSchedule"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const fromSchedule = <Out>(schedule: Schedule.Schedule<Out, unknown>): RetryPolicy.FromSchedule => ({
  _tag: "FromSchedule",
  schedule: Schedule.map(schedule, (out): unknown => out)
})

/**
 * Turns a policy into a `Schedule` for `Effect.retry`. For {@link RetryPolicy.Backoff} it recurs
 * `maxAttempts - 1` times (so the retried effect runs at most `maxAttempts` times), each output
 * being the delay before the next attempt; for {@link RetryPolicy.FromSchedule} it is the caller's schedule.
 *
 * **Example** (Retrying a flaky call)
 * ```ts
 * import { Effect } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * declare const policy: RetryPolicy.RetryPolicy
 * declare const call: Effect.Effect<string, Error>
 * const retried = call.pipe(Effect.retry(RetryPolicy.toSchedule(policy)))
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
const toSchedule: (policy: RetryPolicy) => Schedule.Schedule<unknown, unknown> = retrySchedule.toSchedule

/**
 * The wait of a {@link RetryPolicy.Backoff} policy after failed attempt `attempt` (1-based) before jitter:
 * `initialBackoff * multiplier^(attempt-1)` capped at `maxBackoff`. The actual wait is this times a
 * factor in [0.75, 1.25].
 *
 * **Example** (The third wait)
 * ```ts
 * import { Duration } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * declare const policy: RetryPolicy.Backoff // 100 ms .. 5 s, multiplier 2
 * Duration.toMillis(RetryPolicy.baseDelay(policy, 3))
 * // => 400
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
const baseDelay = (policy: RetryPolicy.Backoff, attempt: number): Duration.Duration =>
  Duration.millis(retrySchedule.delayMillis(policy, attempt, 0.5))

/**
 * Returns a copy of the policy with another attempt budget (not validated; use
 * {@link RetryPolicy.make} for untrusted values). A {@link RetryPolicy.FromSchedule} policy also stops after
 * `maxAttempts - 1` retries.
 *
 * **Example** (One attempt only)
 * ```ts
 * import { Effect } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * const policy = Effect.runSync(RetryPolicy.make({ initialBackoff: 10, maxBackoff: 100, maxAttempts: 5 }))
 * RetryPolicy.withMaxAttempts(policy, 1).maxAttempts
 * // => 1
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
const withMaxAttempts: {
  (maxAttempts: number): <P extends RetryPolicy>(self: P) => P
  <P extends RetryPolicy>(self: P, maxAttempts: number): P
} = dual(2, <P extends RetryPolicy>(self: P, maxAttempts: number): P =>
  self._tag === "Backoff"
    ? { ...self, maxAttempts }
    : { ...self, schedule: Schedule.upTo(self.schedule, { times: Math.max(0, maxAttempts - 1) }) })

/**
 * Tells whether a value is a {@link RetryPolicy}.
 *
 * **Example** (Telling a policy from plain options)
 * ```ts
 * import { Schedule } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * RetryPolicy.isRetryPolicy(RetryPolicy.fromSchedule(Schedule.recurs(2)))
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
const isRetryPolicy: (u: unknown) => u is RetryPolicy = internal.isRetryPolicy

/**
 * Constructors and combinators of {@link RetryPolicy}; its namespace also names the variants
 * (`RetryPolicy.Backoff`, `RetryPolicy.FromSchedule`) and the option types.
 *
 * **Example** (A policy and its schedule)
 * ```ts
 * import { Effect } from "effect"
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * const policy = RetryPolicy.make({ initialBackoff: "100 millis", maxBackoff: "5 seconds", maxAttempts: 5 })
 * Effect.runSync(Effect.map(policy, RetryPolicy.withMaxAttempts(3))).maxAttempts
 * // => 3
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const RetryPolicy: {
  readonly make: typeof make
  readonly fromSchedule: typeof fromSchedule
  readonly toSchedule: typeof toSchedule
  readonly baseDelay: typeof baseDelay
  readonly withMaxAttempts: typeof withMaxAttempts
  readonly isRetryPolicy: typeof isRetryPolicy
  /** The jitter applied to every wait of a {@link RetryPolicy.Backoff} policy: ±25 %. */
  readonly jitter: number
} = { make, fromSchedule, toSchedule, baseDelay, withMaxAttempts, isRetryPolicy, jitter: retrySchedule.jitter }

/**
 * The variants of {@link RetryPolicy} and the option types, also reachable through the
 * `effect-gcp-sinks/Sink` barrel (`RetryPolicy.Backoff`).
 *
 * **Example** (Telling the variants apart)
 * ```ts
 * import { RetryPolicy } from "effect-gcp-sinks/Sink"
 * const describe = (policy: RetryPolicy): string =>
 *   policy._tag === "Backoff" ? `${policy.maxAttempts} attempts` : "a caller's schedule"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export declare namespace RetryPolicy {
  /**
   * Bounded exponential backoff: at most `maxAttempts` attempts in all, waiting `initialBackoff`
   * after the first failure, growing by `multiplier` per attempt up to `maxBackoff`, each wait scaled
   * by a random factor in [0.75, 1.25] (±25 %, mean-preserving, never below 1 ms), and no retry once
   * `maxDuration` (when set) has passed since the first failure.
   *
   * @category models
   * @since 0.1.0
   */
  export interface Backoff {
    readonly _tag: "Backoff"
    readonly initialBackoff: Duration.Duration
    readonly maxBackoff: Duration.Duration
    readonly maxAttempts: number
    readonly multiplier: number
    readonly maxDuration: Duration.Duration | undefined
  }

  /**
   * A caller's own `Schedule` (see {@link RetryPolicy.fromSchedule}): it alone decides how long to
   * wait and when to give up. Its input is the failure being retried, as the sink's typed error.
   *
   * @category models
   * @since 0.1.0
   */
  export interface FromSchedule {
    readonly _tag: "FromSchedule"
    readonly schedule: Schedule.Schedule<unknown, unknown>
  }
  /**
   * See {@link RetryPolicyInput}.
   *
   * @since 0.1.0
   */
  export type Input = RetryPolicyInput
}
