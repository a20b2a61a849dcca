import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Fiber, Schema } from "effect"
import type { Budget, Retry, Trouble } from "../../../src/internal/core/backend.ts"
import * as repairs from "../../../src/internal/core/repairs.ts"
import { commandCapacity } from "../../../src/internal/core/writer.ts"
import { FailureHandler } from "../../../src/Sink/FailureHandler.ts"
import * as toy from "./toyBackend.ts"

/**
 * The engine over a recording core: steps offered run in order when the test drains them, a
 * budget's wait is recorded and its step queued at once (the waits themselves are `budget.ts`'s),
 * and a budget allows `maxAttempts` attempts.
 */
const harness = (options: { readonly maxAttempts?: number; readonly retryable?: boolean } = {}) => {
  const maxAttempts = options.maxAttempts ?? 3
  const queue: Array<Effect.Effect<void, string>> = []
  const waits: Array<{ readonly budget: Budget; readonly attempt: number }> = []
  const resent: Array<string> = []
  const settled: Array<string> = []
  const failures: Array<string> = []
  const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
  const after = (budget: Budget, attempt: number, step: Effect.Effect<void, string>, exhausted: () => string) =>
    Effect.sync(() => {
      waits.push({ budget, attempt })
      if (attempt >= maxAttempts) failures.push(exhausted())
      else queue.push(step)
    })
  const engine = repairs.make<string, string>({
    fork: (effect) => Effect.map(Effect.forkChild(effect), (fiber) => void fibers.push(fiber)),
    offer: (step) => Effect.sync(() => void queue.push(step)),
    after,
    retry: (r: Retry<string, string>) =>
      r.attempt === 0
        ? Effect.sync(() => void queue.push(Effect.sync(() => void resent.push(...r.items))))
        : after(r.budget, r.attempt, Effect.sync(() => void resent.push(...r.items)), r.exhausted),
    failCause: (cause) => Effect.sync(() => void failures.push(String(Cause.squash(cause)))),
    settled: (key) => Effect.sync(() => void settled.push(key)),
    repairRetry: () => ({
      retryable: () => options.retryable ?? false,
      exhausted: (key, attempts, error) => `${key}: ${attempts} failed repairs, last ${error}`
    })
  })
  /** Lets the repair fibers run, then runs the offered steps until none is left. */
  const drain = Effect.gen(function*() {
    for (let round = 0; round < 100; round++) {
      yield* Effect.yieldNow
      for (const fiber of fibers.splice(0)) yield* Fiber.await(fiber)
      const steps = queue.splice(0)
      if (steps.length === 0 && fibers.length === 0) return
      for (const step of steps) yield* Effect.catch(step, (e) => Effect.sync(() => void failures.push(e)))
    }
  })
  return { engine, drain, waits, resent, settled, failures }
}

const trouble = (
  item: string,
  key: string,
  observed: number,
  repair: Effect.Effect<void, string>,
  attempt = 1
): Trouble<string, string> => ({
  key,
  item,
  observed,
  repair,
  attempt,
  budget: "recovery",
  exhausted: () => `${item} exhausted`
})

