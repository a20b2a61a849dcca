import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Layer, Option, Schema, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import { Checkpoint, CheckpointStore, GcsClient } from "effect-gcp-sinks/Sink"

const Reading = Schema.Struct({ line: Schema.Int, sensor: Schema.String, value: Schema.Number })

// a replayable source: a backfill read from a line number
const readingsFrom = (line: number) =>
  Stream.range(line, 9_999).pipe(Stream.map((i) => Reading.make({ line: i, sensor: `s-${i % 7}`, value: i / 10 })))

const program = Effect.gen(function*() {
  const projectId = yield* Config.String("GOOGLE_CLOUD_PROJECT")
  yield* BigQueryClient.createDataset("backfill")
  const gcs = yield* GcsClient.GcsClient
  const [exists] = yield* Effect.tryPromise(() => gcs.storage.bucket("my-staging").exists())
  if (!exists) yield* Effect.tryPromise(() => gcs.storage.createBucket("my-staging"))
  const resume = yield* Checkpoint.resume({ writerId: "readings-backfill", positionSchema: Schema.Number })
  const summary = yield* readingsFrom(Option.getOrElse(resume.position, () => 0)).pipe(
    Stream.run(BigQuerySink.make({
      table: yield* TableDestination.make({ projectId, datasetId: "backfill", tableId: "readings" }),
      serializer: yield* RowSerializer.fromSchema(Reading),
      // rows staged as Avro in Cloud Storage, loaded by load jobs at each checkpoint
      writeMethod: WriteMethod.fileLoads({ stagingPath: "gs://my-staging/readings" }),
      checkpoint: { resume, every: 5_000, position: (row) => row.line + 1 }
    }))
  )
  yield* Effect.log(`${summary.recordsWritten} rows loaded`)
}).pipe(Effect.provide(Layer.mergeAll(
  BigQueryClient.layerConfig({ projectId: Config.String("GOOGLE_CLOUD_PROJECT") }),
  GcsClient.layerConfig({ projectId: Config.String("GOOGLE_CLOUD_PROJECT") }),
  CheckpointStore.file("./.example-state/readings")
)))

NodeRuntime.runMain(program)
