/**
 * A backfill with file loads: a large newline-delimited JSON file is read line by line, each row staged
 * as Avro in Cloud Storage and loaded by load jobs (no streaming charges), with a checkpoint every
 * 20,000 lines. Kill it (Ctrl-C, or `kill -9`) and run it again: it resumes at the stored line, the
 * load jobs of the last saved checkpoint re-attach instead of loading twice, and the table ends up
 * holding every line exactly once.
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/bigquery-file-loads.ts
 *
 * Environment (besides config.ts): EXAMPLE_STAGING_BUCKET (default `examples-staging`, created when
 * missing), EXAMPLE_LINES (default 100,000). The source file and the checkpoints live in
 * `./.example-file-loads/`.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Layer, Option, Schema, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import { Checkpoint, CheckpointStore, GcsClient } from "effect-gcp-sinks/Sink"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { BigQueryLive, GcsLive, projectId } from "./config.ts"

const Line = Schema.Struct({ line: Schema.Int, sensor: Schema.String, reading: Schema.Number })
type Line = typeof Line.Type

const dir = path.resolve(".example-file-loads")
const source = path.join(dir, "readings.ndjson")

/** Writes the source file once: the stand-in for an export you would backfill from. */
const ensureSource = (lines: number) =>
  Effect.sync(() => {
    if (fs.existsSync(source)) return
    fs.mkdirSync(dir, { recursive: true })
    const out = fs.openSync(source, "w")
    for (let i = 0; i < lines; i++) {
      fs.writeSync(out, `${JSON.stringify({ line: i, sensor: `s-${i % 97}`, reading: (i % 1000) / 10 })}\n`)
    }
    fs.closeSync(out)
  })

/** The file's rows from line `from` on: a replayable source (the same lines for the same position). */
const linesFrom = (from: number): Stream.Stream<Line, Error> =>
  Stream.fromAsyncIterable(
    readline.createInterface({ input: fs.createReadStream(source), crlfDelay: Infinity }),
    (e) => e instanceof Error ? e : new Error(String(e))
  ).pipe(
    Stream.drop(from),
    Stream.map((text): Line => Schema.decodeUnknownSync(Line)(JSON.parse(text)))
  )

const program = Effect.gen(function*() {
  const project = yield* projectId
  const bucket = yield* Config.String("EXAMPLE_STAGING_BUCKET").pipe(Config.withDefault("examples-staging"))
  yield* ensureSource(yield* Config.Int("EXAMPLE_LINES").pipe(Config.withDefault(100_000)))
  const gcs = yield* GcsClient.GcsClient
  yield* BigQueryClient.createDataset("backfill")
  const [bucketExists] = yield* Effect.tryPromise(() => gcs.storage.bucket(bucket).exists())
  if (!bucketExists) yield* Effect.tryPromise(() => gcs.storage.createBucket(bucket))

  const resume = yield* Checkpoint.resume({ writerId: "readings-backfill", positionSchema: Schema.Number })
  const from = Option.getOrElse(resume.position, () => 0)
  yield* Effect.log(from === 0 ? "starting the backfill" : `resuming at line ${from}`)
  const summary = yield* linesFrom(from).pipe(
    Stream.run(BigQuerySink.make({
      table: yield* TableDestination.make({ projectId: project, datasetId: "backfill", tableId: "readings" }),
      serializer: yield* RowSerializer.fromSchema(Line),
      writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${bucket}/readings` }),
      checkpoint: { resume, every: 20_000, position: (row) => row.line + 1 }
    }))
  )
  yield* Effect.log(`loaded ${summary.recordsWritten} rows (${summary.bytesWritten} bytes) by file loads`)
})

NodeRuntime.runMain(program.pipe(
  Effect.provide(Layer.mergeAll(BigQueryLive, GcsLive, CheckpointStore.file(path.join(dir, "checkpoints"))))
))
