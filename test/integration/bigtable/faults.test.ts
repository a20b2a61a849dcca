/**
 * Faults on the wire: a loopback HTTP/2 proxy between the sink's client and cbtemulator answers UNAVAILABLE to
 * one request in ten and resets the client connection after others (losing responses of applied requests).
 * Afterwards every record is present: no gaps (duplicates are allowed, delivery is at-least-once).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../src/Bigtable/index.ts"
import { BigtableEmulator } from "../../support/BigtableEmulator.ts"
import * as Clients from "../../support/clients.ts"
import * as FaultProxy from "../../support/faultProxy.ts"

const projectId = "test-project"
const instanceId = "faults"

layer(BigtableEmulator.layer, { timeout: "120 seconds", excludeTestServices: true })(
  "BigtableSink under faults",
  (it) => {
    it.effect("every record is present after UNAVAILABLE answers and connection resets", () =>
      Effect.gen(function*() {
        const emulator = yield* BigtableEmulator
        const proxy = yield* FaultProxy.start({
          upstreamHost: emulator.host,
          upstreamPort: emulator.port,
          unavailableEvery: 10,
          resetEvery: 37
        })
        const official = yield* Clients.bigtable(emulator, { projectId })
        const tableId = Clients.uniqueId("faults")
        yield* Effect.tryPromise(() => official.instance(instanceId).createTable(tableId, { families: ["cf"] }))
        const n = 20_000
        const table = TableDestination.makeUnsafe({ projectId, instanceId, tableId })
        const summary = yield* Stream.range(0, n - 1).pipe(
          Stream.run(BigtableSink.make({
            table,
            serializer: (i: number) =>
              RowMutationEntry.make(
                `row${String(i).padStart(6, "0")}`,
                Mutation.setCell({ family: "cf", qualifier: "i", value: BigInt(i), timestampMicros: 1_000_000 })
              ),
            writeMethod: WriteMethod.atLeastOnce({
              batchElementCount: 50,
              retry: { initialBackoff: "5 millis", maxBackoff: "200 millis", maxAttempts: 30 }
            })
          })),
          Effect.provide(BigtableClient.layer({ projectId, emulator: { grpc: proxy.target } }).pipe(Layer.fresh))
        )
        assert.strictEqual(summary.recordsWritten, n)
        assert.isAbove(summary.retries, 0)
        assert.isAbove(proxy.stats.unavailable, 0)
        assert.isAbove(proxy.stats.resets, 0)
        const [rows] = yield* Effect.tryPromise(() =>
          official.instance(instanceId).table(tableId).getRows({ decode: false })
        )
        const present = new Set(rows.map((row) => String(row.id)))
        const missing = Array.from({ length: n }, (_, i) => `row${String(i).padStart(6, "0")}`).filter((k) =>
          !present.has(k)
        )
        assert.deepStrictEqual(missing, [])
      }), { timeout: 120_000 })

    it.effect(
      "the proxy's latency delays every call by its round trip, and loses nothing",
      () =>
        Effect.gen(function*() {
          const emulator = yield* BigtableEmulator
          const latencyMillis = 150
          const proxy = yield* FaultProxy.start({
            upstreamHost: emulator.host,
            upstreamPort: emulator.port,
            unavailableEvery: 0,
            latencyMillis
          })
          const official = yield* Clients.bigtable(emulator, { projectId })
          const tableId = Clients.uniqueId("latency")
          yield* Effect.tryPromise(() => official.instance(instanceId).createTable(tableId, { families: ["cf"] }))
          const table = TableDestination.makeUnsafe({ projectId, instanceId, tableId })
          const write = (n: number) =>
            Stream.range(0, n - 1).pipe(
              Stream.run(BigtableSink.make({
                table,
                serializer: (i: number) =>
                  RowMutationEntry.make(
                    `row${i}`,
                    Mutation.setCell({ family: "cf", qualifier: "i", value: BigInt(i), timestampMicros: 1_000_000 })
                  ),
                writeMethod: WriteMethod.atLeastOnce({ batchElementCount: 10 })
              })),
              Effect.provide(BigtableClient.layer({ projectId, emulator: { grpc: proxy.target } }).pipe(Layer.fresh))
            )
          // a lower bound only: one call through the proxy takes at least its round trip
          const started = Date.now()
          const summary = yield* write(30)
          assert.isAtLeast(Date.now() - started, latencyMillis)
          assert.strictEqual(summary.recordsWritten, 30)
          const [rows] = yield* Effect.tryPromise(() =>
            official.instance(instanceId).table(tableId).getRows({ decode: false })
          )
          assert.strictEqual(rows.length, 30)
        }),
      { timeout: 60_000 }
    )
  }
)
