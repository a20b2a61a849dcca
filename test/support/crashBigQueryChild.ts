/**
 * The child of the BigQuery crash proof: streams ids `0..N-1` from a replayable source, resumed at the
 * stored position, through `BigQuerySink.exactlyOnce` into one table of the BigQuery emulator, with a
 * checkpoint every `CRASH_EVERY` records and at the end of input.
 *
 * Steps reported (see `crashChild.ts`): `restored` (the stored position), `saved` (a checkpoint record
 * is durable; its flush comes next: a hold here lands the kill between save and flush), `done`, and
 * `fenced` (exit code 3) when the save was a `CheckpointConflict`. The store is the caller's
 * (`CRASH_STORE=file` under `CRASH_STORE_DIR`, or `gcs` on `CRASH_GCS_EMULATOR` / `CRASH_GCS_BUCKET`),
 * wrapped to report the saves.
 *
 * Environment: CRASH_BQ_GRPC, CRASH_BQ_REST (host:port), CRASH_PROJECT, CRASH_DATASET, CRASH_TABLE,
 * CRASH_TOTAL, CRASH_CHUNK, CRASH_EVERY, CRASH_WRITER, CRASH_CHUNK_DELAY_MS (a pause per chunk of the
 * source, default 0: a slower source, so that two processes overlap), CRASH_BQ_CLIENT: `emulator`
 * (default: `BigQueryClient.layer({ emulator })`, with the sink's allowances for bqemulator) or
 * `production` (`BigQueryClient.fromClients` on plain clients: the production code path, for a
 * CRASH_BQ_GRPC that translates bqemulator's deviations, `bqemulatorAdapter.ts`).
 */
import { NodeRuntime } from "@effect/platform-node"
import { BigQuery } from "@google-cloud/bigquery"
import * as grpc from "@grpc/grpc-js"
import { Array as Arr, Effect, Layer, Option, Schema, Stream } from "effect"
import { OAuth2Client } from "google-auth-library"
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
import { fencedExitCode, intEnv, replayableSource, reportingSaves, step, stringEnv } from "./crashChild.ts"

const total = intEnv("CRASH_TOTAL")
const chunkSize = intEnv("CRASH_CHUNK")
const every = intEnv("CRASH_EVERY")
const writerId = stringEnv("CRASH_WRITER")
const projectId = stringEnv("CRASH_PROJECT")
const chunkDelay = intEnv("CRASH_CHUNK_DELAY_MS", 0)

const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }

const clientLayer = (() => {
  const endpoints = { grpc: stringEnv("CRASH_BQ_GRPC"), rest: stringEnv("CRASH_BQ_REST") }
  if (stringEnv("CRASH_BQ_CLIENT", "emulator") === "emulator") {
    return BigQueryClient.layer({ projectId, emulator: endpoints })
  }
  const auth = new OAuth2Client()
  auth.setCredentials({ access_token: "emulator" })
  return BigQueryClient.fromClients({
    projectId,
    write: new grpc.Client(endpoints.grpc, grpc.credentials.createInsecure()),
    rest: new BigQuery({ projectId, apiEndpoint: `http://${endpoints.rest}`, authClient: auth })
  })
})()

const baseStore = stringEnv("CRASH_STORE", "file") === "gcs"
  ? CheckpointStore.gcs({ bucket: stringEnv("CRASH_GCS_BUCKET"), prefix: "crash" }).pipe(
    Layer.provide(GcsClient.layer({ projectId, emulator: { rest: stringEnv("CRASH_GCS_EMULATOR") } }))
  )
  : CheckpointStore.file(path.join(stringEnv("CRASH_STORE_DIR"), "store"))

const program = Effect.gen(function*() {
  const serializer = yield* RowSerializer.fromJson(schema)
  const table = yield* TableDestination.make({
    projectId,
    datasetId: stringEnv("CRASH_DATASET"),
    tableId: stringEnv("CRASH_TABLE")
  })
  const resume = yield* Checkpoint.resume({ writerId, positionSchema: Schema.Number })
  const from = Option.getOrElse(resume.position, () => 0)
  yield* step("restored", { position: from })
  const summary = yield* replayableSource({ total, from, chunkSize }).pipe(
    Stream.mapArrayEffect((ids) =>
      Effect.as(chunkDelay > 0 ? Effect.sleep(`${chunkDelay} millis`) : Effect.void, Arr.map(ids, (id) => ({ id })))
    ),
    Stream.run(BigQuerySink.make<{ readonly id: number }, number>({
      table,
      serializer,
      writeMethod: WriteMethod.exactlyOnce(),
      checkpoint: { resume, every, position: (row) => row.id + 1 }
    }))
  )
  yield* step("done", { position: total, from, written: summary.recordsWritten })
}).pipe(
  Effect.catchTag("CheckpointConflict", (conflict: CheckpointConflict) =>
    Effect.andThen(
      step("fenced", { expected: conflict.expectedPreviousId, actual: conflict.actualId }),
      Effect.sync((): void => {
        process.exit(fencedExitCode)
      })
    )),
  Effect.provide(Layer.mergeAll(
    reportingSaves.pipe(Layer.provide(baseStore)),
    clientLayer
  ))
)

NodeRuntime.runMain(program)
