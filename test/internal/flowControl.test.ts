import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as flowControl from "../../src/internal/flowControl.ts"

describe("flowControl", () => {
  it.effect("clamps a permit to the bounds, so an oversized item is admitted on an empty controller", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 2, maxBytes: 100 })
      const big = flow.permit(1, 10_000)
      assert.deepStrictEqual(big, { units: 1, bytes: 100 })
      assert.isTrue(yield* flow.tryAcquire(big))
      assert.isFalse(yield* flow.tryAcquire(flow.permit(1, 1)))
      yield* flow.release(big)
      assert.isTrue(yield* flow.tryAcquire(flow.permit(2, 100)))
    }))

  it.effect("acquire waits for room, runs onWait once first, and resumes on release", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 3, maxBytes: 1000 })
      let kicks = 0
      let admitted = false
      yield* flow.acquire(flow.permit(3, 10))
      const waiter = yield* Effect.forkChild(
        flow.acquire(flow.permit(2, 10), Effect.sync(() => void kicks++)).pipe(
          Effect.tap(() => Effect.sync(() => void (admitted = true)))
        )
      )
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(kicks, 1)
      assert.isFalse(admitted)
      yield* flow.release(flow.permit(2, 10))
      yield* Fiber.join(waiter)
      assert.isTrue(admitted)
    }))

  it.effect("a partial tryAcquire gives the units back", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 10, maxBytes: 10 })
      yield* flow.acquire(flow.permit(1, 10))
      assert.isFalse(yield* flow.tryAcquire(flow.permit(5, 1)))
      assert.isTrue(yield* flow.tryAcquire(flow.permit(9, 0)))
    }))

  it.effect("an acquisition interrupted while waiting for bytes returns its units", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 2, maxBytes: 10 })
      yield* flow.acquire(flow.permit(1, 10))
      const waiter = yield* Effect.forkChild(flow.acquire(flow.permit(1, 5)))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.interrupt(waiter)
      assert.isTrue(yield* flow.tryAcquire(flow.permit(1, 0)))
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
          const permit = flow.permit(1, size)
          return flow.acquire(permit).pipe(
            Effect.andThen(Effect.sync(() => {
              units += permit.units
              bytes += permit.bytes
              if (units > 4 || bytes > 50) ok = false
            })),
            Effect.andThen(Effect.yieldNow),
            Effect.andThen(Effect.sync(() => {
              units -= permit.units
              bytes -= permit.bytes
            })),
            Effect.andThen(flow.release(permit))
          )
        }, { concurrency: "unbounded", discard: true })
        assert.isTrue(ok)
      })
  )
})
