/**
 * The file-loads child of the crash proof: `BigQuerySink.fileLoads` on the emulators (bqemulator and
 * fake-gcs-server), a replayable source of ids resumed at the stored position, a checkpoint every
 * LOADS_EVERY records and at the end of input. The `CheckpointStore.file` it uses is wrapped only to
 * report the step `saved` after each save (so the harness can kill between a save and its load jobs);
 * `staged` is reported per chunk written.
 *
 * Environment: LOADS_DIR (checkpoint folder), LOADS_TOTAL, LOADS_CHUNK, LOADS_EVERY, LOADS_PACE_MS, LOADS_WRITER,
 * LOADS_PROJECT, LOADS_DATASET, LOADS_BUCKET, LOADS_BQ_GRPC, LOADS_BQ_REST, LOADS_GCS (host:port each).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Duration, Effect, Layer, Option, Schema, Stream } from "effect"
import * as path from "node:path"
import {
  BigQueryClient,
  BigQuerySink,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import { Checkpoint, type CheckpointConflict, CheckpointStore, GcsClient } from "../../src/Sink.ts"
import { childEnv, int, string } from "./childEnv.ts"
import { fencedExitCode, replayableSource, reportingSaves, step } from "./crashChild.ts"

const env = childEnv({
  total: int("LOADS_TOTAL"),
  chunkSize: int("LOADS_CHUNK"),
  every: int("LOADS_EVERY"),
  pace: int("LOADS_PACE_MS"),
  writerId: string("LOADS_WRITER"),
  projectId: string("LOADS_PROJECT"),
  dir: string("LOADS_DIR"),
  datasetId: string("LOADS_DATASET"),
  bucket: string("LOADS_BUCKET"),
  bqGrpc: string("LOADS_BQ_GRPC"),
  bqRest: string("LOADS_BQ_REST"),
  gcs: string("LOADS_GCS")
})
const { total, chunkSize, every, pace, writerId, projectId } = env

/** `CheckpointStore.file`, reporting `saved` after each save. */
const reportingStore = reportingSaves.pipe(
  Layer.provide(CheckpointStore.file(path.join(env.dir, "store")))
)

const program = Effect.gen(function*() {
  const serializer = yield* RowSerializer.fromJson({
    fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })]
  })
  const table = yield* TableDestination.make({ projectId, datasetId: env.datasetId, tableId: "ids" })
  const resume = yield* Checkpoint.resume({ writerId, positionSchema: Schema.Number })
  const from = Option.getOrElse(resume.position, () => 0)
  yield* step("restored", { position: from })
  const fast = { initialBackoff: Duration.millis(20), maxBackoff: Duration.millis(200), maxAttempts: 1000 }
  yield* replayableSource({ total, from, chunkSize }).pipe(
    Stream.map((id) => ({ id })),
    // paced (LOADS_PACE_MS per chunk) so that a start's progress is bounded by its time
    Stream.mapArrayEffect((chunk) =>
      Effect.as(Effect.andThen(Effect.sleep(Duration.millis(pace)), step("staged", { first: chunk[0]?.id })), chunk)
    ),
    Stream.run(BigQuerySink.make({
      table,
      serializer,
      writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${env.bucket}/stage`, poll: fast }),
      checkpoint: { resume, every, position: (row: { readonly id: number }) => row.id + 1 }
    }))
  )
  yield* step("done", { position: total })
}).pipe(
  Effect.catchTag("CheckpointConflict", (conflict: CheckpointConflict) =>
    Effect.andThen(
      step("fenced", { expected: conflict.expectedPreviousId, actual: conflict.actualId }),
      Effect.sync((): void => {
        process.exit(fencedExitCode)
      })
    )),
  Effect.provide(Layer.mergeAll(
    reportingStore,
    BigQueryClient.layer({
      projectId,
      emulator: { grpc: env.bqGrpc, rest: env.bqRest }
    }),
    GcsClient.layer({ projectId, emulator: { rest: env.gcs } })
  ))
)

NodeRuntime.runMain(program)
