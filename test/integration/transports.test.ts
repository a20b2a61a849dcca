/**
 * Both sinks against the real emulators on each data-path transport (ADR 0036), through the public
 * client layers' `transport` option: cbtemulator for MutateRows and CheckAndMutateRow, bqemulator's
 * Storage Write API for AppendRows. The results are read back with the official clients.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import {
  BigQueryClient,
  BigQuerySink,
  RowSerializer,
  TableDestination as BigQueryTable,
  TableSchema,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination as BigtableTable,
  WriteMethod as BigtableWriteMethod
} from "../../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../../src/Sink.ts"
import { BigQueryEmulator } from "../support/BigQueryEmulator.ts"
import { counters, createCounterTable } from "../support/bigtableCounters.ts"
import { BigtableEmulator } from "../support/BigtableEmulator.ts"
import * as Clients from "../support/clients.ts"
import { transports } from "../support/transports.ts"

const Emulators = Layer.merge(BigtableEmulator.layer, BigQueryEmulator.layer)

const countBigtable = (tableId: string) =>
  Effect.gen(function*() {
    const emulator = yield* BigtableEmulator
    const client = yield* Clients.bigtable(emulator, { projectId: "test-project" })
    return yield* Effect.callback<number>((resume) => {
      let n = 0
      const stream = client.instance("transports").table(tableId).createReadStream({ decode: false })
      stream.on("data", () => void n++)
      stream.on("error", (e) => resume(Effect.die(e)))
      stream.on("end", () => resume(Effect.succeed(n)))
    })
  })

const schema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "name", type: "STRING" })
  ]
}

layer(Emulators, { timeout: "120 seconds", excludeTestServices: true })(
  "the sinks on each transport, against the emulators",
  (it) => {
    describe.each(transports)("%s", (transport) => {
      it.effect("BigtableSink at least once: every record is in cbtemulator", () =>
        Effect.gen(function*() {
          const emulator = yield* BigtableEmulator
          const tableId = `t_${transport.replace("-", "")}`
          const summary = yield* Stream.range(0, 999).pipe(
            Stream.run(BigtableSink.make({
              table: BigtableTable.makeUnsafe({ projectId: "test-project", instanceId: "transports", tableId }),
              serializer: (i: number) =>
                RowMutationEntry.make(`r${i}`, Mutation.setCell({ family: "cf", qualifier: "q", value: `v${i}` })),
              writeMethod: BigtableWriteMethod.atLeastOnce({ batchElementCount: 100 }),
              createDisposition: "CREATE_IF_NEEDED",
              tableCreateOptions: { columnFamilies: { cf: {} } }
            })),
            Effect.provide(
              BigtableClient.layer({ projectId: "test-project", emulator: { grpc: emulator.emulatorHost }, transport })
            )
          )
          assert.strictEqual(summary.recordsWritten, 1000)
          assert.strictEqual(yield* countBigtable(tableId), 1000)
        }))

      it.effect("BigtableSink exactly once: CheckAndMutateRow envelopes applied once, counters exact", () =>
        Effect.gen(function*() {
          const emulator = yield* BigtableEmulator
          const tableId = Clients.uniqueId("eo")
          yield* createCounterTable(emulator, "test-project", "transports", tableId, { c: "INT64_SUM", m: "RAW" })
          const summary = yield* Effect.gen(function*() {
            const resume = yield* Checkpoint.resume({ writerId: tableId, positionSchema: Schema.Number })
            const writer = yield* BigtableSink.writer({
              table: BigtableTable.makeUnsafe({ projectId: "test-project", instanceId: "transports", tableId }),
              serializer: (i: number) =>
                RowMutationEntry.make(
                  `counter${i % 5}`,
                  Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: 1n })
                ),
              writeMethod: BigtableWriteMethod.exactlyOnce({ markerFamily: "m" }),
              checkpoint: { resume, position: (i: number) => i + 1 }
            })
            yield* writer.write(Array.from({ length: 100 }, (_, i) => i))
            yield* writer.checkpoint(100)
            return yield* writer.summary
          }).pipe(
            Effect.scoped,
            Effect.provide(Layer.merge(
              BigtableClient.layer({ projectId: "test-project", emulator: { grpc: emulator.emulatorHost }, transport }),
              CheckpointStore.memory
            ))
          )
          assert.strictEqual(summary.recordsWritten, 100)
          const read = yield* counters(emulator, "test-project", "transports", tableId)
          assert.deepStrictEqual([...read.sums.values()], [20n, 20n, 20n, 20n, 20n])
        }))

      it.effect("BigQuerySink at least once: every row is in bqemulator", () =>
        Effect.gen(function*() {
          const emulator = yield* BigQueryEmulator
          const bq = yield* Clients.bigQuery(emulator)
          const datasetId = Clients.uniqueId("transports")
          yield* Effect.tryPromise(() => bq.createDataset(datasetId))
          const table = yield* BigQueryTable.make({ projectId: emulator.projectId, datasetId, tableId: "t" })
          const summary = yield* Stream.range(0, 1999).pipe(
            Stream.map((id) => ({ id, name: `n${id}` })),
            Stream.run(BigQuerySink.make({
              table,
              serializer: yield* RowSerializer.fromJson(schema),
              createDisposition: "CREATE_IF_NEEDED",
              writeMethod: WriteMethod.atLeastOnce({ maxAppendRequestBytes: 8 * 1024 })
            })),
            Effect.provide(BigQueryClient.layer({
              projectId: emulator.projectId,
              emulator: { grpc: `${emulator.grpcHost}:${emulator.grpcPort}`, rest: `127.0.0.1:${emulator.restPort}` },
              transport
            }))
          )
          assert.strictEqual(summary.recordsWritten, 2000)
          const [rows] = yield* Effect.tryPromise(() =>
            bq.query({ query: `SELECT COUNT(DISTINCT id) AS d FROM \`${datasetId}.t\``, useQueryCache: false })
          )
          assert.strictEqual((rows as Array<{ d: number }>)[0]?.d, 2000)
        }))
    })
  }
)
