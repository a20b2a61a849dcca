/**
 * Faults between the sink and the BigQuery emulator: a loopback proxy resets every connection repeatedly
 * while rows stream; afterwards every row is in the table (duplicates allowed: at least once).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Schedule, Stream } from "effect"
import {
  BigQueryClient,
  BigQuerySink,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import * as ResetProxy from "../../support/resetProxy.ts"

const schema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "payload", type: "STRING" })
  ]
}

layer(BigQueryEmulator.layer, { timeout: "120 seconds", excludeTestServices: true })("BigQuerySink faults", (it) => {
  it.effect("connections reset mid-stream: afterwards no row is missing", () =>
    Effect.gen(function*() {
      const emulator = yield* BigQueryEmulator
      const proxy = yield* ResetProxy.make(`${emulator.grpcHost}:${emulator.grpcPort}`)
      const bq = yield* Clients.bigQuery(emulator)
      const datasetId = Clients.uniqueId("faults")
      yield* Effect.tryPromise(() => bq.createDataset(datasetId))
      const table = yield* TableDestination.make({ projectId: emulator.projectId, datasetId: datasetId, tableId: "t" })
      const serializer = yield* RowSerializer.fromJson(schema)
      const n = 20_000
      // ten resets, a second apart: each can fail a batch at most once, so the recovery budget (20) is
      // never what decides, however slowly a loaded machine reconnects
      const resetter = yield* proxy.resetAll.pipe(
        Effect.repeat(Schedule.max([Schedule.spaced("1 second"), Schedule.recurs(9)])),
        Effect.delay("100 millis"),
        Effect.forkChild
      )
      // 40 chunks of 500 rows, one every 50 ms, while the proxy resets every connection
      const summary = yield* Stream.range(0, n / 500 - 1).pipe(
        Stream.mapEffect((c) =>
          Effect.as(
            Effect.sleep("50 millis"),
            Array.from({ length: 500 }, (_, i) => ({ id: c * 500 + i, payload: "x".repeat(64) }))
          )
        ),
        Stream.flattenIterable,
        Stream.run(BigQuerySink.make({
          table,
          serializer,
          writeMethod: WriteMethod.atLeastOnce({
            maxAppendRequestBytes: 32 * 1024,
            // a shallow pipeline keeps each append's latency well under the reset interval
            maxInFlightRequests: 4,
            recovery: { initialBackoff: "50 millis", maxBackoff: "1 second", maxAttempts: 20 },
            responseTimeout: "5 seconds"
          })
        })),
        Effect.provide(Layer.fresh(BigQueryClient.layer({
          projectId: emulator.projectId,
          emulator: { grpc: proxy.endpoint, rest: `127.0.0.1:${emulator.restPort}` }
        })))
      )
      yield* Fiber.interrupt(resetter)
      assert.strictEqual(summary.recordsWritten, n)
      assert.isAbove(proxy.stats.resets, 0)
      const [rows] = yield* Effect.tryPromise(() =>
        bq.query({
          query:
            `SELECT COUNT(DISTINCT id) AS d, MIN(id) AS lo, MAX(id) AS hi FROM \`${emulator.projectId}.${datasetId}.t\``,
          useQueryCache: false
        })
      )
      assert.deepStrictEqual(rows[0], { d: n, lo: 0, hi: n - 1 })
      // at least once: a batch whose response was lost is appended again
      assert.isAbove(summary.retries, 0)
    }))
})
