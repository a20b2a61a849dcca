/**
 * `hotSpan`: a span with its attributes, under the caller's span, failed when its effect fails, and
 * without the call-site stack trace `Effect.withSpan` captures by default.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, References } from "effect"
import { hotSpan } from "../../../src/internal/core/hotSpan.ts"
import { named, recordingTracer } from "../../support/recordingTracer.ts"

describe("hotSpan", () => {
  it.effect("records the span with its attributes under the caller's, failed when the effect fails", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      yield* Effect.gen(function*() {
        yield* Effect.void.pipe(hotSpan("bare"))
        yield* Effect.succeed(1).pipe(hotSpan("with", { "a.b": 2 }))
        yield* Effect.flip(Effect.fail("no").pipe(hotSpan("failing")))
      }).pipe(Effect.withSpan("outer"), Effect.withTracer(tracer))
      assert.deepStrictEqual(named(ended, "bare").map((s) => [s.attributes.size, s.parent, s.failed]), [
        [0, "outer", false]
      ])
      assert.deepStrictEqual(named(ended, "with").map((s) => s.attributes.get("a.b")), [2])
      assert.deepStrictEqual(named(ended, "failing").map((s) => s.failed), [true])
    }))

  it.effect("captures no call-site stack, where a plain withSpan does", () =>
    Effect.gen(function*() {
      const stackIn = Effect.map(References.CurrentStackFrame, (frame) => frame?.stack())
      const plain = yield* stackIn.pipe(Effect.withSpan("plain"))
      const hot = yield* stackIn.pipe(hotSpan("hot"))
      assert.isString(plain, "the control: a plain span carries its call site")
      assert.isUndefined(hot)
    }))
})
