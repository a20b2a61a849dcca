/**
 * The deadline heap against a model (a list of pending deadlines): any sequence of adds, removals
 * (of pending, expired and already removed deadlines) and advances of the clock expires exactly the
 * pending deadlines that are due, in due order (equal due times in the order they were added).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Heap from "../../../src/internal/wire/deadlineHeap.ts"
import { sameHiddenClass } from "../../support/hiddenClass.ts"

type Op =
  | { readonly _tag: "add"; readonly after: number }
  | { readonly _tag: "remove"; readonly pick: number; readonly pending: boolean }
  | { readonly _tag: "advance"; readonly by: number }

// adds outweigh the rest, so heaps grow deep enough for removals to move entries up as well as down
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ _tag: fc.constant("add" as const), after: fc.integer({ min: 0, max: 100 }) }), weight: 4 },
  { arbitrary: fc.record({ _tag: fc.constant("remove" as const), pick: fc.nat(), pending: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ _tag: fc.constant("advance" as const), by: fc.integer({ min: 0, max: 20 }) }), weight: 1 }
)

const expire = () => {}

describe("deadlineHeap", () => {
  it("heaps and timers have hidden classes of their own (ADR 0056)", () => {
    const heap = Heap.make()
    const timer = Heap.add(heap, 10, expire)
    assert.isFalse(sameHiddenClass(heap, { items: heap.items, seq: heap.seq }))
    assert.isFalse(sameHiddenClass(timer, { due: 10, seq: 0, expire, index: 0 }))
  })

  it("expires exactly the pending deadlines that are due, in due order, whatever is added and removed", () =>
    fc.assert(
      fc.property(fc.array(op, { minLength: 20, maxLength: 300, size: "max" }), (ops) => {
        const heap = Heap.make()
        let now = 0
        let next = 0
        // the model: pending deadlines by id, and every timer made (removals also pick gone ones)
        const pending = new Map<number, number>()
        const made: Array<{ readonly id: number; readonly timer: Heap.Timer }> = []
        const expired: Array<number> = []
        for (const o of ops) {
          if (o._tag === "add") {
            const id = next++
            pending.set(id, now + o.after)
            made.push({ id, timer: Heap.add(heap, now + o.after, () => expired.push(id)) })
          } else if (o._tag === "remove") {
            // mostly a pending deadline (a call that ended), else any (one expired or removed already)
            const from = o.pending ? made.filter(({ id }) => pending.has(id)) : made
            if (from.length === 0) continue
            const { id, timer } = from[o.pick % from.length]!
            assert.strictEqual(Heap.remove(heap, timer), pending.delete(id))
          } else {
            now += o.by
            const due = [...pending].filter(([, at]) => at <= now).toSorted((a, b) => a[1] - b[1] || a[0] - b[0])
            const before = expired.length
            for (let t = Heap.takeDue(heap, now); t !== undefined; t = Heap.takeDue(heap, now)) t.expire()
            assert.deepStrictEqual(expired.slice(before), due.map(([id]) => id))
            for (const [id] of due) pending.delete(id)
          }
          assert.strictEqual(heap.items.length, pending.size)
          const earliest = pending.size === 0 ? undefined : Math.min(...pending.values())
          assert.strictEqual(Heap.earliest(heap), earliest)
        }
      }),
      { numRuns: 300 }
    ))
})
