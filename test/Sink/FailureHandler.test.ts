import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Logger, Ref, References, Sink } from "effect"
import { DeadLetterStalled, type FailedElement, FailureHandler, RecordFailed, SinkConfigError } from "../../src/Sink.ts"
import { virtually } from "../support/virtualTime.ts"

const failure = (i: number): FailedElement => ({
  connector: i % 2 === 0 ? "bigquery" : "bigtable",
  destination: `p.d.t${i % 3}`,
  payload: new Uint8Array([i]),
  message: `bad record ${i}`
})

describe("FailureHandler", () => {
  it.effect("failJob fails with RecordFailed carrying the element; the message omits the payload", () =>
    Effect.gen(function*() {
      const element = { ...failure(4), payload: new TextEncoder().encode("secret-row-key") }
      const error = yield* Effect.flip(FailureHandler.failJob.handle(element))
      assert.instanceOf(error, RecordFailed)
      assert.strictEqual(error.failure, element)
      assert.strictEqual(error.message, "bigquery record failed for p.d.t1: bad record 4")
      assert.notInclude(String(error), "secret-row-key")
    }))

  it.effect("logAndDrop logs a warning naming connector, destination and reason, and succeeds", () =>
    Effect.gen(function*() {
      const lines: Array<{ level: string; message: unknown; annotations: Record<string, unknown> }> = []
      const capture = Logger.make(({ fiber, logLevel, message }) => {
        lines.push({ level: logLevel, message, annotations: { ...fiber.getRef(References.CurrentLogAnnotations) } })
      })
      yield* FailureHandler.logAndDrop.handle(failure(1)).pipe(Effect.provide(Logger.layer([capture])))
      assert.strictEqual(lines.length, 1)
      assert.strictEqual(lines[0]?.level, "Warn")
      assert.deepStrictEqual(lines[0]?.annotations, {
        connector: "bigtable",
        destination: "p.d.t1",
        reason: "bad record 1"
      })
    }))

  it.effect("deadLetter forwards buffered failures, in order, only at flush", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<Array<string>>([])
      const handler = FailureHandler.deadLetter(
        Sink.forEach((f: FailedElement) => Ref.update(seen, (s) => [...s, f.message]))
      )
      yield* handler.open
      for (let i = 0; i < 5; i++) yield* handler.handle(failure(i))
      assert.deepStrictEqual(yield* Ref.get(seen), [])
      yield* handler.flush
      assert.deepStrictEqual(yield* Ref.get(seen), [0, 1, 2, 3, 4].map((i) => `bad record ${i}`))
      yield* handler.flush
      assert.strictEqual((yield* Ref.get(seen)).length, 5)
      yield* handler.close
    }))

  it.effect("deadLetter runs the sink early when maxBuffered are waiting", () =>
    Effect.gen(function*() {
      const batches = yield* Ref.make<Array<number>>([])
      const handler = FailureHandler.deadLetter(
        Sink.forEachArray((fs: ReadonlyArray<FailedElement>) => Ref.update(batches, (b) => [...b, fs.length])),
        { maxBuffered: 3 }
      )
      for (let i = 0; i < 7; i++) yield* handler.handle(failure(i))
      yield* handler.flush
      assert.deepStrictEqual((yield* Ref.get(batches)).reduce((a, b) => a + b, 0), 7)
      assert.deepStrictEqual(yield* Ref.get(batches), [3, 3, 1])
    }))

  it.effect("deadLetter re-runs a sink that ends early, so nothing is lost", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<Array<ReadonlyArray<string>>>([])
      const takeTwo = Sink.take<FailedElement>(2).pipe(
        Sink.mapEffect((fs) => Ref.update(seen, (s) => [...s, fs.map((f) => f.message)]))
      )
      const handler = FailureHandler.deadLetter(takeTwo)
      for (let i = 0; i < 5; i++) yield* handler.handle(failure(i))
      yield* handler.flush
      assert.deepStrictEqual((yield* Ref.get(seen)).flat(), [0, 1, 2, 3, 4].map((i) => `bad record ${i}`))
    }))

  it.effect("a failing dead-letter sink fails the flush with its error", () =>
    Effect.gen(function*() {
      const handler = FailureHandler.deadLetter(Sink.forEach((_: FailedElement) => Effect.fail("dlq down" as const)))
      yield* handler.handle(failure(1))
      const exit = yield* Effect.exit(handler.flush)
      assert.deepStrictEqual(exit, Exit.fail("dlq down"))
    }))

  it.effect("make fills in lifecycle steps that do nothing", () =>
    Effect.gen(function*() {
      const count = yield* Ref.make(0)
      const handler = FailureHandler.make({ handle: (_: FailedElement) => Ref.update(count, (n) => n + 1) })
      yield* handler.open
      yield* handler.handle(failure(0))
      yield* handler.flush
      yield* handler.close
      assert.strictEqual(yield* Ref.get(count), 1)
    }))

  it.effect("a dead-letter sink that consumes nothing fails the flush with a typed error after one run, no spin", () =>
    Effect.gen(function*() {
      let runs = 0
      const handler = FailureHandler.deadLetter(Sink.fromEffect(Effect.sync(() => void runs++)))
      yield* handler.open
      for (let i = 0; i < 3; i++) yield* handler.handle(failure(i))
      const exit = yield* virtually(handler.flush, { step: "10 millis", steps: 200 })
      assert.isTrue(Exit.isFailure(exit), `the flush did not fail (after ${runs} runs of the sink)`)
      if (Exit.isSuccess(exit)) return
      const error = Cause.squash(exit.cause)
      assert.instanceOf(error, DeadLetterStalled)
      if (!(error instanceof DeadLetterStalled)) return
      assert.strictEqual(error.remaining, 3)
      assert.include(error.message, "3 failures")
      assert.strictEqual(runs, 1)
    }))

  it.effect("deadLetter runs the sink early when maxBufferedBytes of payloads are waiting", () =>
    Effect.gen(function*() {
      const batches = yield* Ref.make<Array<number>>([])
      const handler = FailureHandler.deadLetter(
        Sink.forEachArray((fs: ReadonlyArray<FailedElement>) => Ref.update(batches, (b) => [...b, fs.length])),
        { maxBuffered: Infinity, maxBufferedBytes: 100 }
      )
      yield* handler.open
      for (let i = 0; i < 5; i++) yield* handler.handle({ ...failure(i), payload: new Uint8Array(60) })
      assert.deepStrictEqual(yield* Ref.get(batches), [2, 2])
      yield* handler.flush
      assert.deepStrictEqual(yield* Ref.get(batches), [2, 2, 1])
    }))

  it.effect("an invalid maxBufferedBytes fails the handler's open with a SinkConfigError naming it", () =>
    Effect.gen(function*() {
      for (const maxBufferedBytes of [0, -1, Number.NaN]) {
        const handler = FailureHandler.deadLetter(Sink.drain, { maxBufferedBytes })
        const error = yield* Effect.flip(handler.open)
        assert.instanceOf(error, SinkConfigError)
        if (!(error instanceof SinkConfigError)) return
        assert.strictEqual(error.path, "deadLetter.maxBufferedBytes")
      }
    }))
})
