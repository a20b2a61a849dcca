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
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
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
import { childEnv, int, needed, optional, string } from "./childEnv.ts"
import { fencedExitCode, replayableSource, reportingSaves, step } from "./crashChild.ts"

const env = childEnv({
  total: int("CRASH_TOTAL"),
  chunkSize: int("CRASH_CHUNK"),
  every: int("CRASH_EVERY"),
  writerId: string("CRASH_WRITER"),
  projectId: string("CRASH_PROJECT"),
  chunkDelay: int("CRASH_CHUNK_DELAY_MS", 0),
  bqGrpc: string("CRASH_BQ_GRPC"),
  bqRest: string("CRASH_BQ_REST"),
  client: string("CRASH_BQ_CLIENT", "emulator"),
  store: string("CRASH_STORE", "file"),
  gcsBucket: optional("CRASH_GCS_BUCKET"),
  gcsEmulator: optional("CRASH_GCS_EMULATOR"),
  storeDir: optional("CRASH_STORE_DIR"),
  datasetId: string("CRASH_DATASET"),
  tableId: string("CRASH_TABLE")
})
const { total, chunkSize, every, writerId, projectId, chunkDelay } = env

const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }

const clientLayer = (() => {
  const endpoints = { grpc: env.bqGrpc, rest: env.bqRest }
  if (env.client === "emulator") {
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

const baseStore = env.store === "gcs"
  ? CheckpointStore.gcs({ bucket: needed(env.gcsBucket, "CRASH_GCS_BUCKET"), prefix: "crash" }).pipe(
    Layer.provide(
      GcsClient.layer({ projectId, emulator: { rest: needed(env.gcsEmulator, "CRASH_GCS_EMULATOR") } })
    )
  )
  : CheckpointStore.file(path.join(needed(env.storeDir, "CRASH_STORE_DIR"), "store"))

const program = Effect.gen(function*() {
  const serializer = yield* RowSerializer.fromJson(schema)
  const table = yield* TableDestination.make({
    projectId,
    datasetId: env.datasetId,
    tableId: env.tableId
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
