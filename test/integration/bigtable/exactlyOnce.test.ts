/**
 * The exactly-once mode against cbtemulator: the emulator's deviations pinned (no instance admin API,
 * so app profiles are not checked there), the preconditions on live tables, and the lost-response
 * scenario of reference 4.3: a fault proxy drops responses of applied CheckAndMutateRow requests (and
 * every other answer on that connection); each failed commit is restored and re-run until it
 * succeeds, then the record is restored again until at least 257 duplicate deliveries were absorbed.
 * The 128 AddToCell effects are applied exactly once: the sum and the markers are exact.
 */
import { assert, layer } from "@effect/vitest"
import { v2 } from "@google-cloud/bigtable"
import * as grpc from "@grpc/grpc-js"
import { Effect, Layer, Metric, Schema } from "effect"
import {
  BigtableClient,
  BigtableMetrics,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../../../src/Sink.ts"
import { counters, createCounterTable } from "../../support/bigtableCounters.ts"
import { BigtableEmulator } from "../../support/BigtableEmulator.ts"
import * as Clients from "../../support/clients.ts"
import * as FaultProxy from "../../support/faultProxy.ts"

const projectId = "test-project"
const instanceId = "exactly-once"

const increment = (i: number) =>
  RowMutationEntry.make(
    `counter${String(i % 8).padStart(2, "0")}`,
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: BigInt(i + 1) })
  )

