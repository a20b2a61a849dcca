/**
 * The send backlog: requests handed to the transport and not yet taken for the wire, by weight.
 * Admission waits from `high` and resumes at `low`; a call that ends gives back what it still held, once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as fc from "fast-check"
import * as SendBacklog from "../../../../src/internal/bigquery/transport/sendBacklog.ts"

type Op =
  | { readonly _tag: "write"; readonly call: number; readonly weight: number }
  | { readonly _tag: "take"; readonly call: number }
  | { readonly _tag: "end"; readonly call: number }

const callIndex = fc.integer({ min: 0, max: 3 })
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ _tag: fc.constant("write" as const), call: callIndex, weight: fc.integer({ min: 1, max: 1 << 20 }) }),
  fc.record({ _tag: fc.constantFrom("take" as const, "end" as const), call: callIndex })
)

/** How many appends of `appendBytes` the backlog of a writer with this limit takes before admission waits. */
const waitsAfter = (maxAppendRequestBytes: number, appendBytes: number) => {
  const backlog = SendBacklog.make(SendBacklog.highFor(maxAppendRequestBytes))
  let n = 0
  while (backlog.wait() === undefined) {
    backlog.sent(SendBacklog.weightOf(appendBytes))
    n++
  }
  return n
}

describe("sendBacklog", () => {
  it("counts each request's weight once, whether the transport takes it or its call ends first", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const backlog = SendBacklog.make(8)
        const calls = Array.from({ length: 4 }, () => SendBacklog.forCall(backlog))
        // the model: per call, requests not yet taken (weights and callbacks outstanding), and whether it ended
        const pending: Array<Array<{ readonly weight: number; readonly taken: () => void }>> = [[], [], [], []]
        const ended = [false, false, false, false]
        for (const o of ops) {
          const call = calls[o.call]!
          if (o._tag === "write") {
            if (ended[o.call]) continue // an ended call is never written to
            call.write(o.weight, (taken) => void pending[o.call]!.push({ weight: o.weight, taken }))
          } else if (o._tag === "take") {
            pending[o.call]!.shift()?.taken()
          } else {
            call.end()
            ended[o.call] = true
          }
          const expected = pending.reduce(
            (sum, p, i) => ended[i] ? sum : p.reduce((s, request) => s + request.weight, sum),
            0
          )
          assert.strictEqual(backlog.size(), expected)
        }
        // callbacks that come after their call ended count nothing
        for (const p of pending) for (const request of p) request.taken()
        for (const call of calls) call.end()
        assert.strictEqual(backlog.size(), 0)
      })
    )
  })

  it.effect("admission waits from `high` and resumes at `low`, not only once the backlog is empty", () =>
    Effect.gen(function*() {
      const backlog = SendBacklog.make(4, 2)
      for (let i = 0; i < 3; i++) backlog.sent(1)
      assert.isUndefined(backlog.wait(), "below high: no wait")
      backlog.sent(1)
      const waiting = backlog.wait()
      assert.isDefined(waiting)
      const fiber = yield* Effect.forkChild(waiting ?? Effect.void)
      backlog.taken(1) // 3 > low
      yield* Effect.yieldNow
      assert.isUndefined(fiber.pollUnsafe(), "still above low")
      backlog.taken(1) // 2 = low
      yield* Fiber.join(fiber)
      assert.isUndefined(backlog.wait())
    }))

  it("holds 8 of the largest appends, and at least 4 MiB of appends cut small, before admission waits", () => {
    assert.strictEqual(waitsAfter(512 * 1024, 512 * 1024), 8)
    assert.strictEqual(waitsAfter(10 * 1024 * 1024, 10 * 1024 * 1024), 8)
    // appends cut small by linger or flushes, under the default 512 KiB limit: not 8, but 4 MiB of them
    assert.strictEqual(waitsAfter(512 * 1024, 16 * 1024), 207)
    assert.strictEqual(waitsAfter(512 * 1024, 0), 1032)
  })
})
