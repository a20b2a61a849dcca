/**
 * The waits of a writer's two budgets (`retry`, `recovery`), read from the `Schedule` of their
 * `RetryPolicy`: the schedule alone decides how long to wait and when to give up.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"

/**
 * The delay a schedule gives before attempt `attempt + 1`, `attempt` failed attempts in: its
 * `attempt`-th step, or `Option.none()` when it stops earlier (the budget is spent).
 *
 * @internal
 */
export const delayAfter = (
  schedule: Schedule.Schedule<Duration.Duration, unknown>,
  attempt: number
): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(schedule)
    const now = yield* Clock.currentTimeMillis
    let delay: Option.Option<Duration.Duration> = Option.none()
    for (let i = 0; i < Math.max(1, attempt); i++) {
      const exit = yield* Effect.exit(step(now, undefined))
      if (Exit.isFailure(exit)) return Option.none()
      delay = Option.some(exit.value[1])
    }
    return delay
  })
