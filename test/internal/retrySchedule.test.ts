import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Schedule, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as retrySchedule from "../../src/internal/retrySchedule.ts"
import { RetryPolicy } from "../../src/Sink.ts"

const backoff = (maxAttempts: number): RetryPolicy.Backoff => ({
  _tag: "Backoff",
  initialBackoff: Duration.millis(100),
  maxBackoff: Duration.millis(1000),
  maxAttempts,
  multiplier: 2,
  maxDuration: undefined
})

const Attempts = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 12 }))

describe("retrySchedule", () => {
  it.effect.prop(
    "nthDelay of a backoff: the jittered delay of that attempt, none once maxAttempts - 1 retries are used",
    { maxAttempts: Attempts, attempt: Attempts },
    ({ attempt, maxAttempts }) =>
      Effect.gen(function*() {
        const delay = yield* retrySchedule.nthDelay(backoff(maxAttempts), attempt)
        if (attempt >= maxAttempts) assert.isTrue(Option.isNone(delay))
        else {
          const base = Math.min(100 * 2 ** (attempt - 1), 1000)
          const ms = Option.isSome(delay) ? Duration.toMillis(delay.value) : -1
          assert.isAtLeast(ms, base * 0.75)
          assert.isAtMost(ms, base * 1.25)
        }
      })
  )

  it.effect("delayAfter: a backoff's delay (budget checked by the caller), a schedule's until it ends", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isSome(yield* retrySchedule.delayAfter(backoff(1), 5)))
      const custom = RetryPolicy.fromSchedule(Schedule.spaced("7 millis").pipe(Schedule.upTo({ times: 2 })))
      const delays = yield* Effect.forEach([1, 2, 3], (n) => retrySchedule.delayAfter(custom, n))
      assert.deepStrictEqual(delays.map(Option.map(Duration.toMillis)), [Option.some(7), Option.some(7), Option.none()])
      assert.strictEqual(retrySchedule.attemptBudget(backoff(4)), 4)
      assert.strictEqual(retrySchedule.attemptBudget(custom), Number.POSITIVE_INFINITY)
    }))

  it.effect("driver: sleeps each delay on the Clock and says false once the budget is spent", () =>
    Effect.gen(function*() {
      const next = yield* retrySchedule.driver(
        RetryPolicy.fromSchedule(Schedule.spaced("1 second").pipe(Schedule.upTo({ times: 2 })))
      )
      const fiber = yield* Effect.forkChild(Effect.forEach([1, 2, 3], () => next(undefined)))
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* Fiber.join(fiber), [true, true, false])
    }))

  it.effect("toSchedule of a backoff with maxDuration stops once it has passed", () =>
    Effect.gen(function*() {
      const policy = { ...backoff(1000), maxDuration: Duration.millis(250) }
      const next = yield* retrySchedule.driver(policy)
      const fiber = yield* Effect.forkChild(Effect.forEach(Array.from({ length: 20 }, () => 0), () => next(undefined)))
      for (let i = 0; i < 40; i++) yield* TestClock.adjust("100 millis")
      const answers = yield* Fiber.join(fiber)
      assert.isTrue(answers.includes(false))
      assert.isAtMost(answers.filter((b) => b).length, 8)
    }))
})
