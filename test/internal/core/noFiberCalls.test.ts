/**
 * The writer's calls on no fiber: kept until they answer, each cancelled once at close; slots are
 * reused, so the arrays stop growing at the most calls out at once (no copy of them left behind).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { NoFiberCalls, type Slot } from "../../../src/internal/core/noFiberCalls.ts"

/** A step of a writer's life: a call starts, or the call started `n`-th among those out answers. */
type Step = { readonly start: true } | { readonly answer: number }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant({ start: true as const }),
  fc.nat(20).map((answer) => ({ answer }))
)

describe("core/noFiberCalls", () => {
  it("cancels at close exactly the calls out, once each, after any starts and answers", () =>
    fc.assert(fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
      const calls = new NoFiberCalls()
      const cancelled: Array<number> = []
      let out: Array<{ readonly id: number; readonly slot: Slot }> = []
      let next = 0
      let most = 0
      for (const s of steps) {
        if ("start" in s) {
          const id = next++
          out.push({ id, slot: calls.add(() => void cancelled.push(id)) })
          most = Math.max(most, out.length)
        } else if (out.length > 0) {
          const answered = out[s.answer % out.length]
          if (answered === undefined) continue
          calls.remove(answered.slot)
          out = out.filter((c) => c !== answered)
        }
        assert.strictEqual(calls.size, out.length)
      }
      calls.cancelAll()
      assert.deepStrictEqual(cancelled.toSorted((a, b) => a - b), out.map((c) => c.id))
      assert.strictEqual(calls.size, 0)
      // slots are reused: a new call takes one of the first `most` slots
      assert.isBelow(calls.add(() => {}), Math.max(1, most))
      calls.cancelAll()
      assert.strictEqual(cancelled.length, out.length, "a cancel runs once: a second close runs none of them")
    })))

  it("removing a slot twice, or after close, forgets nothing else", () => {
    const calls = new NoFiberCalls()
    const cancelled: Array<string> = []
    const a = calls.add(() => void cancelled.push("a"))
    calls.remove(a)
    const b = calls.add(() => void cancelled.push("b"))
    assert.strictEqual(b, a, "the freed slot is taken again")
    calls.remove(a)
    calls.remove(a)
    assert.strictEqual(calls.size, 0)
    const c = calls.add(() => void cancelled.push("c"))
    calls.add(() => void cancelled.push("d"))
    calls.cancelAll()
    calls.remove(c)
    assert.deepStrictEqual(cancelled, ["c", "d"])
    assert.strictEqual(calls.size, 0)
  })

  it("a cancel that throws does not stop the others; the first error is rethrown after all ran", () => {
    const calls = new NoFiberCalls()
    const ran: Array<string> = []
    calls.add(() => {
      ran.push("a")
      throw new Error("first")
    })
    calls.add(() => {
      ran.push("b")
      throw new Error("second")
    })
    calls.add(() => void ran.push("c"))
    assert.throws(() => calls.cancelAll(), "first")
    assert.deepStrictEqual(ran, ["a", "b", "c"])
    assert.strictEqual(calls.size, 0)
    calls.cancelAll()
    assert.deepStrictEqual(ran, ["a", "b", "c"], "each ran once")
  })
})
