/** `hotSpan`: a span with its attributes, under the caller's span, failed when its effect fails. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { hotSpan } from "../../src/internal/hotSpan.ts"
import { named, recordingTracer } from "../support/recordingTracer.ts"

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
})