describe("core repair engine", () => {
  it.effect("requests that meet one incident share one repair, wait for it, then all go again", () =>
    Effect.gen(function*() {
      const h = harness()
      const gate = yield* Deferred.make<void>()
      let runs = 0
      const repair = Effect.andThen(Effect.sync(() => void runs++), Deferred.await(gate))
      for (const item of ["a", "b", "c"]) yield* h.engine.meet(trouble(item, "t", 0, repair))
      yield* Effect.yieldNow
      assert.isTrue(h.engine.active("t"), "the table is under repair")
      assert.deepStrictEqual(h.resent, [], "nothing goes before the repair ends")
      yield* Deferred.succeed(gate, undefined)
      yield* h.drain
      assert.strictEqual(runs, 1)
      assert.deepStrictEqual(h.resent, ["a", "b", "c"])
      assert.deepStrictEqual(h.settled, ["t"])
      assert.isFalse(h.engine.active("t"))
      assert.strictEqual(h.engine.epoch("t"), 1)
      assert.deepStrictEqual(h.waits, [], "a first repair is not waited for")
    }))

  it.effect("a request sent before a repair that ended since only goes again (once per incident)", () =>
    Effect.gen(function*() {
      const h = harness()
      let runs = 0
      const repair = Effect.sync(() => void runs++)
      yield* h.engine.meet(trouble("a", "t", 0, repair))
      yield* h.drain
      yield* h.engine.meet(trouble("late", "t", 0, repair))
      yield* h.drain
      assert.strictEqual(runs, 1)
      assert.deepStrictEqual(h.resent, ["a", "late"])
    }))

  it.effect("a request meeting the trouble again after repairs waits its own budget, then fails the writer", () =>
    Effect.gen(function*() {
      const h = harness({ maxAttempts: 3 })
      for (let attempt = 1; attempt <= 3; attempt++) {
        yield* h.engine.meet(trouble("a", "t", h.engine.epoch("t"), Effect.void, attempt))
        yield* h.drain
      }
      assert.deepStrictEqual(h.waits, [{ budget: "recovery", attempt: 2 }, { budget: "recovery", attempt: 3 }])
      assert.deepStrictEqual(h.resent, ["a", "a"])
      assert.deepStrictEqual(h.failures, ["a exhausted"])
    }))

  it.effect("a repair that fails retryably runs again on the recovery budget, counted per incident", () =>
    Effect.gen(function*() {
      const h = harness({ retryable: true, maxAttempts: 10 })
      let runs = 0
      const flaky = Effect.suspend(() => ++runs < 3 ? Effect.fail(`boom ${runs}`) : Effect.void)
      yield* h.engine.meet(trouble("a", "t", 0, flaky))
      yield* h.drain
      assert.strictEqual(runs, 3)
      assert.deepStrictEqual(h.waits, [{ budget: "recovery", attempt: 1 }, { budget: "recovery", attempt: 2 }])
      assert.deepStrictEqual(h.resent, ["a"])
      assert.deepStrictEqual(h.failures, [])
    }))

  it.effect("a repair that keeps failing fails the writer with the method's error; a terminal one at once", () =>
    Effect.gen(function*() {
      const retried = harness({ retryable: true, maxAttempts: 3 })
      yield* retried.engine.meet(trouble("a", "t", 0, Effect.fail("denied")))
      yield* retried.drain
      assert.deepStrictEqual(retried.failures, ["t: 3 failed repairs, last denied"])
      assert.deepStrictEqual(retried.resent, [])
      const terminal = harness({ retryable: false })
      yield* terminal.engine.meet(trouble("a", "t", 0, Effect.fail("invalid")))
      yield* terminal.drain
      assert.lengthOf(terminal.failures, 1)
      assert.include(terminal.failures[0], "invalid")
    }))

  it.effect("a repair started with nothing waiting (a check at open) holds the key until it ends", () =>
    Effect.gen(function*() {
      const h = harness()
      const gate = yield* Deferred.make<void>()
      yield* h.engine.start("t", Deferred.await(gate))
      yield* h.engine.start("t", Effect.die("a second start while one is under way runs nothing"))
      yield* Effect.yieldNow
      assert.isTrue(h.engine.active("t"))
      assert.strictEqual(h.engine.size(), 1)
      yield* Deferred.succeed(gate, undefined)
      yield* h.drain
      assert.deepStrictEqual(h.settled, ["t"])
      assert.strictEqual(h.engine.size(), 0)
    }))

  it.effect.prop(
    "property: every request that met trouble goes again exactly once, and a repair runs once per incident",
    {
      arrivals: Schema.Array(
        Schema.Struct({ key: Schema.Literals(["t0", "t1", "t2"]), stale: Schema.Boolean, drain: Schema.Boolean })
      ).check(Schema.isMaxLength(30))
    },
    ({ arrivals }) =>
      Effect.gen(function*() {
        const h = harness()
        const runs = new Map<string, number>()
        let incidents = 0
        for (const [i, a] of arrivals.entries()) {
          const epoch = h.engine.epoch(a.key)
          const observed = a.stale && epoch > 0 ? epoch - 1 : epoch
          // a repair starts exactly when the trouble is current and none is under way
          if (observed === epoch && !h.engine.active(a.key)) incidents++
          const repair = Effect.sync(() => void runs.set(a.key, (runs.get(a.key) ?? 0) + 1))
          yield* h.engine.meet(trouble(`r${i}`, a.key, observed, repair))
          if (a.drain) yield* h.drain
        }
        yield* h.drain
        assert.sameMembers(h.resent, arrivals.map((_, i) => `r${i}`))
        assert.strictEqual([...runs.values()].reduce((x, y) => x + y, 0), incidents)
        assert.strictEqual(h.engine.size(), 0)
        assert.deepStrictEqual(h.failures, [])
      }).pipe(Effect.scoped),
    { arbitrary: { runs: 200 } }
  )

  it.effect("a repair with more requests waiting than the owner's command queue holds re-sends them all", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const n = 2 * commandCapacity
      const w = yield* toy.make({
        service,
        handler: FailureHandler.make({ handle: () => Effect.void }),
        batchSize: n,
        maxUnits: 2 * n
      })
      // one call of `n` items, each answered with the missing table: `n` requests wait for one repair
      yield* w.write(Array.from({ length: n }, (_, i) => `t:lost${i}`))
      const flushing = yield* Effect.forkChild(w.flush)
      // no timer is involved: the owner only needs turns (a deadlocked one never finishes)
      for (let i = 0; i < 20_000 && flushing.pollUnsafe() === undefined; i++) yield* Effect.yieldNow
      assert.isDefined(flushing.pollUnsafe(), "the flush returns: the owner never waits on its own queue")
      yield* Fiber.join(flushing)
      assert.strictEqual(service.repairs, 1)
      assert.strictEqual(service.accepted.length, n)
      assert.strictEqual((yield* w.summary).recordsWritten, n)
    }).pipe(Effect.scoped))
})
