/**
 * Exactly-once from a file into BigQuery: the source is a newline-delimited JSON file read from a
 * line number, the position is the next line to read, and checkpoints go to a directory
 * (`CheckpointStore.file`). Kill it at any point (Ctrl-C, `kill -9`) and start it again: it resumes
 * at the stored line, and the table ends up with every line exactly once.
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/bigquery-exactly-once.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Option, Schema, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { BigQueryLive, projectId } from "./config.ts"

const Event = Schema.Struct({ line: Schema.Number, user: Schema.String, amount: Schema.Number })
type Event = typeof Event.Type

const directory = path.join(os.tmpdir(), "effect-gcp-sinks-exactly-once")
const file = path.join(directory, "events.ndjson")

/** Writes the input file once: 20,000 events, one JSON object per line. */
const ensureInput = Effect.tryPromise(async () => {
  await fs.mkdir(directory, { recursive: true })
  const exists = await fs.stat(file).then(() => true, () => false)
  if (exists) return
  const lines = Array.from(
    { length: 20_000 },
    (_, line) => JSON.stringify({ line, user: `u-${line % 97}`, amount: (line * 7) % 1000 })
  )
  await fs.writeFile(file, `${lines.join("\n")}\n`)
})

/** The replayable source: the events from line `from` on, in file order, every time. */
const eventsFrom = (from: number): Stream.Stream<Event, unknown> =>
  Stream.fromEffect(Effect.tryPromise(() => fs.readFile(file, "utf8"))).pipe(
    Stream.flatMap((text) => Stream.fromIterable(text.split("\n").slice(from, -1))),
    Stream.mapEffect((line) => Schema.decodeUnknownEffect(Schema.fromJsonString(Event))(line))
  )

const program = Effect.gen(function*() {
  yield* ensureInput
  const client = yield* BigQueryClient.BigQueryClient
  yield* Effect.tryPromise(() => client.rest.dataset("events").get({ autoCreate: true }))
  const table = yield* TableDestination.make({ projectId: yield* projectId, datasetId: "events", tableId: "payments" })

  // one writer id per source (a file here; per partition for a partitioned log)
  const resume = yield* Checkpoint.resume({ writerId: "payments-file", positionSchema: Schema.Number })
  const from = Option.getOrElse(resume.position, () => 0)
  yield* Effect.log(`resuming at line ${from}`)

  const summary = yield* eventsFrom(from).pipe(
    Stream.rechunk(500),
    Stream.run(BigQuerySink.make({
      table,
      serializer: yield* RowSerializer.fromSchema(Event),
      writeMethod: WriteMethod.exactlyOnce(),
      checkpoint: { resume, every: "1 second", position: (event) => event.line + 1 }
    }))
  )
  yield* Effect.log(`done: ${summary.recordsWritten} rows written in this run, lines ${from}..19999 committed`)
})

NodeRuntime.runMain(
  program.pipe(Effect.provide(Layer.merge(BigQueryLive, CheckpointStore.file(path.join(directory, "checkpoints")))))
)
