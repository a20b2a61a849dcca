/**
 * A call started at once on no fiber, and its span made after it started: an answer that comes first
 * waits for the span; the answer is judged once; a cancel stops the call and ends the span
 * interrupted; the outcome is delivered even when ending the span throws.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Logger, Tracer } from "effect"
import * as CallNow from "../../../src/internal/core/callNow.ts"
import { named, recordingTracer } from "../../support/recordingTracer.ts"

/** A transport call: its answer callback, and whether it was stopped. */
interface Started {
  answer: ((n: number) => void) | undefined
  stopped: number
}

const harness = () => {
  const judged: Array<{ readonly answer: number; readonly span: string }> = []
  const delivered: Array<number> = []
  const started: Started = { answer: undefined, stopped: 0 }
  const judge = (call: CallNow.CallNow<number>, answer: number, span: Tracer.Span) => {
    judged.push({ answer, span: span.name })
    call.finish(Exit.succeed(answer), () => void delivered.push(answer))
  }
  const begin = (answerAtOnce?: number) => (call: CallNow.CallNow<number>) => {
    started.answer = call.answer
    // a transport may answer inside the write (a failed connection): before the span exists
    if (answerAtOnce !== undefined) call.answer(answerAtOnce)
    return () => void started.stopped++
  }
  return { judged, delivered, started, judge, begin }
}

describe("core/callNow", () => {
  it.effect("an answer that comes before the span is judged once the span is made, once", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      const h = harness()
      const cancel = yield* CallNow.start("call", { k: 1 }, h.judge, h.begin(7)).pipe(Effect.withTracer(tracer))
      assert.isDefined(cancel)
      assert.deepStrictEqual(h.judged, [{ answer: 7, span: "call" }])
      assert.deepStrictEqual(h.delivered, [7])
      // a second answer (the deadline's, after the transport's) is dropped
      h.started.answer?.(8)
      assert.deepStrictEqual(h.delivered, [7])
      const spans = named(ended, "call")
      assert.strictEqual(spans.length, 1)
      assert.isFalse(spans[0]?.failed)
      assert.strictEqual(spans[0]?.attributes.get("k"), 1)
    }))

  it.effect("an answer after the span is judged when it comes; a cancel after it does nothing", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      const h = harness()
      const cancel = yield* CallNow.start("call", {}, h.judge, h.begin()).pipe(Effect.withTracer(tracer))
      assert.deepStrictEqual(h.judged, [])
      assert.strictEqual(named(ended, "call").length, 0, "the span is open while the call is out")
      h.started.answer?.(3)
      assert.deepStrictEqual(h.delivered, [3])
      cancel?.()
      assert.strictEqual(h.started.stopped, 0, "an ended call is not stopped")
      assert.strictEqual(named(ended, "call").length, 1)
    }))

  it.effect("a cancel stops the call, ends its span interrupted and judges nothing after it", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      const h = harness()
      const cancelled: Array<bigint> = []
      const cancel = yield* CallNow.start("call", {}, h.judge, h.begin(), (_, now) => void cancelled.push(now)).pipe(
        Effect.withTracer(tracer)
      )
      cancel?.()
      cancel?.()
      assert.strictEqual(h.started.stopped, 1)
      assert.strictEqual(cancelled.length, 1)
      const spans = named(ended, "call")
      assert.strictEqual(spans.length, 1)
      assert.isTrue(spans[0]?.failed)
      h.started.answer?.(5)
      assert.deepStrictEqual(h.judged, [])
      assert.deepStrictEqual(h.delivered, [])
    }))

  it.effect("a call that cannot start now makes no span and is never judged", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      const h = harness()
      const cancel = yield* CallNow.start("call", {}, h.judge, () => undefined).pipe(Effect.withTracer(tracer))
      assert.isUndefined(cancel)
      assert.strictEqual(ended.length, 0)
    }))

  it.effect("a tracer that throws ending the span is logged, not thrown into the transport; the outcome is delivered", () =>
    Effect.gen(function*() {
      const throwing = Tracer.make({
        span: (options) =>
          new (class extends Tracer.NativeSpan {
            override end(): void {
              throw new Error("a tracer's bug")
            }
          })(options)
      })
      const logged: Array<string> = []
      const capture = Logger.make(({ logLevel, message }) => void logged.push(`${logLevel} ${String(message)}`))
      const h = harness()
      yield* CallNow.start("call", {}, h.judge, h.begin()).pipe(
        Effect.withTracer(throwing),
        Effect.provide(Logger.layer([capture]))
      )
      h.started.answer?.(9)
      assert.deepStrictEqual(h.delivered, [9])
      // the log runs on a fiber of its own
      yield* Effect.yieldNow
      assert.strictEqual(logged.length, 1)
      assert.match(logged[0] ?? "", /^Error .*the tracer threw ending span call/)
    }))

  it.effect("the first answer is taken once, even while a judge that went on elsewhere is out", () =>
    Effect.gen(function*() {
      const judged: Array<number> = []
      let pending: CallNow.CallNow<number> | undefined
      // a judge that does not end the call now (BigQuery's goes on on a fiber)
      const deferring = (call: CallNow.CallNow<number>, answer: number) => {
        judged.push(answer)
        pending = call
      }
      let answer: ((n: number) => void) | undefined
      yield* CallNow.start("call", {}, deferring, (call) => {
        answer = call.answer
        call.answer(1)
        call.answer(2) // before the span: the first is kept
        return () => {}
      })
      answer?.(3) // the deadline's, while the judge's work is out
      assert.deepStrictEqual(judged, [1])
      const delivered: Array<string> = []
      pending?.finish(Exit.void, () => void delivered.push("done"))
      pending?.finish(Exit.void, () => void delivered.push("again"))
      assert.deepStrictEqual(delivered, ["done"])
    }))

  it.effect("a cancel whose transport stop throws still ends the span interrupted", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      const h = harness()
      const cancelled: Array<bigint> = []
      const cancel = yield* CallNow.start(
        "call",
        {},
        h.judge,
        () => () => {
          throw new Error("a transport's bug")
        },
        (_, now) => void cancelled.push(now)
      ).pipe(Effect.withTracer(tracer))
      assert.throws(() => cancel?.(), "a transport's bug")
      assert.strictEqual(cancelled.length, 1)
      assert.isTrue(named(ended, "call")[0]?.failed)
    }))
})
