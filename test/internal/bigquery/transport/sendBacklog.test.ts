/**
 * The send backlog: requests handed to grpc-js and not yet taken for the wire. Admission waits
 * from `high` and resumes at `low`; a call that ends gives back what it still held, once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as fc from "fast-check"
import * as SendBacklog from "../../../../src/internal/bigquery/transport/sendBacklog.ts"

type Op =
  | { readonly _tag: "write"; readonly call: number }
  | { readonly _tag: "take"; readonly call: number }
  | { readonly _tag: "end"; readonly call: number }

const op: fc.Arbitrary<Op> = fc.record({
  _tag: fc.constantFrom("write" as const, "take" as const, "end" as const),
  call: fc.integer({ min: 0, max: 3 })
})

describe("sendBacklog", () => {
  it("counts each request once, whether grpc-js takes it or its call ends first", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const backlog = SendBacklog.make(8)
        const calls = Array.from({ length: 4 }, () => SendBacklog.forCall(backlog))
        // the model: per call, requests not yet taken (callbacks outstanding), and whether it ended
        const pending: Array<Array<() => void>> = [[], [], [], []]
        const ended = [false, false, false, false]
        for (const o of ops) {
          const call = calls[o.call]!
          if (o._tag === "write") {
            if (ended[o.call]) continue // an ended call is never written to
            call.write((taken) => void pending[o.call]!.push(taken))
          } else if (o._tag === "take") {
            const taken = pending[o.call]!.shift()
            taken?.()
          } else {
            call.end()
            ended[o.call] = true
          }
          const expected = pending.reduce((sum, p, i) => sum + (ended[i] ? 0 : p.length), 0)
          assert.strictEqual(backlog.size(), expected)
        }
        // callbacks that come after their call ended count nothing
        for (const p of pending) for (const taken of p) taken()
        for (const call of calls) call.end()
        assert.strictEqual(backlog.size(), 0)
      })
    )
  })

  it.effect("admission waits from `high` requests and resumes at `low`, not only once the backlog is empty", () =>
    Effect.gen(function*() {
      const backlog = SendBacklog.make(4, 2)
      for (let i = 0; i < 3; i++) backlog.sent()
      assert.isUndefined(backlog.wait(), "below high: no wait")
      backlog.sent()
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

  it("holds as many appends as fit 4 MiB before admission waits, from 8 to 1,024", () => {
    assert.strictEqual(SendBacklog.highFor(512 * 1024), 8)
    assert.strictEqual(SendBacklog.highFor(16 * 1024), 256)
    assert.strictEqual(SendBacklog.highFor(100 * 1000), 42)
    assert.strictEqual(SendBacklog.highFor(10 * 1024 * 1024), 8)
    assert.strictEqual(SendBacklog.highFor(1), 1024)
  })
})
