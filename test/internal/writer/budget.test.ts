import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import * as budget from "../../../src/internal/writer/budget.ts"
import { RetryPolicy } from "../../../src/Sink/RetryPolicy.ts"

describe("writer budget", () => {
  it.effect("the schedule of a policy of n attempts gives n - 1 waits, each the jittered base delay", () =>
    Effect.gen(function*() {
      for (const maxAttempts of [1, 2, 5, 15]) {
        const policy = { initialBackoff: Duration.millis(100), maxBackoff: Duration.seconds(2), maxAttempts }
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

  it.effect("a budget stepped by hand gives maxAttempts - 1 waits, then none, and counts its steps", () =>
    Effect.gen(function*() {
      const policy = { initialBackoff: Duration.millis(10), maxBackoff: Duration.millis(40), maxAttempts: 4 }
      const b = yield* budget.make(RetryPolicy.toSchedule(policy))
      const waits: Array<boolean> = []
      for (let i = 0; i < 5; i++) waits.push(Option.isSome(yield* b.next))
      assert.deepStrictEqual(waits, [true, true, true, false, false])
      assert.strictEqual(b.used(), 3)
    }))
})
