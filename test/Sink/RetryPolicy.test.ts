import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Exit, Fiber, Ref, Schedule } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { delayMillis } from "../../src/internal/core/retrySchedule.ts"
import { RetryPolicy, type RetryPolicyOptions, type SinkConfigError } from "../../src/Sink.ts"

const policy = (initial: number, max: number, maxAttempts: number): RetryPolicy.Backoff => ({
  _tag: "Backoff",
  initialBackoff: Duration.millis(initial),
  maxBackoff: Duration.millis(max),
  maxAttempts,
  multiplier: 2,
  maxDuration: undefined
})

const configError = (exit: Exit.Exit<unknown, SinkConfigError>): SinkConfigError | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? reason.error : undefined
}

describe("RetryPolicy", () => {
  it("delays double from the initial backoff, are capped, and jitter stays within ±25 %", () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 10_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 1, max: 2000 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (initial, extra, attempt, u) => {
        const max = initial + extra
        const p = policy(initial, max, 10)
        const base = Math.min(initial * 2 ** (attempt - 1), max)
        const delay = delayMillis(p, attempt, u)
        assert.isAtLeast(delay, Math.max(1, base * 0.75))
        assert.isAtMost(delay, Math.max(1, base * 1.25))
        assert.isTrue(Number.isFinite(delay))
      }
    ))
  })

  it("the mean factor is 1: the midpoint sample gives the undecorated backoff", () => {
    const p = policy(100, 5000, 5)
    assert.deepStrictEqual([1, 2, 3, 4, 7].map((n) => Duration.toMillis(RetryPolicy.baseDelay(p, n))), [
      100,
      200,
      400,
      800,
      5000
    ])
  })

  it.effect("the schedule allows exactly maxAttempts attempts, spaced within the jitter bounds", () =>
    Effect.gen(function*() {
      for (const maxAttempts of [1, 2, 5, 9]) {
        const p = policy(100, 1000, maxAttempts)
        const times = yield* Ref.make<Array<number>>([])
        const attempt = Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          yield* Ref.update(times, (t) => [...t, now])
          return yield* Effect.fail("transient" as const)
        })
        const fiber = yield* attempt.pipe(Effect.retry(RetryPolicy.toSchedule(p)), Effect.forkChild)
        for (let i = 0; i < 20; i++) yield* TestClock.adjust("2 seconds")
        const exit = yield* Fiber.await(fiber)
        assert.isTrue(Exit.isFailure(exit))
        const seen = yield* Ref.get(times)
        assert.strictEqual(seen.length, maxAttempts)
        for (let i = 1; i < seen.length; i++) {
          const gap = (seen[i] ?? 0) - (seen[i - 1] ?? 0)
          const base = Math.min(100 * 2 ** (i - 1), 1000)
          assert.isAtLeast(gap, Math.floor(base * 0.75), `gap ${i}`)
          assert.isAtMost(gap, Math.ceil(base * 1.25), `gap ${i}`)
        }
      }
    }))

  it.effect("the schedule stops retrying as soon as the effect succeeds", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const flaky = Ref.updateAndGet(calls, (n) => n + 1).pipe(
        Effect.flatMap((n) => (n < 3 ? Effect.fail("transient" as const) : Effect.succeed(n)))
      )
      const fiber = yield* flaky.pipe(Effect.retry(RetryPolicy.toSchedule(policy(10, 100, 5))), Effect.forkChild)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(fiber), 3)
    }))

  it.effect("validates its options and names the offending field", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<[RetryPolicyOptions, string]> = [
        [{ initialBackoff: "0 millis", maxBackoff: "1 second", maxAttempts: 3 }, "retry.initialBackoff"],
        [{ initialBackoff: "500 micros", maxBackoff: "1 second", maxAttempts: 3 }, "retry.initialBackoff"],
        [{ initialBackoff: "1 second", maxBackoff: "10 millis", maxAttempts: 3 }, "retry.maxBackoff"],
        [{ initialBackoff: "1 second", maxBackoff: "Infinity", maxAttempts: 3 }, "retry.maxBackoff"],
        [{ initialBackoff: "1 second", maxBackoff: "2 seconds", maxAttempts: 0 }, "retry.maxAttempts"],
        [{ initialBackoff: "1 second", maxBackoff: "2 seconds", maxAttempts: 1.5 }, "retry.maxAttempts"],
        [{ initialBackoff: "1 second", maxBackoff: "2 seconds", maxAttempts: Number.NaN }, "retry.maxAttempts"]
      ]
      for (const [options, path] of cases) {
        const error = configError(yield* Effect.exit(RetryPolicy.make(options)))
        assert.strictEqual(error?.path, path, JSON.stringify(options))
      }
      const nested = configError(
        yield* Effect.exit(RetryPolicy.make({ initialBackoff: 5, maxBackoff: 1, maxAttempts: 2 }, "writeMethod.retry"))
      )
      assert.strictEqual(nested?.path, "writeMethod.retry.maxBackoff")
      const ok = yield* RetryPolicy.make({ initialBackoff: 100, maxBackoff: "5 seconds", maxAttempts: 1 })
      assert.strictEqual(Duration.toMillis(ok.maxBackoff), 5000)
    }))

  it("with a multiplier, delays grow by it from the initial backoff, capped, within the jitter", () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 10_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.double({ min: 1, max: 10, noNaN: true }),
      fc.integer({ min: 1, max: 200 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (initial, extra, multiplier, attempt, u) => {
        const p = { ...policy(initial, initial + extra, 10), multiplier }
        const base = Math.min(initial * multiplier ** (attempt - 1), initial + extra)
        const delay = delayMillis(p, attempt, u)
        assert.isAtLeast(delay, Math.max(1, base * 0.75) - 1e-9)
        assert.isAtMost(delay, Math.max(1, base * 1.25) + 1e-9)
      }
    ))
  })

  it.effect("maxDuration ends the retries once it has passed since the first failure", () =>
    Effect.gen(function*() {
      const p = { ...policy(100, 100, 1000), maxDuration: Duration.millis(1000) }
      const calls = yield* Ref.make(0)
      const attempt = Ref.update(calls, (n) => n + 1).pipe(Effect.andThen(Effect.fail("transient" as const)))
      const fiber = yield* attempt.pipe(Effect.retry(RetryPolicy.toSchedule(p)), Effect.forkChild)
      for (let i = 0; i < 100; i++) yield* TestClock.adjust("100 millis")
      assert.isTrue(Exit.isFailure(yield* Fiber.await(fiber)))
      const n = yield* Ref.get(calls)
      // 100 ms ± 25 % apart: about ten retries fit in one second, far fewer than maxAttempts
      assert.isAtLeast(n, 8)
      assert.isAtMost(n, 16)
    }))

  it.effect("fromSchedule: the caller's schedule alone decides, and toSchedule is that schedule", () =>
    Effect.gen(function*() {
      const schedule = Schedule.recurs(3)
      const p = RetryPolicy.fromSchedule(schedule)
      assert.strictEqual(p._tag, "FromSchedule")
      assert.isTrue(RetryPolicy.isRetryPolicy(p))
      const calls = yield* Ref.make(0)
      const attempt = Ref.update(calls, (n) => n + 1).pipe(Effect.andThen(Effect.fail("transient" as const)))
      const exit = yield* Effect.exit(attempt.pipe(Effect.retry(RetryPolicy.toSchedule(p))))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* Ref.get(calls), 4)
      const capped = RetryPolicy.withMaxAttempts(p, 2)
      yield* Ref.set(calls, 0)
      yield* Effect.exit(attempt.pipe(Effect.retry(RetryPolicy.toSchedule(capped))))
      assert.strictEqual(yield* Ref.get(calls), 2)
    }))

  it.effect("make rejects NaN and infinities in every field", () =>
    Effect.gen(function*() {
      const base: RetryPolicyOptions = { initialBackoff: 10, maxBackoff: 100, maxAttempts: 3 }
      for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
        for (const field of ["initialBackoff", "maxBackoff", "maxAttempts", "multiplier", "maxDuration"] as const) {
          const error = configError(yield* Effect.exit(RetryPolicy.make({ ...base, [field]: bad })))
          assert.strictEqual(error?.path, `retry.${field}`, `${field}: ${bad}`)
        }
      }
    }))
})
