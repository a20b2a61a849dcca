/**
 * `npm start`: streams synthetic events through BigtableSink and BigQuerySink at once, with live
 * progress, routes a few invalid records to a dead-letter sink, then reads both tables back.
 *
 *   npm start                              # local emulators, 100,000 events
 *   npm start -- --events 20000            # fewer events
 *   npm start -- --exactly-once            # BigQuery exactly once (buffered streams, checkpoints)
 *   npm start -- --file-loads              # BigQuery by file loads (Avro staged in Cloud Storage, load jobs)
 *   npm start -- --cluster                 # many machines, locally: PostgreSQL and 3 runner processes on
 *                                          # effect/cluster, 12 partitions exactly once into BigQuery and
 *                                          # Bigtable counters, one runner SIGKILLed part-way and its
 *                                          # partitions moving (cluster/)
 *   npm start -- --project my-project --instance my-instance --dataset demo [--key-file key.json]
 *   npm start -- --help                    # every flag, its environment variable and default
 *
 * Flags may also come from the environment as DEMO_EVENTS, DEMO_PROJECT, DEMO_KEY_FILE, ...
 * Ctrl-C interrupts cleanly and prints what was written so far.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Clock, Data, Effect, Layer, Option, Ref, Schema, Sink, Stream } from "effect"
import {
  BigQueryClient,
  BigQueryMetrics,
  BigQuerySink,
  RowSerializer,
  TableDestination as BigQueryTable,
  WriteMethod
} from "effect-gcp-sinks/BigQuery"
import {
  BigtableClient,
  BigtableMetrics,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination as BigtableTable
} from "effect-gcp-sinks/Bigtable"
import { Checkpoint, CheckpointStore, type FailedElement, FailureHandler, GcsClient } from "effect-gcp-sinks/Sink"
import { Command } from "effect/cli"
import * as Cluster from "./cluster/main.ts"
import { demoProject, endpoints } from "./emulators.ts"
import { chunk, type Event, Event as EventSchema, invalidCount } from "./events.ts"
import * as FileLoads from "./fileLoads.ts"
import { command, type DemoConfig } from "./flags.ts"
import { display, finalFrame, gauge, type Source } from "./progress.ts"
import { bigQueryCount, bigtableCount } from "./readback.ts"

/** What the demo itself can fail with: data that did not land. */
class DemoError extends Data.TaggedError("DemoError")<{ readonly message: string }> {}

const toMutations = (event: Event) =>
  event.user === ""
    ? Effect.fail(`event ${event.id} has no user, so no row key`)
    : Effect.succeed(RowMutationEntry.make(`${event.user}#${String(event.id).padStart(12, "0")}`, [
      Mutation.setCell({ family: "e", qualifier: "kind", value: event.kind }),
      Mutation.setCell({ family: "e", qualifier: "amount", value: event.amount }),
      Mutation.setCell({ family: "e", qualifier: "at", value: event.at.toISOString() })
    ]))

