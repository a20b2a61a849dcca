/**
 * `whileRunning`, the wait of the transport's network measurements, on the TestClock: a sleep that
 * wakes late (the process stood still) starts again, at most `maxStalls` times; one on time ends it.
 * A stall is the wall clock jumping while no timer ran: a clock over the TestClock whose time a test
 * moves ahead by hand, its sleeps the TestClock's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { maxStalls, stallTolerance, whileRunning } from "../../../../src/internal/wire/http2/liveClock.ts"

/** The TestClock, with its wall time `stall.ms` ahead. */
const stalling = Clock.clockWith((test) => {
  const stall = { ms: 0 }
  const millis = () => test.currentTimeMillisUnsafe() + stall.ms
  const nanos = () => BigInt(millis()) * 1_000_000n
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: millis,
    currentTimeMillis: Effect.sync(millis),
    currentTimeNanosUnsafe: nanos,
    currentTimeNanos: Effect.sync(nanos),
    monotonicTimeNanosUnsafe: nanos,
    monotonicTimeNanos: Effect.sync(nanos),
    sleep: (duration) => test.sleep(duration)
  }
  return Effect.succeed({ stall, clock })
})

/** Starts `whileRunning(1 second)` on a stalling clock. */
const started = Effect.gen(function*() {
  const { clock, stall } = yield* stalling
  const fiber = yield* Effect.forkChild(Effect.provideService(whileRunning(Duration.seconds(1)), Clock.Clock, clock))
  yield* Effect.yieldNow
  return { fiber, stall }
})

describe("whileRunning", () => {
  it.effect("ends after the duration when its timer fires on time", () =>
    Effect.gen(function*() {
      const { fiber } = yield* started
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(fiber)
    }))

  it.effect("a timer that fired late (a stall) starts the wait again, from when the process ran again", () =>
    Effect.gen(function*() {
      const { fiber, stall } = yield* started
      stall.ms = stallTolerance + 1
      yield* TestClock.adjust("1 second")
      assert.isUndefined(fiber.pollUnsafe(), "a stall counted as waiting time")
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(fiber)
    }))

  it.effect("late within the tolerance counts as waiting", () =>
    Effect.gen(function*() {
      const { fiber, stall } = yield* started
      stall.ms = stallTolerance
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
    }))

  it.effect("after maxStalls stalls, the next late timer ends the wait: a process always late still sees a silent peer", () =>
    Effect.gen(function*() {
      const { fiber, stall } = yield* started
      for (let i = 0; i < maxStalls; i++) {
        stall.ms += 2_000
        yield* TestClock.adjust("1 second")
        assert.isUndefined(fiber.pollUnsafe(), `stall ${i + 1} of ${maxStalls}`)
      }
      stall.ms += 2_000
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
    }))
})
