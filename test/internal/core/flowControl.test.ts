import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as flowControl from "../../../src/internal/core/flowControl.ts"

const permit = (units: number, bytes: number): flowControl.Permit => ({ units, bytes })

describe("flowControl", () => {
  it.effect("a permit as large as a bound is admitted on an empty controller, and holds it", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 2, maxBytes: 100 })
      const big = permit(1, 100)
      assert.strictEqual(flow.maxBytes, 100)
      assert.isTrue(yield* flow.tryAcquire(big))
      assert.isFalse(yield* flow.tryAcquire(permit(1, 1)))
      yield* flow.release(big)
      assert.isTrue(yield* flow.tryAcquire(permit(2, 100)))
    }))

  it.effect("acquire waits for room, runs onWait once first, and resumes on release", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 3, maxBytes: 1000 })
      let kicks = 0
      let admitted = false
      yield* flow.acquire(permit(3, 10))
      const waiter = yield* Effect.forkChild(
        flow.acquire(permit(2, 10), Effect.sync(() => void kicks++)).pipe(
          Effect.tap(() => Effect.sync(() => void (admitted = true)))
        )
      )
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(kicks, 1)
      assert.isFalse(admitted)
      yield* flow.release(permit(2, 10))
      yield* Fiber.join(waiter)
      assert.isTrue(admitted)
    }))

  it.effect("openAll lets every waiter through, and every later permit (a failed writer's admission)", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 1, maxBytes: 10 })
      yield* flow.acquire(permit(1, 10))
      const waiters = yield* Effect.forEach([permit(1, 1), permit(1, 10)], (p) => Effect.forkChild(flow.acquire(p)))
      yield* TestClock.adjust("1 millis")
      assert.isTrue(waiters.every((w) => w.pollUnsafe() === undefined), "both wait")
      yield* flow.openAll
      yield* Fiber.joinAll(waiters)
      assert.isTrue(yield* flow.tryAcquire(permit(1_000, 1_000_000)))
    }))

  it.effect("a partial tryAcquire gives the units back", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 10, maxBytes: 10 })
      yield* flow.acquire(permit(1, 10))
      assert.isFalse(yield* flow.tryAcquire(permit(5, 1)))
      assert.isTrue(yield* flow.tryAcquire(permit(9, 0)))
    }))

  it.effect("an acquisition interrupted while waiting for bytes returns its units", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 2, maxBytes: 10 })
      yield* flow.acquire(permit(1, 10))
      const waiter = yield* Effect.forkChild(flow.acquire(permit(1, 5)))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.interrupt(waiter)
      assert.isTrue(yield* flow.tryAcquire(permit(1, 0)))
    }))

  it.effect.prop(
    "never more in flight than the bounds",
    { sizes: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 200 }))) },
    ({ sizes }) =>
      Effect.gen(function*() {
        const flow = yield* flowControl.make({ maxUnits: 4, maxBytes: 50 })
        let units = 0
        let bytes = 0
        let ok = true
        yield* Effect.forEach(sizes, (size) => {
          const p = permit(1, Math.min(size, flow.maxBytes))
          return flow.acquire(p).pipe(
            Effect.andThen(Effect.sync(() => {
              units += p.units
              bytes += p.bytes
              if (units > 4 || bytes > 50) ok = false
            })),
            Effect.andThen(Effect.yieldNow),
            Effect.andThen(Effect.sync(() => {
              units -= p.units
              bytes -= p.bytes
            })),
            Effect.andThen(flow.release(p))
          )
        }, { concurrency: "unbounded", discard: true })
        assert.isTrue(ok)
      })
  )
})
