/**
 * The waits of a writer's budgets (`retry`, `recovery`), read from the `Schedule` of their
 * `RetryPolicy` (`RetryPolicy.toSchedule`): the schedule alone decides how long to wait and when to
 * give up; `maxAttempts` is read only for messages.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"

/**
 * A budget stepped by hand, for loops whose action differs by verdict: `next` takes a step and
 * gives the wait before the next attempt, or `Option.none()` once the schedule is spent; `used`
 * counts the steps taken.
 *
 * @internal
 */
export interface Budget {
  readonly next: Effect.Effect<Option.Option<Duration.Duration>>
  /** {@link next} with the failure as the schedule's input (what `RetryPolicy.fromSchedule` documents). */
  readonly nextAfter: (failure: unknown) => Effect.Effect<Option.Option<Duration.Duration>>
  readonly used: () => number
}

/** The budget of `schedule`'s steps, starting afresh. @internal */
export const make = (schedule: Schedule.Schedule<unknown, unknown>): Effect.Effect<Budget> =>
  Effect.map(Schedule.toStep(schedule), (step) => {
    let used = 0
    const nextAfter = (failure: unknown) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        step(now, failure).pipe(
          Effect.map(([, delay]) => {
            used++
            return Option.some(delay)
          }),
          Pull.catchDone(() => Effect.succeed(Option.none()))
        ))
    return { used: () => used, next: nextAfter(undefined), nextAfter }
  })

/**
 * The delay a schedule gives before attempt `attempt + 1`, `attempt` failed attempts in: its
 * `attempt`-th step, or `Option.none()` when it stops earlier (the budget is spent). For items that
 * keep their own attempt count (a Bigtable entry), where no budget object lives between attempts.
 * The schedule is replayed on a clock that runs on by each wait, as if every earlier attempt had
 * waited its delay, so a time limit (`maxDuration`, a caller's `Schedule.during`) runs out.
 * `failure` is the schedule's input at each step.
 *
 * @internal
 */
export const delayAfter = Effect.fnUntraced(
  function*(schedule: Schedule.Schedule<unknown, unknown>, attempt: number, failure?: unknown) {
    const step = yield* Schedule.toStep(schedule)
    let now = yield* Clock.currentTimeMillis
    let delay: Option.Option<Duration.Duration> = Option.none()
    for (let i = 0; i < Math.max(1, attempt); i++) {
      delay = yield* step(now, failure).pipe(
        Effect.map(([, wait]) => Option.some(wait)),
        Pull.catchDone(() => Effect.succeed(Option.none()))
      )
      if (Option.isNone(delay)) return delay
      now += Duration.toMillis(delay.value)
    }
    return delay
  }
)
