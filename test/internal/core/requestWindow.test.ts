import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import type { Backend, Core, Method, VerdictOf } from "../../../src/internal/core/backend.ts"
import * as writer from "../../../src/internal/core/writer.ts"
import type { FailedElement } from "../../../src/Sink/FailedElement.ts"
import { FailureHandler } from "../../../src/Sink/FailureHandler.ts"

/** One request per record; it is its own accounted item, and goes again as it is. */
interface Request {
  readonly key: string
  readonly name: string
  readonly units: number
  readonly bytes: number
  readonly permitBytes: number
  generation: number
  calls: number
}

const policy = {
  _tag: "Backoff" as const,
  initialBackoff: Duration.seconds(1),
  maxBackoff: Duration.seconds(1),
  maxAttempts: 5,
  multiplier: 2,
  maxDuration: undefined
}

/** Names in, each its own request and item, answered `ok` or `again`. */
interface ChainMethod extends Method {
  readonly Record: string
  readonly Slice: Request
  readonly Item: Request
  readonly Request: Request
  readonly Outcome: "ok" | "again"
  readonly Failure: FailedElement
  readonly Error: never
  readonly HandlerError: never
  readonly Context: never
}

/**
 * A method whose second request waits in its call for the end of the first (a buffered stream's
 * link): the first fails once and goes again after a wait, keeping its place (`reserve`) or not.
 */
const chained =
  (reserve: boolean, firstEnded: Deferred.Deferred<void>, calls: Array<string>) => (core: Core<ChainMethod>) =>
    Effect.succeed<Backend<ChainMethod>>({
      name: "ChainSink",
      sliceRecords: 1,
      prepare: (records) =>
        Effect.succeed({
          slices: records.map((name) => ({
            payload: { key: "t", name, units: 1, bytes: 1, permitBytes: 1, generation: 0, calls: 0 },
            units: 1,
            bytes: 1,
            permitBytes: 1
          })),
          routed: [],
          skipped: []
        }),
      admit: (request, _now, generation) =>
        Effect.suspend(() => {
          request.generation = generation
          return core.send(request)
        }),
      call: (request) =>
        Effect.suspend(() => {
          request.calls++
          calls.push(`${request.name}#${request.calls}`)
          if (request.name === "first") {
            return request.calls === 1 ? Effect.succeed("again" as const) : Effect.as(
              Deferred.succeed(firstEnded, undefined),
              "ok" as const
            )
          }
          return Effect.as(Deferred.await(firstEnded), "ok" as const)
        }),
      judge: (request, outcome): Effect.Effect<VerdictOf<ChainMethod>> =>
        Effect.succeed({
          written: outcome === "ok" ? [request] : [],
          routed: [],
          resend: [],
          repair: [],
          retry: outcome === "again"
            ? { items: [request], attempt: 1, budget: "recovery", exhausted: () => undefined as never }
            : undefined,
          terminal: undefined,
          reserve: outcome === "again" && reserve
        }),
      resend: (requests) => Effect.forEach(requests, core.send, { discard: true }),
      stallMessage: () => ({ message: "stalled", destinations: "t" })
    })

const run = (reserve: boolean) =>
  Effect.gen(function*() {
    const firstEnded = yield* Deferred.make<void>()
    const calls: Array<string> = []
    const w = yield* writer.make<ChainMethod>({
      handler: FailureHandler.logAndDrop,
      limits: { maxUnits: 10, maxBytes: 10, maxRequests: 1 },
      retry: policy,
      recovery: policy,
      metrics: { perDestination: false },
      backend: chained(reserve, firstEnded, calls)
    })
    const flushed = yield* Deferred.make<void>()
    yield* Effect.forkChild(
      w.write(["first", "second"]).pipe(Effect.andThen(w.flush), Effect.andThen(Deferred.succeed(flushed, undefined)))
    )
    for (let i = 0; i < 10; i++) yield* TestClock.adjust("1 second")
    // the result leaves as a failure: the scope then closes without the final barrier, which a
    // writer that lost its window would wait for forever
    return yield* Effect.fail({ calls, done: yield* Deferred.isDone(flushed) })
  }).pipe(Effect.scoped, Effect.flip)

describe("writer core: the request window", () => {
  it.effect("a request that goes again keeps its place, so one sent after it cannot hold the window it needs", () =>
    Effect.gen(function*() {
      const kept = yield* run(true)
      assert.isTrue(kept.done, "the writer flushes")
      assert.deepStrictEqual(kept.calls, ["first#1", "first#2", "second#1"])
      // without the reservation the second request takes the window while the first waits, then
      // waits in its call for the first, which can never go again: the writer never flushes
      const lost = yield* run(false)
      assert.isFalse(lost.done, "the place was taken")
      assert.deepStrictEqual(lost.calls, ["first#1", "second#1"])
    }))
})
