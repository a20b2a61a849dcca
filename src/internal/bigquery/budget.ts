/**
 * A retry budget stepped by hand through its `Schedule` (`RetryPolicy.toSchedule`), for loops whose
 * actions differ by verdict (an append's repair loop, opening a destination): each step gives the
 * wait before the next attempt, computed by the schedule, or `undefined` once it is spent.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"
import { type Policy, toSchedule } from "../retrySchedule.ts"

/**
 * `next` takes a step: the wait before the next attempt (the caller sleeps it, or skips it for a
 * free step), or `undefined` once the budget is spent; `used` counts the steps taken (for messages).
 *
 * @internal
 */
export interface Budget {
  readonly next: Effect.Effect<Duration.Duration | undefined>
  used: number
}

/** The budget of `schedule`'s steps. @internal */
export const make = (schedule: Schedule.Schedule<Duration.Duration, unknown>): Effect.Effect<Budget> =>
  Effect.map(Schedule.toStep(schedule), (step) => {
    const budget: Budget = {
      used: 0,
      next: Effect.flatMap(Clock.currentTimeMillis, (now) =>
        step(now, undefined).pipe(
          Effect.map(([, delay]) => {
            budget.used++
            return delay
          }),
          Pull.catchDone(() => Effect.undefined)
        ))
    }
    return budget
  })

/** `policy.maxAttempts` attempts in all: `maxAttempts - 1` steps. @internal */
export const attempts = (policy: Policy): Effect.Effect<Budget> => make(toSchedule(policy))

/**
 * `policy.maxAttempts` recoveries after a first attempt (so an exhausted budget reports
 * `maxAttempts + 1` attempts): a schedule of one more attempt than the policy counts.
 *
 * @internal
 */
export const recoveries = (policy: Policy): Effect.Effect<Budget> =>
  make(toSchedule({ ...policy, maxAttempts: policy.maxAttempts + 1 }))
