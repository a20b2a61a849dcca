import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as flowControl from "../../../src/internal/core/flowControl.ts"
import { stepUntil } from "../../support/waiting.ts"

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

  it.effect("waiters are served in order: a later, smaller permit does not pass a waiting large one", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 10, maxBytes: 100 })
      yield* flow.acquire(permit(8, 10))
      const order: Array<string> = []
      const large = yield* Effect.forkChild(
        flow.acquire(permit(5, 10)).pipe(Effect.andThen(Effect.sync(() => void order.push("large"))))
      )
      yield* TestClock.adjust("1 millis")
      // two units are free, but the large permit waits first
      assert.isFalse(flow.tryAcquireUnsafe(permit(1, 1)))
      const small = yield* Effect.forkChild(
        flow.acquire(permit(1, 1)).pipe(Effect.andThen(Effect.sync(() => void order.push("small"))))
      )
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(order, [])
      flow.releaseUnsafe(permit(8, 10))
      yield* Fiber.joinAll([large, small])
      assert.deepStrictEqual(order, ["large", "small"])
      assert.isTrue(flow.tryAcquireUnsafe(permit(4, 79)), "5 + 1 units taken, 4 left")
      assert.isFalse(flow.tryAcquireUnsafe(permit(1, 0)))
    }))

  it.effect("a waiter interrupted after its permit was taken for it, before it ran, gives the permit back", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 2, maxBytes: 10 })
      yield* flow.acquire(permit(2, 10))
      const waiter = yield* Effect.forkChild(flow.acquire(permit(2, 10)))
      yield* TestClock.adjust("1 millis")
      // in one step: the release grants the waiter its permit (it resumes later), then it is interrupted
      flow.releaseUnsafe(permit(2, 10))
      yield* Fiber.interrupt(waiter)
      yield* TestClock.adjust("1 millis")
      assert.isTrue(flow.tryAcquireUnsafe(permit(2, 10)), "nothing is held by the interrupted waiter")
    }))

  it.effect("an interrupted first waiter lets the ones behind it through", () =>
    Effect.gen(function*() {
      const flow = yield* flowControl.make({ maxUnits: 4, maxBytes: 10 })
      yield* flow.acquire(permit(2, 1))
      const large = yield* Effect.forkChild(flow.acquire(permit(4, 1)))
      yield* TestClock.adjust("1 millis")
      const small = yield* Effect.forkChild(flow.acquire(permit(2, 1)))
      yield* TestClock.adjust("1 millis")
      assert.isUndefined(small.pollUnsafe(), "behind the large one")
      yield* Fiber.interrupt(large)
      yield* Fiber.join(small)
    }))

  it.effect("with a low-water mark, a waiter resumes only once the units taken are down to it", () =>
    Effect.gen(function*() {
      const flow = flowControl.makeUnsafe({ maxUnits: 4, maxBytes: 1, resumeAtUnits: 2 })
      const one = permit(1, 0)
      for (let i = 0; i < 4; i++) assert.isTrue(flow.tryAcquireUnsafe(one))
      const waiter = yield* Effect.forkChild(flow.acquire(one))
      yield* TestClock.adjust("1 millis")
      flow.releaseUnsafe(one)
      yield* TestClock.adjust("1 millis")
      assert.isUndefined(waiter.pollUnsafe(), "3 taken: above the mark, though one would fit")
      assert.isFalse(flow.tryAcquireUnsafe(one), "and no one passes the waiter")
      flow.releaseUnsafe(one)
      yield* Fiber.join(waiter)
      assert.isTrue(flow.tryAcquireUnsafe(one), "2 + 1 taken, one more fits")
      assert.isFalse(flow.tryAcquireUnsafe(one))
    }))

  it.effect.prop(
    "interrupted and completed acquisitions leave nothing taken",
    {
      tasks: Schema.Array(Schema.Struct({
        units: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 4 })),
        bytes: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 50 })),
        hold: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 5 })),
        interruptAt: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20 })))
      }))
    },
    ({ tasks }) =>
      Effect.gen(function*() {
        const flow = yield* flowControl.make({ maxUnits: 4, maxBytes: 50 })
        let units = 0
        let bytes = 0
        let ok = true
        const fibers = yield* Effect.forEach(tasks, (t) => {
          const p = permit(t.units, t.bytes)
          const use = Effect.uninterruptibleMask((restore) =>
            restore(flow.acquire(p)).pipe(
              Effect.andThen(Effect.sync(() => {
                units += p.units
                bytes += p.bytes
                if (units > 4 || bytes > 50) ok = false
              })),
              Effect.andThen(Effect.sleep(`${t.hold} millis`)),
              Effect.ensuring(Effect.sync(() => {
                units -= p.units
                bytes -= p.bytes
              })),
              Effect.ensuring(flow.release(p))
            )
          )
          return Effect.forkChild(use)
        })
        yield* Effect.forEach(tasks, (t, i) =>
          t.interruptAt === undefined
            ? Effect.void
            : Effect.forkChild(Effect.andThen(Effect.sleep(`${t.interruptAt} millis`), Fiber.interrupt(fibers[i]!))), {
          discard: true
        })
        // the clock moves until every task is over (a task's hold starts when its permit is granted,
        // which a single jump of the clock may pass); a permit never granted fails it here
        yield* stepUntil(() => fibers.every((f) => f.pollUnsafe() !== undefined), { step: "1 millis", steps: 1000 })
        yield* Fiber.awaitAll(fibers)
        assert.isTrue(ok, "never over the bounds")
        assert.isTrue(flow.tryAcquireUnsafe(permit(4, 50)), "every permit came back")
      })
  )

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
