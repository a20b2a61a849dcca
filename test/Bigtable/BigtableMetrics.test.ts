import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Metric, Schedule, Schema, Stream } from "effect"
import {
  BigtableClient,
  BigtableMetrics,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../src/Bigtable/index.ts"
import * as internal from "../../src/internal/bigtable/metrics.ts"
import { Checkpoint, CheckpointStore, FailureHandler } from "../../src/Sink.ts"
import { makeFakeCheckAndMutate } from "../support/fakeCheckAndMutate.ts"
import { type Click, clicks, serializer, table } from "./clickFixtures.ts"
import { makeFake } from "./fakeBigtable.ts"

describe("BigtableMetrics", () => {
  it("exports the metrics the sink updates, under their ADR 0009 names", () => {
    const ids = Object.fromEntries(Object.entries(BigtableMetrics).map(([key, metric]) => [key, metric.id]))
    assert.deepStrictEqual(ids, {
      recordsSend: "bigtable.numRecordsSend",
      bytesSend: "bigtable.numBytesSend",
      recordsSendErrors: "bigtable.numRecordsSendErrors",
      recordsSkipped: "bigtable.recordsSkipped",
      inFlightEntries: "bigtable.inFlightEntries",
      inFlightBytes: "bigtable.inFlightBytes",
      parkedEntries: "bigtable.parkedEntries",
      errors: "bigtable.errors",
      tablesCreated: "bigtable.tablesCreated",
      columnFamiliesAdded: "bigtable.columnFamiliesAdded",
      destinationRecordsSend: "bigtable.destination.recordsSend",
      destinationSendErrors: "bigtable.destination.sendErrors",
      clientAttempts: "bigtable.client.attempts",
      clientLatency: "bigtable.client.latency",
      stagedEntries: "bigtable.stagedEntries",
      stagedBytes: "bigtable.stagedBytes",
      requestsCompleted: "bigtable.requestsCompleted",
      requestsDeduplicated: "bigtable.requestsDeduplicated",
      requestsFailed: "bigtable.requestsFailed"
    })
    assert.strictEqual(BigtableMetrics.inFlightEntries, internal.inFlightEntries)
    assert.strictEqual(BigtableMetrics.clientLatency, internal.clientLatency)
  })
})

/** A metric's value as one number over all its attribute sets (counter count, gauge value, samples). */
const reading = (metric: Metric.Metric<never, unknown>): Effect.Effect<number> =>
  Effect.map(Metric.snapshot, (snapshots) =>
    snapshots.filter((s) => s.id === metric.id).reduce((sum, s) => {
      const state = s.state as { readonly count?: number | bigint; readonly value?: number | bigint }
      return sum + Number(state.count ?? state.value ?? 0)
    }, 0))

/** Records `key` ("t:…" or "u:…" picks the table), written with one cell in the family after the dot. */
const entry = (key: string): RowMutationEntry.RowMutationEntry | null =>
  key.includes("skip")
    ? null
    : RowMutationEntry.make(key, Mutation.setCell({ family: key.split(".")[1] ?? "cf", qualifier: "q", value: key }))

const uName = "projects/p/instances/i/tables/u"

/** An at-least-once run that creates `t`, adds a family to `u`, retries, isolates and routes a row. */
const atLeastOnce = (perDestinationMetrics: boolean) =>
  Effect.gen(function*() {
    let flaky = true
    const fake = makeFake({
      latencyMs: 40,
      tables: new Map([[uName, new Set(["cf"])]]),
      decide: (e) => {
        if (e.rowKey.startsWith("t:bad")) return { code: 3, message: "bad row" }
        if (e.rowKey.startsWith("t:flaky") && flaky) {
          flaky = false
          return { code: 14, message: "try again" }
        }
        return { code: 0 }
      }
    })
    const layer = BigtableClient.fromClients({
      projectId: "p",
      data: fake.data,
      admin: fake.adminClient,
      exportClientMetrics: true
    })
    const t = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
    const u = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "u" })
    yield* Stream.make("t:1.cf", "t:bad.cf", "t:flaky.cf", "t:skip.cf", "u:1.extra", "u:2.cf").pipe(
      Stream.run(BigtableSink.make({
        destinationResolver: (key: string) => (key.startsWith("t:") ? t : u),
        serializer: entry,
        createDisposition: "CREATE_IF_NEEDED",
        tableCreateOptions: { columnFamilies: { cf: {}, extra: {} } },
        failureHandler: FailureHandler.logAndDrop,
        writeMethod: WriteMethod.atLeastOnce({
          retry: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 5 },
          recovery: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 5 },
          batchElementCount: 10,
          perDestinationMetrics
        })
      })),
      Effect.provide(layer)
    )
  })

/**
 * An exactly-once run whose first commit loses an applied answer (failed), then a restore
 * (deduplicated); `sample` reads the gauges while entries are staged.
 */
const exactlyOnce = (sample: Effect.Effect<void>) =>
  Effect.gen(function*() {
    let failing = true
    const fake = makeFakeCheckAndMutate({
      fail: (call) => (failing && call.n === 2 ? { code: 4, message: "lost response", applied: true } : undefined)
    })
    const run = (records: ReadonlyArray<Click>) =>
      Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "metrics", positionSchema: Schema.Number })
        const writer = yield* BigtableSink.writer({
          table: yield* table,
          writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
          checkpoint: { resume, position: (c: Click) => c.offset + 1 },
          serializer
        })
        yield* writer.write(records)
        yield* writer.flush
        yield* sample
        yield* writer.checkpoint((records.at(-1)?.offset ?? 0) + 1)
      }).pipe(Effect.scoped, Effect.provide(Layer.orDie(fake.layer)))
    assert.isTrue(Exit.isFailure(yield* Effect.exit(run(clicks(0, 3)))))
    failing = false
    yield* run(clicks(3, 6))
  }).pipe(Effect.provide(CheckpointStore.memory))

describe("BigtableMetrics in a run", () => {
  it.live("every exported metric moves in a run that meets what it counts", () =>
    Effect.gen(function*() {
      const metrics = Object.entries(BigtableMetrics) as ReadonlyArray<readonly [string, Metric.Metric<never, unknown>]>
      const before = new Map<string, number>()
      for (const [name, metric] of metrics) before.set(name, yield* reading(metric))
      // gauges go back to 0 when the writers close: their highest reading while they run is what moved
      const peaks = new Map<string, number>()
      const sample = Effect.forEach(metrics, ([name, metric]) =>
        Effect.map(reading(metric), (v) => void peaks.set(name, Math.max(peaks.get(name) ?? 0, v))))
      const sampler = yield* Effect.forkChild(Effect.repeat(sample, Schedule.spaced("1 millis")))
      yield* atLeastOnce(false)
      yield* atLeastOnce(true)
      yield* exactlyOnce(sample)
      yield* Fiber.interrupt(sampler)
      for (const [name, metric] of metrics) {
        const after = Math.max(yield* reading(metric), peaks.get(name) ?? 0)
        assert.isAbove(after, before.get(name) ?? 0, `${metric.id} did not move`)
      }
    }), 30_000)
})
