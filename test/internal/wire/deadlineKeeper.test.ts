/**
 * The deadline keeper on the TestClock: a deadline expires once its time has passed and not before
 * (also between whole milliseconds), a cleared one never, one armed earlier than the deadline the
 * keeper sleeps until wakes it, no timer is kept long after the last call, an expiry that throws
 * leaves the others expiring, and the keeper stops with its scope.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as DeadlineKeeper from "../../../src/internal/wire/deadlineKeeper.ts"

describe("deadlineKeeper", () => {
  it.effect("expires a deadline once its time has passed; a cleared one never", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      const expired: Array<string> = []
      keeper.arm(Duration.seconds(10), () => expired.push("a"))
      const clearB = keeper.arm(Duration.seconds(10), () => expired.push("b"))
      keeper.arm(Duration.seconds(20), () => expired.push("c"))
      clearB()
      assert.strictEqual(keeper.pending(), 2)
      yield* TestClock.adjust("9999 millis")
      assert.deepStrictEqual(expired, [])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(expired, ["a"])
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(expired, ["a", "c"])
      assert.strictEqual(keeper.pending(), 0)
    }))

  it.effect("a deadline earlier than the one the keeper sleeps until wakes it", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      const expired: Array<string> = []
      keeper.arm(Duration.minutes(1), () => expired.push("late"))
      yield* TestClock.adjust("1 second")
      keeper.arm(Duration.seconds(2), () => expired.push("early"))
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(expired, ["early"])
      yield* TestClock.adjust("57 seconds")
      assert.deepStrictEqual(expired, ["early", "late"])
    }))

  it.effect("calls that end before their deadlines leave nothing to expire, however many", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      let expired = 0
      for (let i = 0; i < 1000; i++) {
        const clear = keeper.arm(Duration.seconds(5), () => expired++)
        if (i % 100 === 0) yield* TestClock.adjust("10 millis")
        clear()
      }
      assert.strictEqual(keeper.pending(), 0)
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(expired, 0)
      // and the keeper still keeps the next one
      keeper.arm(Duration.seconds(1), () => expired++)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(expired, 1)
    }))

  it.effect("keeps no timer once nothing is pending: at most maxSleep after the last call, whatever its timeout", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      assert.isTrue(keeper.idle())
      const clear = keeper.arm(Duration.minutes(1), () => {})
      yield* TestClock.adjust("10 millis")
      assert.isFalse(keeper.idle())
      clear()
      yield* TestClock.adjust(DeadlineKeeper.maxSleep)
      assert.isTrue(keeper.idle(), "idle a second after the last call, not a minute")
    }))

  it.effect("a deadline reached exactly expires, also when it falls between whole milliseconds", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      let expired = 0
      // a reading and a limit whose sum in float milliseconds lands a hair off the reached time
      yield* TestClock.adjust(Duration.nanos(219_478_062_444n))
      keeper.arm(Duration.millis(49_809.5), () => expired++)
      yield* TestClock.adjust(Duration.millis(49_809.5))
      assert.strictEqual(expired, 1)
    }))

  it.effect("an expiry that throws is logged; the other deadlines still expire", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      const expired: Array<string> = []
      keeper.arm(Duration.seconds(1), () => {
        throw new Error("boom")
      })
      keeper.arm(Duration.seconds(1), () => expired.push("same time"))
      keeper.arm(Duration.seconds(2), () => expired.push("later"))
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(expired, ["same time", "later"])
    }))

  it.effect("stops with its scope: nothing expires after it closed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const keeper = yield* Scope.provide(DeadlineKeeper.make, scope)
      let expired = 0
      keeper.arm(Duration.seconds(1), () => expired++)
      yield* Scope.close(scope, Exit.void)
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(expired, 0)
    }))
})