layer(BigtableEmulator.layer, { timeout: "120 seconds", excludeTestServices: true })(
  "BigtableSink.exactlyOnce on cbtemulator",
  (it) => {
    it.effect("pinned: the emulator has no instance admin API (GetAppProfile is UNIMPLEMENTED)", () =>
      Effect.gen(function*() {
        const emulator = yield* BigtableEmulator
        const client = new v2.BigtableInstanceAdminClient({
          servicePath: emulator.host,
          apiEndpoint: emulator.host,
          port: emulator.port,
          sslCreds: grpc.credentials.createInsecure(),
          projectId,
          universeDomain: "googleapis.com"
        })
        const error = yield* Effect.tryPromise(() =>
          client.getAppProfile({ name: `projects/${projectId}/instances/${instanceId}/appProfiles/default` })
        ).pipe(Effect.flip, Effect.ensuring(Effect.promise(() => client.close())))
        const code = (error.cause as { readonly code?: number } | undefined)?.code
        assert.strictEqual(code, 12)
      }))

    it.effect("preconditions on live tables fail before any write", () =>
      Effect.gen(function*() {
        const emulator = yield* BigtableEmulator
        const cases = [
          { families: { c: "INT64_SUM" }, expected: /marker family 'm' does not exist/ },
          { families: { c: "INT64_SUM", m: "RAW+GC" }, expected: /has a GC rule/ },
          { families: { c: "INT64_SUM", m: "INT64_SUM" }, expected: /must be raw/ },
          { families: { c: "RAW", m: "RAW" }, expected: /AddToCell on 'c', a raw family/ }
        ] as const
        for (const c of cases) {
          const tableId = Clients.uniqueId("pre")
          yield* createCounterTable(emulator, projectId, instanceId, tableId, c.families)
          const error = yield* Effect.gen(function*() {
            const resume = yield* Checkpoint.resume({ writerId: tableId, positionSchema: Schema.Number })
            const writer = yield* BigtableSink.writer({
              table: TableDestination.makeUnsafe({ projectId, instanceId, tableId }),
              writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m" }),
              checkpoint: { resume, position: (i: number) => i + 1 },
              serializer: increment
            })
            yield* writer.write([0, 1, 2])
            yield* writer.checkpoint(3)
          }).pipe(
            Effect.scoped,
            Effect.provide(Layer.mergeAll(
              CheckpointStore.memory,
              BigtableClient.layer({ projectId, emulator: { grpc: emulator.emulatorHost } }).pipe(Layer.orDie)
            )),
            Effect.flip
          )
          assert.match(error.message, c.expected)
          const read = yield* counters(emulator, projectId, instanceId, tableId)
          assert.strictEqual(read.rows, 0, "nothing was written")
        }
      }))

    it.effect(
      "lost responses: 128 AddToCell effects applied exactly once, >= 257 duplicates absorbed",
      () =>
        Effect.gen(function*() {
          const emulator = yield* BigtableEmulator
          const proxy = yield* FaultProxy.start({
            upstreamHost: emulator.host,
            upstreamPort: emulator.port,
            unavailableEvery: 0,
            resetEvery: 23,
            maxResets: 8
          })
          const tableId = Clients.uniqueId("lost")
          yield* createCounterTable(emulator, projectId, instanceId, tableId, { c: "INT64_SUM", m: "RAW" })
          const table = TableDestination.makeUnsafe({ projectId, instanceId, tableId })
          const destination = { destination: `${projectId}.${instanceId}.${tableId}` }
          const deduplicated = Metric.withAttributes(BigtableMetrics.requestsDeduplicated, destination)
          const completed = Metric.withAttributes(BigtableMetrics.requestsCompleted, destination)
          const client = BigtableClient.layer({ projectId, emulator: { grpc: proxy.target } }).pipe(Layer.orDie)
          const n = 128

          // One run: restore (re-running the stored commits), then, while the source has not been
          // checkpointed, stage the 128 increments and checkpoint. A lost response fails it.
          const run = Effect.gen(function*() {
            const resume = yield* Checkpoint.resume({ writerId: tableId, positionSchema: Schema.Number })
            const writer = yield* BigtableSink.writer({
              table,
              writeMethod: WriteMethod.exactlyOnce({
                markerFamily: "m",
                maxInFlightRequests: 8,
                perDestinationMetrics: true
              }),
              checkpoint: { resume, position: (i: number) => i + 1 },
              serializer: increment
            })
            if (resume.position._tag === "None") {
              yield* writer.write(Array.from({ length: n }, (_, i) => i))
              yield* writer.checkpoint(n)
            }
          }).pipe(Effect.scoped, Effect.provide(client))

          let failures = 0
          let runs = 0
          // until the 128 envelopes went through once, then until 257 duplicates were absorbed
          while (runs < 40) {
            runs++
            const exit = yield* Effect.exit(run)
            if (exit._tag === "Failure") {
              failures++
              continue
            }
            const dups = (yield* Metric.value(deduplicated)).count
            if (dups >= 257) break
          }
          const absorbed = (yield* Metric.value(deduplicated)).count
          const applied = (yield* Metric.value(completed)).count
          const read = yield* counters(emulator, projectId, instanceId, tableId)
          const expected = new Map<string, bigint>()
          for (let i = 0; i < n; i++) {
            const row = `counter${String(i % 8).padStart(2, "0")}`
            expected.set(row, (expected.get(row) ?? 0n) + BigInt(i + 1))
          }
          assert.deepStrictEqual(read.sums, expected)
          assert.strictEqual(read.markers.length, n)
          assert.isTrue(read.markers.every((m) => m.family === "m" && m.value === "1" && m.timestampMicros === 0))
          assert.strictEqual(new Set(read.markers.map((m) => m.qualifier)).size, n)
          assert.isAtLeast(absorbed, 257)
          assert.isAtMost(applied, n) // lost responses were applied without being counted
          assert.isAbove(failures, 0)
          assert.isAbove(proxy.stats.resets, 0)
          yield* Effect.log(
            `lost-response proof: ${n} effects, ${proxy.stats.resets} responses lost, ${failures} failed commits, ` +
              `${runs} runs, ${absorbed} duplicates absorbed, ${applied} applied with an answer`
          )
        }).pipe(Effect.provide(CheckpointStore.memory)),
      { timeout: 120_000 }
    )
  }
)
