/**
 * The shared sink's timer flush, on the TestClock: ticks a fixed interval apart, and a tick that
 * falls due while a flush still waits for the service flushes as soon as that flush ends.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as Duration from "effect/Duration"
import { TestClock } from "effect/testing"
import { everyInterval } from "../../../src/internal/core/sink.ts"

/** Lets the timer's fiber run what it can without moving the clock. */
const settle = Effect.repeat(Effect.yieldNow, { times: 20 })

describe("core sink timer", () => {
  it.effect("flushes once an interval while flushes are quick", () =>
    Effect.gen(function*() {
      let flushes = 0
      const timer = yield* Effect.forkChild(everyInterval(Duration.millis(50), Effect.sync(() => flushes++)))
      yield* TestClock.adjust("49 millis")
      assert.strictEqual(flushes, 0)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(flushes, 1)
      yield* TestClock.adjust("150 millis")
      assert.strictEqual(flushes, 4)
      yield* Fiber.interrupt(timer)
    }))

  it.effect("a tick due during a slow flush flushes as soon as it ends, and missed ticks are not made up", () =>
    Effect.gen(function*() {
      const flushes: Array<number> = []
      const gate = yield* Deferred.make<void>()
      const flush = Effect.gen(function*() {
        flushes.push(yield* Effect.clockWith((c) => c.currentTimeMillis))
        if (flushes.length === 1) yield* Deferred.await(gate)
      })
      const timer = yield* Effect.forkChild(everyInterval(Duration.millis(50), flush))
      yield* TestClock.adjust("50 millis")
      // the first flush waits for the "service" while three more intervals pass
      yield* TestClock.adjust("120 millis")
      assert.deepStrictEqual(flushes, [50])
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.deepStrictEqual(flushes, [50, 170])
      yield* TestClock.adjust("49 millis")
      assert.deepStrictEqual(flushes, [50, 170])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(flushes, [50, 170, 220])
      yield* Fiber.interrupt(timer)
    }))

  it.effect("a failing flush ends the timer with its error", () =>
    Effect.gen(function*() {
      const timer = yield* Effect.forkChild(everyInterval(Duration.millis(10), Effect.fail("latched" as const)))
      yield* TestClock.adjust("10 millis")
      const exit = yield* Fiber.await(timer)
      assert.isTrue(exit._tag === "Failure")
    }))
})
