import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Ref, Scope } from "effect"
import * as failureRouting from "../../../src/internal/core/failureRouting.ts"
import * as summaryCounters from "../../../src/internal/core/summaryCounters.ts"
import { type FailedElement, FailureHandler } from "../../../src/Sink.ts"

const failure = (destination: string): FailedElement => ({ connector: "bigtable", destination, message: "x" })

const recording = (log: Ref.Ref<Array<string>>, failOn?: string) =>
  FailureHandler.make({
    open: Ref.update(log, (l) => [...l, "open"]),
    handle: (f: FailedElement) =>
      f.destination === failOn
        ? Effect.fail(`rejected ${f.destination}` as const)
        : Ref.update(log, (l) => [...l, `handle ${f.destination}`]),
    flush: Ref.update(log, (l) => [...l, "flush"]),
    close: Ref.update(log, (l) => [...l, "close"])
  })

describe("failureRouting", () => {
  it.effect("opens at creation, handles, flushes, and closes with the scope, in that order", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<Array<string>>([])
      const counters = summaryCounters.make()
      const scope = yield* Scope.make()
      const router = yield* failureRouting.make(recording(log), counters).pipe(Scope.provide(scope))
      assert.deepStrictEqual(yield* Ref.get(log), ["open"])
      yield* router.route(failure("a"))
      yield* router.route(failure("b"))
      yield* router.route(failure("a"))
      yield* router.flush
      assert.deepStrictEqual(yield* Ref.get(log), ["open", "handle a", "handle b", "handle a", "flush"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual((yield* Ref.get(log)).at(-1), "close")
      const summary = counters.snapshot()
      assert.strictEqual(summary.recordsFailed, 3)
      assert.strictEqual(summary.destinations["a"]?.recordsFailed, 2)
    }))

  it.effect("a handler that fails does not count the record, and close still runs on failure", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<Array<string>>([])
      const counters = summaryCounters.make()
      const exit = yield* Effect.scoped(
        Effect.gen(function*() {
          const router = yield* failureRouting.make(recording(log, "bad"), counters)
          yield* router.route(failure("ok"))
          yield* router.route(failure("bad"))
        })
      ).pipe(Effect.exit)
      assert.deepStrictEqual(exit, Exit.fail("rejected bad"))
      assert.deepStrictEqual(yield* Ref.get(log), ["open", "handle ok", "close"])
      assert.strictEqual(counters.snapshot().recordsFailed, 1)
    }))

  it.effect("close runs when the writer is interrupted", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<Array<string>>([])
      const exit = yield* Effect.scoped(
        Effect.gen(function*() {
          yield* failureRouting.make(recording(log), summaryCounters.make())
          return yield* Effect.interrupt
        })
      ).pipe(Effect.exit)
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.deepStrictEqual(yield* Ref.get(log), ["open", "close"])
    }))
})
