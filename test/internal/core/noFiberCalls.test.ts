/**
 * The writer's calls on no fiber: kept until they answer, each cancelled once at close; slots are
 * reused while open, so the array stops growing at the most calls out at once; after close, a call
 * added is cancelled at once.
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
          const slot = calls.add(() => void cancelled.push(id))
          out.push({ id, slot })
          most = Math.max(most, out.length)
          // slots are reused: one never lies beyond the most calls out at once
          assert.isBelow(slot, most)
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
      // once closed, a call added is cancelled at once and kept nowhere
      calls.add(() => void cancelled.push(-1))
      assert.strictEqual(cancelled.at(-1), -1)
      assert.strictEqual(calls.size, 0)
      calls.cancelAll()
      assert.strictEqual(cancelled.length, out.length + 1, "a cancel runs once: a second close runs none of them")
    })))

  it("a freed slot is taken again; removing an empty slot, or one after close, changes nothing", () => {
    const calls = new NoFiberCalls()
    const cancelled: Array<string> = []
    const a = calls.add(() => void cancelled.push("a"))
    calls.remove(a)
    calls.remove(a)
    assert.strictEqual(calls.size, 0, "a second remove does not count twice")
    const b = calls.add(() => void cancelled.push("b"))
    assert.strictEqual(b, a, "the freed slot is taken again")
    const c = calls.add(() => void cancelled.push("c"))
    calls.remove(c)
    calls.cancelAll()
    assert.deepStrictEqual(cancelled, ["b"])
    calls.remove(b)
    calls.remove(c)
    assert.strictEqual(calls.size, 0)
  })

  it("closing: a cancel that answers its own or a later call spares it; one added after runs at once", () => {
    const calls = new NoFiberCalls()
    const cancelled: Array<string> = []
    const slots: Array<number> = []
    // the first call's cancel makes its own call and the third answer (their `deliver` removes them)
    slots.push(calls.add(() => {
      cancelled.push("first")
      calls.remove(slots[0] ?? -1)
      calls.remove(slots[2] ?? -1)
    }))
    slots.push(calls.add(() => {
      cancelled.push("second")
      // a call started while the writer closes: cancelled at once, in no slot
      const late = calls.add(() => void cancelled.push("late"))
      calls.remove(late)
    }))
    slots.push(calls.add(() => void cancelled.push("third")))
    calls.cancelAll()
    assert.deepStrictEqual(cancelled, ["first", "second", "late"])
    assert.strictEqual(calls.size, 0)
    // no slot is taken again after close: a late remove of an old slot finds nothing
    const after = calls.add(() => void cancelled.push("after"))
    assert.deepStrictEqual(cancelled, ["first", "second", "late", "after"])
    calls.remove(after)
    calls.remove(slots[1] ?? -1)
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
