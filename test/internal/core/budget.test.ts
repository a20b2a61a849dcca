import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Option, Schedule } from "effect"
import { TestClock } from "effect/testing"
import * as budget from "../../../src/internal/core/budget.ts"
import { RetryPolicy } from "../../../src/Sink/RetryPolicy.ts"

/** A backoff policy as `RetryPolicy.make` validates it (multiplier 2, no time limit). */
const backoff = (p: { initialBackoff: Duration.Duration; maxBackoff: Duration.Duration; maxAttempts: number }) => ({
  _tag: "Backoff" as const,
  multiplier: 2,
  maxDuration: undefined,
  ...p
})

describe("writer budget", () => {
  it.effect("the schedule of a policy of n attempts gives n - 1 waits, each the jittered base delay", () =>
    Effect.gen(function*() {
      for (const maxAttempts of [1, 2, 5, 15]) {
        const policy = backoff({ initialBackoff: Duration.millis(100), maxBackoff: Duration.seconds(2), maxAttempts })
        const schedule = RetryPolicy.toSchedule(policy)
        for (let attempt = 1; attempt < maxAttempts; attempt++) {
          const wait = yield* budget.delayAfter(schedule, attempt)
          assert.isTrue(Option.isSome(wait), `attempt ${attempt} of ${maxAttempts} has a wait`)
          const base = Duration.toMillis(RetryPolicy.baseDelay(policy, attempt))
          const millis = Option.match(wait, { onNone: () => -1, onSome: Duration.toMillis })
          assert.isAtLeast(millis, base * (1 - RetryPolicy.jitter))
          assert.isAtMost(millis, base * (1 + RetryPolicy.jitter))
        }
        assert.isTrue(Option.isNone(yield* budget.delayAfter(schedule, maxAttempts)), "the budget is spent")
      }
    }))

  it.effect("delayAfter runs the clock on by each wait: maxDuration (or a caller's time limit) runs out", () =>
    Effect.gen(function*() {
      const policy = {
        ...backoff({ initialBackoff: Duration.millis(100), maxBackoff: Duration.seconds(2), maxAttempts: 100 }),
        maxDuration: Duration.seconds(5)
      }
      const schedule = RetryPolicy.toSchedule(policy)
      assert.isTrue(Option.isSome(yield* budget.delayAfter(schedule, 1)), "the first retry is within 5 s")
      assert.isTrue(Option.isNone(yield* budget.delayAfter(schedule, 50)), "50 waits of up to 2 s exceed 5 s")
      const during = Schedule.spaced("1 second").pipe(Schedule.upTo({ duration: "5 seconds" }))
      assert.isTrue(Option.isSome(yield* budget.delayAfter(during, 3)))
      assert.isTrue(Option.isNone(yield* budget.delayAfter(during, 10)), "a caller's time-limited schedule runs out")
    }))

  it.effect("the failure is the schedule's input, as RetryPolicy.fromSchedule documents", () =>
    Effect.gen(function*() {
      const transientOnly = Schedule.spaced("1 millis").pipe(Schedule.while(({ input }) => input !== "fatal"))
      assert.isTrue(Option.isSome(yield* budget.delayAfter(transientOnly, 2, "transient")))
      assert.isTrue(Option.isNone(yield* budget.delayAfter(transientOnly, 1, "fatal")), "delayAfter passes it")
      const b = yield* budget.make(transientOnly)
      assert.isTrue(Option.isSome(yield* b.nextAfter("transient")))
      assert.isTrue(Option.isNone(yield* b.nextAfter("fatal")), "nextAfter passes it")
    }))

  it.effect("a caller's schedule gives its delays until it ends", () =>
    Effect.gen(function*() {
      const custom = RetryPolicy.toSchedule(
        RetryPolicy.fromSchedule(Schedule.spaced("7 millis").pipe(Schedule.upTo({ times: 2 })))
      )
      const delays = yield* Effect.forEach([1, 2, 3], (n) => budget.delayAfter(custom, n))
      assert.deepStrictEqual(delays.map(Option.map(Duration.toMillis)), [Option.some(7), Option.some(7), Option.none()])
    }))

  it.effect("a budget stepped by hand gives each delay of the schedule and none once it is spent", () =>
    Effect.gen(function*() {
      const b = yield* budget.make(
        RetryPolicy.toSchedule(RetryPolicy.fromSchedule(Schedule.spaced("1 second").pipe(Schedule.upTo({ times: 2 }))))
      )
      const waits: Array<Option.Option<number>> = []
      for (let i = 0; i < 3; i++) {
        const wait = yield* b.next
        waits.push(Option.map(wait, Duration.toMillis))
        if (Option.isSome(wait)) yield* TestClock.adjust(wait.value)
      }
      assert.deepStrictEqual(waits, [Option.some(1000), Option.some(1000), Option.none()])
    }))

  it.effect("a budget stepped by hand gives maxAttempts - 1 waits, then none, and counts its steps", () =>
    Effect.gen(function*() {
      const policy = backoff({ initialBackoff: Duration.millis(10), maxBackoff: Duration.millis(40), maxAttempts: 4 })
      const b = yield* budget.make(RetryPolicy.toSchedule(policy))
      const waits: Array<boolean> = []
      for (let i = 0; i < 5; i++) waits.push(Option.isSome(yield* b.next))
      assert.deepStrictEqual(waits, [true, true, true, false, false])
      assert.strictEqual(b.used(), 3)
    }))
})