const program = Effect.fnUntraced(function*(config: DemoConfig) {
  const real = Option.isSome(config.project)
  // Against emulators no client may look for a metadata server (the library never reads the
  // environment; the official client used for the read-back does).
  if (!real) process.env["METADATA_SERVER_DETECTION"] = "none"
  const projectId = Option.getOrElse(config.project, () => demoProject)
  const local = real ? undefined : yield* endpoints(config)
  if (config.cluster && local !== undefined) {
    return yield* Cluster.run(config, local).pipe(
      Effect.provide(BigQueryClient.layer({
        projectId,
        emulator: { grpc: local.bigqueryGrpc, rest: local.bigqueryRest }
      }))
    )
  }

  const clients = Layer.mergeAll(
    BigtableClient.layer({
      projectId,
      emulator: local === undefined ? undefined : { grpc: local.bigtable },
      serviceAccountKeyFile: Option.getOrUndefined(config.keyFile)
    }),
    BigQueryClient.layer({
      projectId,
      emulator: local === undefined ? undefined : { grpc: local.bigqueryGrpc, rest: local.bigqueryRest },
      serviceAccountKeyFile: Option.getOrUndefined(config.keyFile)
    })
  )

  yield* Effect.gen(function*() {
    const bigtableTable = yield* BigtableTable.make({ projectId, instanceId: config.instance, tableId: "events" })
    const bigqueryTable = config.fileLoads
      ? yield* FileLoads.table(projectId, config.dataset)
      : yield* BigQueryTable.make({ projectId: projectId, datasetId: config.dataset, tableId: "events" })
    const bigquery = yield* BigQueryClient.BigQueryClient
    yield* Effect.tryPromise(() => bigquery.rest.dataset(config.dataset).get({ autoCreate: true }))

    // Both sinks route their failures to one dead-letter sink: a handler of FailedElement serves both.
    const deadLetters = yield* Ref.make<Array<FailedElement>>([])
    const failureHandler = FailureHandler.deadLetter(
      Sink.forEach((failure: FailedElement) => Ref.update(deadLetters, (all) => [...all, failure]))
    )

    const bigtableWriter = yield* BigtableSink.writer({
      table: bigtableTable,
      serializer: toMutations,
      createDisposition: "CREATE_IF_NEEDED",
      tableCreateOptions: { columnFamilies: { e: {} } },
      failureHandler: failureHandler
    })
    const total = config.events
    const chunks = Math.ceil(total / config.chunkSize)
    /** The first event after chunk `i`: the position a checkpoint after that chunk stores. */
    const endOf = (i: number) => Math.min(total, (i + 1) * config.chunkSize)
    const events = Stream.range(0, chunks - 1).pipe(
      Stream.map((i) => chunk(i * config.chunkSize, endOf(i), config.invalidEvery))
    )
    const serializer = yield* RowSerializer.fromSchema(EventSchema)

    // At least once, the writer flushes at the end; exactly once, rows become visible only at
    // checkpoints: one every 10 chunks and one at the end, each storing the next event to read (the
    // demo's source starts at 0: its store is in memory, so a new run is a new writer).
    const bigqueryWriter = config.fileLoads
      ? yield* Effect.gen(function*() {
        const gcs = yield* GcsClient.make({
          projectId,
          emulator: local?.gcs === undefined ? undefined : { rest: local.gcs },
          serviceAccountKeyFile: Option.getOrUndefined(config.keyFile)
        })
        return yield* FileLoads.make({
          table: bigqueryTable,
          serializer: yield* FileLoads.serializer(real),
          failureHandler,
          gcs,
          bucket: Option.getOrElse(config.stagingBucket, () => real ? `${projectId}-demo-staging` : "demo-staging"),
          events,
          chunkSize: config.chunkSize,
          routed: Effect.map(Ref.get(deadLetters), (all) => all.filter((f) => f.connector === "bigquery").length)
        })
      })
      : config.exactlyOnce
      ? yield* Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "demo-events", positionSchema: Schema.Number })
        const writer = yield* BigQuerySink.writer({
          table: bigqueryTable,
          serializer,
          writeMethod: WriteMethod.exactlyOnce(),
          failureHandler,
          checkpoint: { resume }
        })
        const write = Stream.range(0, chunks - 1).pipe(
          Stream.runForEach((i) =>
            writer.write(chunk(i * config.chunkSize, endOf(i), config.invalidEvery)).pipe(
              Effect.andThen(i % 10 === 9 ? writer.checkpoint(endOf(i)) : Effect.void)
            )
          ),
          Effect.andThen(writer.checkpoint(total))
        )
        return { summary: writer.summary, write, inFlight: gauge(BigQueryMetrics.inFlightBatches), detail: undefined }
      })
      : yield* Effect.gen(function*() {
        const writer = yield* BigQuerySink.writer({ table: bigqueryTable, serializer, failureHandler })
        const write = events.pipe(Stream.runForEach((batch) => writer.write(batch)), Effect.andThen(writer.flush))
        return { summary: writer.summary, write, inFlight: gauge(BigQueryMetrics.inFlightBatches), detail: undefined }
      })

    const sources: ReadonlyArray<Source> = [
      { name: "Bigtable", summary: bigtableWriter.summary, inFlight: gauge(BigtableMetrics.inFlightEntries) },
      {
        name: "BigQuery",
        summary: bigqueryWriter.summary,
        inFlight: bigqueryWriter.inFlight,
        detail: bigqueryWriter.detail
      }
    ]
    const startedAt = yield* Clock.currentTimeMillis
    yield* Effect.log(
      `streaming ${total} events into Bigtable ${bigtableTable} and BigQuery ${bigqueryTable}` +
        (config.exactlyOnce
          ? " (exactly once)"
          : config.fileLoads
          ? " (file loads: staged to Cloud Storage, loaded at a checkpoint every 10 chunks and at the end)"
          : "")
    )

    const write = Effect.all([
      events.pipe(Stream.runForEach((batch) => bigtableWriter.write(batch)), Effect.andThen(bigtableWriter.flush)),
      bigqueryWriter.write
    ], { concurrency: 2, discard: true })

    yield* Effect.raceFirst(write, display(sources, total)).pipe(
      Effect.onInterrupt(() =>
        Effect.gen(function*() {
          const lines = yield* finalFrame(sources, total, startedAt)
          process.stdout.write(`\ninterrupted; acknowledged so far:\n${lines.join("\n")}\n`)
        })
      )
    )

    const lines = yield* finalFrame(sources, total, startedAt)
    const seconds = ((yield* Clock.currentTimeMillis) - startedAt) / 1000
    process.stdout.write(
      `\naverages over the whole run:\n${lines.join("\n")}\n\nwrote ${total} events in ${seconds.toFixed(1)} s\n`
    )

    const routed = yield* Ref.get(deadLetters)
    process.stdout.write(`\ndead letters (${routed.length}):\n`)
    for (const failure of routed.slice(0, 6)) {
      process.stdout.write(`  ${failure.connector.padEnd(8)} ${failure.destination}: ${failure.message}\n`)
    }
    if (routed.length > 6) process.stdout.write(`  ... and ${routed.length - 6} more\n`)

    const expected = total - invalidCount(total, config.invalidEvery)
    const [inBigtable, inBigQuery] = yield* Effect.all([
      bigtableCount({
        projectId,
        instanceId: config.instance,
        tableId: "events",
        emulator: local?.bigtable
      }),
      bigQueryCount(`${bigqueryTable}`)
    ], { concurrency: 2 })
    const summaries = [yield* bigtableWriter.summary, yield* bigqueryWriter.summary]
    process.stdout.write(
      `\n${"".padEnd(10)}${"generated".padStart(10)}${"written".padStart(10)}${"routed".padStart(8)}` +
        `${"read back".padStart(11)}${"expected".padStart(10)}\n`
    )
    const rows: Array<[string, number, number]> = [["Bigtable", inBigtable, 0], ["BigQuery", inBigQuery, 1]]
    let ok = true
    for (const [name, readBack, i] of rows) {
      const s = summaries[i]
      if (s === undefined) continue
      const match = readBack === expected && s.recordsWritten === expected
      ok = ok && match
      process.stdout.write(
        `${name.padEnd(10)}${String(total).padStart(10)}${String(s.recordsWritten).padStart(10)}` +
          `${String(s.recordsFailed).padStart(8)}${String(readBack).padStart(11)}${String(expected).padStart(10)}` +
          `  ${match ? "ok" : "MISMATCH"}\n`
      )
    }
    if (!ok) return yield* new DemoError({ message: "read-back counts do not match what was written" })
    process.stdout.write("\nall records accounted for: written, or routed to the dead-letter sink\n")
  }).pipe(Effect.scoped, Effect.provide(Layer.merge(clients, CheckpointStore.memory)))
})

command((config) => program(config).pipe(Effect.scoped)).pipe(
  Command.run({ version: "0.1.0" }),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
