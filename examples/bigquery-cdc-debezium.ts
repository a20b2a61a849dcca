/**
 * Change data capture: a Debezium PostgreSQL change stream of `public.customers` (a topic dump in
 * `examples/data/debezium-postgres-customers.jsonl`: a snapshot, inserts, updates, a delete, a
 * re-insert, and two events delivered again after a connector restart) mirrored into the BigQuery
 * table `shop.customers`. The sink creates the table with its primary key, sets `max_staleness`, and
 * BigQuery applies each change by key in LSN order, so the redelivered events change nothing.
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/bigquery-cdc-debezium.ts
 *
 * The BigQuery emulator has no CDC (see the README's deviation table): against it the table is
 * created with its label, then the sink stops because the emulator drops the primary key. Run it
 * against GCP (`GOOGLE_CLOUD_PROJECT`, and no emulator variables) to see the mirror.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, FileSystem, Stream } from "effect"
import { BigQueryClient, BigQuerySink, TableDestination } from "effect-gcp-sinks/BigQuery"
import { decodeLine, serializer, writeMethod } from "./cdc/debezium.ts"
import { BigQueryLive, projectId } from "./config.ts"

const program = Effect.gen(function*() {
  const client = yield* BigQueryClient.BigQueryClient
  yield* Effect.tryPromise(() => client.rest.dataset("shop").get({ autoCreate: true }))
  const fs = yield* FileSystem.FileSystem
  const dump = yield* fs.readFileString(new URL("data/debezium-postgres-customers.jsonl", import.meta.url).pathname)
  const events = yield* Effect.forEach(dump.split("\n").filter((line) => line.length > 0), (line) => decodeLine(line))
  const summary = yield* Stream.fromIterable(events).pipe(
    Stream.run(BigQuerySink.make({
      table: yield* TableDestination.make({ projectId: yield* projectId, datasetId: "shop", tableId: "customers" }),
      serializer: yield* serializer,
      writeMethod
    }))
  )
  yield* Effect.log(`${summary.recordsWritten} changes applied to shop.customers`)
})

NodeRuntime.runMain(program.pipe(Effect.provide([BigQueryLive, NodeFileSystem.layer])))
