/**
 * BigQuery's budgets over the core's hand-stepped `Budget` (`writer/budget.ts`, read from
 * `RetryPolicy.toSchedule`): the two ways BigQuery counts a `RetryPolicy`'s `maxAttempts`.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import { type AnyPolicy, type Policy, toSchedule } from "../retrySchedule.ts"
import { type Budget, make } from "../writer/budget.ts"

export type { Budget } from "../writer/budget.ts"

/** `policy.maxAttempts` attempts in all: `maxAttempts - 1` steps. @internal */
export const attempts = (policy: AnyPolicy | Policy): Effect.Effect<Budget> => make(toSchedule(policy))

/**
 * `policy.maxAttempts` recoveries after a first attempt (so an exhausted budget reports
 * `maxAttempts + 1` attempts): a schedule of one more attempt than the policy counts. A caller's
 * own `Schedule` (`RetryPolicy.fromSchedule`) is its own count, taken as it is.
 *
 * @internal
 */
export const recoveries = (policy: AnyPolicy | Policy): Effect.Effect<Budget> =>
  make(toSchedule(
    "_tag" in policy && policy._tag === "FromSchedule"
      ? policy
      : { ...policy, maxAttempts: policy.maxAttempts + 1 }
  ))
