import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as budget from "../../../src/internal/core/budget.ts"
import * as retrySchedule from "../../../src/internal/core/retrySchedule.ts"
import type { RetryPolicy } from "../../../src/Sink.ts"

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
    "toSchedule of a backoff: the jittered delay of that attempt, none once maxAttempts - 1 retries are used",
    { maxAttempts: Attempts, attempt: Attempts },
    ({ attempt, maxAttempts }) =>
      Effect.gen(function*() {
        const delay = yield* budget.delayAfter(retrySchedule.toSchedule(backoff(maxAttempts)), attempt)
        if (attempt >= maxAttempts) assert.isTrue(Option.isNone(delay))
        else {
          const base = Math.min(100 * 2 ** (attempt - 1), 1000)
          const ms = Option.isSome(delay) ? Duration.toMillis(delay.value) : -1
          assert.isAtLeast(ms, base * 0.75)
          assert.isAtMost(ms, base * 1.25)
        }
      })
  )

  it.effect("toSchedule of a backoff with maxDuration stops once it has passed", () =>
    Effect.gen(function*() {
      const policy = { ...backoff(1000), maxDuration: Duration.millis(250) }
      const b = yield* budget.make(retrySchedule.toSchedule(policy))
      const answers: Array<boolean> = []
      for (let i = 0; i < 20; i++) {
        const wait = yield* b.next
        answers.push(Option.isSome(wait))
        if (Option.isSome(wait)) yield* TestClock.adjust(wait.value)
      }
      assert.isTrue(answers.includes(false))
      assert.isAtMost(answers.filter((some) => some).length, 8)
    }))
})
