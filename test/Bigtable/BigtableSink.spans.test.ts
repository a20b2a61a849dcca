/**
 * The Bigtable sink's spans (README "Tracing"): one `BigtableSink.write` per chunk, one
 * `BigtableSink.mutateRows` per call with its table and entry count, `BigtableSink.flush` at the end
 * of input, all under the caller's span; a call that fails counts its entries not applied
 * (`bigtable.failedEntries`), and the retry has a span of its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope, Stream } from "effect"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } from "../../src/Bigtable/index.ts"
import { named, recordingTracer } from "../support/recordingTracer.ts"
import { onTestClock } from "../support/waiting.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const serializer = (i: number) =>
  RowMutationEntry.make(`k${i}`, Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }))

describe("BigtableSink spans", () => {
  it.effect("a span per chunk, per MutateRows call (table, entries) and for the flush, under the caller's span", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      const fake = makeFake()
      yield* Stream.range(0, 249).pipe(
        Stream.rechunk(50),
        Stream.run(BigtableSink.make({
          table,
          serializer,
          writeMethod: WriteMethod.atLeastOnce({ batchElementCount: 100 })
        })),
        Effect.withSpan("ingest"),
        Effect.provide(fake.layer),
        Effect.withTracer(tracer)
      )
      assert.strictEqual(named(ended, "BigtableSink.write").length, 5, "one per chunk of 50")
      const calls = named(ended, "BigtableSink.mutateRows")
      // one span per call the fake saw, with its entries: the first chunk goes at once to the idle
      // table (ADR 0029), later ones batch while a call is out, never above batchElementCount
      const entries = calls.map((s) => s.attributes.get("bigtable.entries"))
      assert.deepStrictEqual(entries, fake.requests.map((r) => r.rowKeys.length))
      assert.strictEqual(entries[0], 50)
      assert.strictEqual(fake.requests.reduce((n, r) => n + r.rowKeys.length, 0), 250)
      assert.isTrue(fake.requests.every((r) => r.rowKeys.length <= 100))
      assert.isTrue(
        calls.every((s) =>
          s.attributes.get("bigtable.table") === "p.i.t" && s.attributes.get("bigtable.failedEntries") === 0
        )
      )
      assert.strictEqual(named(ended, "BigtableSink.flush").length, 1)
      const own = ended.filter((s) => s.name !== "ingest")
      assert.deepStrictEqual([...new Set(own.map((s) => s.parent))], ["ingest"])
      assert.isTrue(own.every((s) => !s.failed))
    }))

  it.effect("a failed call counts its entries not applied; the retry that lands has its own span", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      let calls = 0
      const fake = makeFake({ callError: () => (++calls === 1 ? { code: 14, message: "unavailable" } : undefined) })
      const summary = yield* Stream.range(0, 9).pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer,
          writeMethod: WriteMethod.atLeastOnce({
            retry: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 3 }
          })
        })),
        Effect.provide(fake.layer),
        Effect.withTracer(tracer),
        onTestClock
      )
      assert.strictEqual(summary.recordsWritten, 10)
      // the call's effect does not fail (each entry carries its status): its span counts the entries
      const spans = named(ended, "BigtableSink.mutateRows")
      assert.deepStrictEqual(spans.map((s) => s.attributes.get("bigtable.failedEntries")), [10, 0])
      assert.isTrue(spans.every((s) => s.attributes.get("bigtable.entries") === 10))
    }))

  it.effect("a writer closed with a call unanswered ends the call's span, failed (interrupted)", () =>
    Effect.gen(function*() {
      const { ended, tracer } = recordingTracer()
      const fake = makeFake({ hold: true })
      const scope = yield* Scope.make()
      const writer = yield* BigtableSink.writer({ table, serializer }).pipe(
        Scope.provide(scope),
        Effect.provide(fake.layer),
        Effect.withTracer(tracer)
      )
      yield* writer.write([1, 2, 3]).pipe(Effect.withTracer(tracer))
      // the call is out and held by the fake: no answer will come
      for (let k = 0; k < 10_000 && fake.held() === 0; k++) yield* Effect.yieldNow
      assert.strictEqual(fake.held(), 1)
      yield* Scope.close(scope, Exit.interrupt())
      const spans = named(ended, "BigtableSink.mutateRows")
      assert.strictEqual(spans.length, 1, "the unanswered call's span ended when the writer closed")
      assert.isTrue(spans[0]?.failed)
    }))
})
