import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { World } from "./kernel.ts"
import * as Rng from "./random.ts"

const world = (seed = 1) => new World({ rng: Rng.make(seed) })

describe("simulation kernel", () => {
  it("moves virtual time to each sleep's end, in order, with no real wait", async () => {
    const w = world()
    const proc = w.process("p")
    const woke: Array<number> = []
    const fiber = w.fork(
      proc,
      Effect.forEach([300, 100, 200], (ms) => Effect.andThen(Effect.sleep(ms), Effect.sync(() => woke.push(w.now))), {
        concurrency: "unbounded"
      })
    )
    let done = false
    fiber.addObserver(() => (done = true))
    const started = performance.now()
    assert.strictEqual(await w.run(() => done, { maxTime: 10_000, maxSteps: 10_000 }), "done")
    assert.deepStrictEqual(woke, [100, 200, 300])
    assert.isBelow(performance.now() - started, 1_000)
  })

  it("a crashed process never resumes: its timers are dropped and its finalizers never run", async () => {
    const w = world()
    const proc = w.process("p")
    const seen: Array<string> = []
    w.fork(
      proc,
      Effect.andThen(Effect.sleep(1_000), Effect.sync(() => seen.push("woke"))).pipe(
        Effect.ensuring(Effect.sync(() => seen.push("finalizer")))
      )
    )
    w.at(500, undefined, () => w.crash(proc))
    assert.strictEqual(await w.run(() => false, { maxTime: 10_000, maxSteps: 10_000 }), "quiescent")
    assert.deepStrictEqual(seen, [])
  })

  it("a paused process runs its held timers and deliveries when resumed", async () => {
    const w = world()
    const proc = w.process("p")
    const at: Array<number> = []
    w.fork(proc, Effect.andThen(Effect.sleep(100), Effect.sync(() => at.push(w.now))))
    w.at(50, undefined, () => w.pause(proc))
    w.at(70, undefined, () => w.deliver(proc, () => at.push(-w.now)))
    w.at(400, undefined, () => w.resume(proc))
    await w.run(() => false, { maxTime: 10_000, maxSteps: 10_000 })
    assert.deepStrictEqual(at.map(Math.abs).toSorted((a, b) => a - b), [400, 400])
  })

  it("one seed orders concurrent fibers one way, every time", () =>
    fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 }), async (seed) => {
        const order = async () => {
          const w = world(seed)
          const proc = w.process("p")
          const out: Array<number> = []
          const fiber = w.fork(
            proc,
            Effect.forEach(
              [0, 1, 2, 3, 4, 5],
              (i) => Effect.andThen(Effect.yieldNow, Effect.sync(() => out.push(i))),
              { concurrency: "unbounded" }
            )
          )
          let done = false
          fiber.addObserver(() => (done = true))
          await w.run(() => done, { maxTime: 1_000, maxSteps: 10_000 })
          return out
        }
        assert.deepStrictEqual(await order(), await order())
      }),
      { numRuns: 50 }
    ))

  it("draws vary the interleaving across seeds", async () => {
    const orders = new Set<string>()
    for (let seed = 0; seed < 40; seed++) {
      const w = world(seed)
      const proc = w.process("p")
      const out: Array<number> = []
      const fiber = w.fork(
        proc,
        Effect.forEach([0, 1, 2, 3], (i) => Effect.andThen(Effect.yieldNow, Effect.sync(() => out.push(i))), {
          concurrency: "unbounded"
        })
      )
      // oxlint-disable-next-line no-await-in-loop -- runs one after the other
      await w.run(() => fiber.pollUnsafe() !== undefined, { maxTime: 1_000, maxSteps: 10_000 })
      orders.add(out.join(""))
    }
    assert.isAbove(orders.size, 1)
  })
})
