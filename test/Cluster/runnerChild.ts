/**
 * One runner process of the cluster proof (`Partitions.proof.test.ts`): joins an `effect/cluster` cluster whose
 * shard locks live in PostgreSQL (`NodeClusterSocket.layer` with `storage: "sql"` over `PgClient.layer`, every
 * setting explicit), and registers `Partitions.layer` for a deterministic, replayable log split into
 * `CLUSTER_PARTITIONS` partitions: partition `p` holds the ids `p, p + P, p + 2P, ... < CLUSTER_TOTAL`, its
 * position is the index of the next id. Each partition writes into one BigQuery emulator table exactly once
 * and, with CLUSTER_BT_EMULATOR, also into Bigtable exactly-once counters (row `id` adds `id % 7 + 1` to
 * counter `id % CLUSTER_BT_COUNTERS` of CLUSTER_BT_TABLE): two `Partitions.layer`s, `<name>-bq` and
 * `<name>-bt`, each with its own writer ids, in the SQL checkpoint store shared by all runners
 * (`CheckpointStore.sql` in the same PostgreSQL: the database does the compare-and-set).
 *
 * Steps on stdout (`STEP <name> <json>`, see test/support/crashChild.ts), with `at` in epoch milliseconds and
 * `backend` (`bq` or `bt`) on the partition steps:
 * `ready` (the layer is built), `started` (a partition's writer resumed: `partition`, `from`), `first` (the
 * first chunk of that start reached the sink), `partitionDone` (its source ended and its final checkpoint
 * committed), `handedOff` (its shard moved away: the input was ended early and the final checkpoint committed),
 * `conflict` (a save refused by the store's compare-and-set: this runner's writer was fenced).
 *
 * What each writer did is reported from the library's own spans, through a tracer of this process (no hook in the
 * library): `span` steps for `Partitions.partition` (a partition's life on this runner: one singleton),
 * `Partitions.run` (one run of its writer, from its restore to its end), `BigQuerySink.checkpoint` and
 * `BigtableSink.checkpoint` (a checkpoint: its record saved, then committed), `BigQuerySink.flushRows` and
 * `BigtableSink.commit` (the writes that make rows visible or apply entries), each with its `run` and `life` (the
 * span ids of the enclosing run and life), `checkpointStart` (when its enclosing checkpoint began, if any),
 * `start` and `end` (epoch ms) and `outcome` (`success`, `interrupted` or the failure's tag). Warnings, errors and the partition writers' own log lines are `log` steps.
 *
 * Environment: CLUSTER_PG_HOST, CLUSTER_PG_PORT, CLUSTER_RUNNER_PORT, CLUSTER_BQ_GRPC, CLUSTER_BQ_REST,
 * CLUSTER_PROJECT, CLUSTER_DATASET, CLUSTER_TABLE, CLUSTER_STORE_DIR, CLUSTER_NAME, CLUSTER_PARTITIONS,
 * CLUSTER_TOTAL, CLUSTER_CHUNK (ids per chunk), CLUSTER_CHUNK_DELAY_MS, CLUSTER_EVERY (checkpoint interval, ms),
 * CLUSTER_LOCK_EXPIRY_MS, CLUSTER_LOCK_REFRESH_MS, CLUSTER_STOP_TIMEOUT_MS (default 3000), CLUSTER_SHARDS_PER_GROUP
 * (default 300), CLUSTER_SPREAD (1: `Partitions.layer`'s `shardsPerGroup` set to it), and CLUSTER_BT_EMULATOR,
 * CLUSTER_BT_TABLE, CLUSTER_BT_COUNTERS for the Bigtable counters (read through test/support/childEnv.ts).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { PgClient } from "@effect/sql-pg"
import {
  Array as Arr,
  Cause,
  Duration,
  Effect,
  Exit,
  Layer,
  Logger,
  Option,
  References,
  Schema,
  Sink,
  Stream,
  Tracer
} from "effect"
import * as fs from "node:fs"
import {
  BigQueryClient,
  BigQuerySink,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination as BigtableDestination,
  WriteMethod as BigtableWriteMethod
} from "../../src/Bigtable/index.ts"
import { Partitions } from "../../src/Cluster.ts"
import { type Checkpoint, CheckpointStore, type WriteSummary } from "../../src/Sink.ts"
import { childEnv, int, optional, string } from "../support/childEnv.ts"
import { shardingOverPostgres } from "../support/clusterSharding.ts"
import { amountOf, counterRow } from "../support/counterLog.ts"
import { step } from "../support/crashChild.ts"

const env = childEnv({
  pgHost: string("CLUSTER_PG_HOST"),
  pgPort: int("CLUSTER_PG_PORT"),
  runnerPort: int("CLUSTER_RUNNER_PORT"),
  bqGrpc: string("CLUSTER_BQ_GRPC"),
  bqRest: string("CLUSTER_BQ_REST"),
  projectId: string("CLUSTER_PROJECT"),
  datasetId: string("CLUSTER_DATASET"),
  tableId: string("CLUSTER_TABLE"),
  bigtable: optional("CLUSTER_BT_EMULATOR"),
  bigtableTable: optional("CLUSTER_BT_TABLE"),
  bigtableCounters: int("CLUSTER_BT_COUNTERS", 1),
  storeDir: string("CLUSTER_STORE_DIR"),
  name: string("CLUSTER_NAME"),
  partitions: int("CLUSTER_PARTITIONS"),
  total: int("CLUSTER_TOTAL"),
  chunk: int("CLUSTER_CHUNK"),
  chunkDelay: int("CLUSTER_CHUNK_DELAY_MS"),
  every: int("CLUSTER_EVERY"),
  lockExpiry: int("CLUSTER_LOCK_EXPIRY_MS"),
  lockRefresh: int("CLUSTER_LOCK_REFRESH_MS"),
  stopTimeout: int("CLUSTER_STOP_TIMEOUT_MS", 3_000),
  shardsPerGroup: int("CLUSTER_SHARDS_PER_GROUP", 300),
  // 1: name the partitions' singletons so they fill the shards evenly (`Partitions.layer`'s `shardsPerGroup`)
  spread: int("CLUSTER_SPREAD", 0)
})
const { partitions, total, chunk, chunkDelay, projectId, runnerPort } = env

const now = (): number => Date.now()

/** How many ids partition `p` holds. */
const sizeOf = (p: number): number => Math.max(0, Math.ceil((total - p) / partitions))

const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }

interface Row {
  readonly id: number
}

/** The BigQuery table, or the Bigtable counters. */
type Backend = "bq" | "bt"

/**
 * Partitions whose current start emitted their last chunk (a graceful stop on a move ends the source early;
 * `Stream.interruptWhen` then lets a `Stream.concat` tail run, so that cannot mark the end).
 */
const reachedEnd = new Set<string>()

/** Partition `p` from index `from`: chunks of `chunk` ids, one chunk per `chunkDelay` ms. */
const source = (backend: Backend, p: number, from: Option.Option<number>): Stream.Stream<Row> => {
  const start = Option.getOrElse(from, () => 0)
  const size = sizeOf(p)
  let first = true
  // a start at the end (the last owner wrote it all, then the partition moved) is complete already
  if (start >= size) reachedEnd.add(`${backend}:${p}`)
  return (start >= size ? Stream.empty : Stream.range(start, size - 1, chunk)).pipe(
    Stream.mapArrayEffect((indices) =>
      Effect.gen(function*() {
        yield* Effect.sleep(Duration.millis(chunkDelay))
        if (first) {
          first = false
          yield* step("first", { backend, partition: p, from: start, at: now() })
        }
        // the last chunk: once it is written, a final checkpoint covers the whole partition
        if (Arr.lastNonEmpty(indices) === size - 1) reachedEnd.add(`${backend}:${p}`)
        return Arr.map(indices, (k): Row => ({ id: p + k * partitions }))
      })
    )
  )
}

/**
 * The store every runner shares, `CheckpointStore.sql` in the cluster's own PostgreSQL (its own pool),
 * reporting each save refused by its compare-and-set (this runner was fenced).
 */
const store = Layer.effect(
  CheckpointStore,
  Effect.gen(function*() {
    const inner = yield* CheckpointStore
    return CheckpointStore.of({
      load: inner.load,
      claim: inner.claim,
      save: (writerId, record, expected) =>
        inner.save(writerId, record, expected).pipe(
          Effect.tapError((error) =>
            error._tag === "CheckpointConflict" ? step("conflict", { writerId, at: now() }) : Effect.void
          )
        )
    })
  })
).pipe(
  Layer.provide(CheckpointStore.sql({ table: "cluster_checkpoints" })),
  Layer.provide(PgClient.layer({
    host: env.pgHost,
    port: env.pgPort,
    database: "postgres",
    username: "postgres",
    applicationName: "cluster-checkpoints"
  }))
)

/** The index after the row's: where partition `partition` resumes once `row` is written. */
const position = (partition: number) => (row: Row) => (row.id - partition) / partitions + 1

/** Row `id` adds `id % 7 + 1` to the counter `id % CLUSTER_BT_COUNTERS`. */
const increment = (row: Row) =>
  RowMutationEntry.make(
    counterRow(row.id, env.bigtableCounters),
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: amountOf(row.id) })
  )

const bigtableTable = (tableId: string) =>
  BigtableDestination.makeUnsafe({ projectId: "test-project", instanceId: "cluster", tableId })

const program = Effect.gen(function*() {
  const serializer = yield* RowSerializer.fromJson(schema)
  const table = yield* TableDestination.make({
    projectId,
    datasetId: env.datasetId,
    tableId: env.tableId
  })
  /** The partition writers of one backend, reporting their steps with `backend`. */
  const partitionsOf = <E, R>(
    backend: Backend,
    sink: (partition: number, resume: Checkpoint.Resume<number>) => Sink.Sink<WriteSummary, Row, unknown, E, R>
  ) =>
    Partitions.layer({
      name: `${env.name}-${backend}`,
      partitions,
      positionSchema: Schema.Number,
      restartDelay: "1 second",
      stopTimeout: Duration.millis(env.stopTimeout),
      shardsPerGroup: env.spread === 1 ? env.shardsPerGroup : undefined,
      source: (p, from) =>
        Stream.fromEffect(Effect.andThen(
          Effect.sync(() => reachedEnd.delete(`${backend}:${p}`)),
          step("started", { backend, partition: p, from: Option.getOrElse(from, () => 0), at: now() })
        )).pipe(Stream.flatMap(() => source(backend, p, from))),
      sink: ({ partition, resume }) =>
        sink(partition, resume).pipe(
          Sink.mapEffect((summary) =>
            step(reachedEnd.has(`${backend}:${partition}`) ? "partitionDone" : "handedOff", {
              backend,
              partition,
              written: summary.recordsWritten,
              at: now()
            })
          )
        )
    })
  const every = Duration.millis(env.every)
  const bigQueryWriters = partitionsOf("bq", (partition, resume) =>
    BigQuerySink.make<Row, number>({
      table,
      serializer,
      writeMethod: WriteMethod.exactlyOnce(),
      checkpoint: { resume, every, position: position(partition) }
    })).pipe(
      Layer.provide(BigQueryClient.layer({
        projectId,
        emulator: { grpc: env.bqGrpc, rest: env.bqRest }
      }))
    )
  const bigtable = env.bigtable
  const countersTable = env.bigtableTable
  const writers = bigtable === undefined || countersTable === undefined ? bigQueryWriters : Layer.merge(
    bigQueryWriters,
    partitionsOf("bt", (partition, resume) =>
      BigtableSink.make({
        table: bigtableTable(countersTable),
        writeMethod: BigtableWriteMethod.exactlyOnce({ markerFamily: "m", responseTimeout: "2 minutes" }),
        checkpoint: { resume, every, position: position(partition) },
        serializer: increment
      })).pipe(Layer.provide(BigtableClient.layer({ projectId: "test-project", emulator: { grpc: bigtable } })))
  )
  const sharding = shardingOverPostgres({
    runnerPort,
    postgres: { host: env.pgHost, port: env.pgPort },
    lockExpirationMillis: env.lockExpiry,
    lockRefreshMillis: env.lockRefresh,
    applicationName: `runner-${runnerPort}`,
    shardsPerGroup: env.shardsPerGroup
  })
  const live = writers.pipe(Layer.provide(sharding), Layer.provide(store))
  return yield* Layer.launch(Layer.merge(live, Layer.effectDiscard(step("ready", { port: runnerPort, at: now() }))))
})

/** Nanoseconds of the clock to epoch milliseconds. */
const millis = (nanos: bigint): number => Number(nanos / 1_000_000n)

/** The spans reported as steps: a partition's life and runs, and the writes that reach a destination. */
const reported = new Set([
  "Partitions.partition",
  "Partitions.run",
  "BigQuerySink.checkpoint",
  "BigtableSink.checkpoint",
  "BigQuerySink.flushRows",
  "BigtableSink.commit"
])

/** The nearest enclosing span called `name` (itself included). */
const enclosing = (span: Tracer.AnySpan, name: string): Tracer.Span | undefined => {
  for (let s: Tracer.AnySpan | undefined = span; s !== undefined;) {
    if (s._tag === "Span" && s.name === name) return s
    s = s._tag === "Span" ? Option.getOrUndefined(s.parent) : undefined
  }
  return undefined
}

/** How a span ended: `success`, `interrupted`, or the tag (else the text) of its first failure. */
const outcomeOf = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return "success"
  if (Cause.hasInterruptsOnly(exit.cause)) return "interrupted"
  const failure = exit.cause.reasons.find(Cause.isFailReason)
  const error: unknown = failure?.error
  return typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : String(error)
}

/** A failed span's first failure as text (its message names the reason), for a failing proof to explain itself. */
const failureOf = (exit: Exit.Exit<unknown, unknown>): string | undefined =>
  Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause) ? Cause.pretty(exit.cause).slice(0, 2_000) : undefined

/** The spans whose start is reported too (`spanStart`): a partition's life and its runs. */
const startReported = new Set(["Partitions.partition", "Partitions.run"])

/** Reports the spans of {@link reported} as `span` steps when they end (and a life or run as it starts). */
class ReportedSpan extends Tracer.NativeSpan {
  constructor(options: ConstructorParameters<typeof Tracer.NativeSpan>[0]) {
    super(options)
    if (!startReported.has(this.name)) return
    fs.writeSync(
      1,
      `STEP spanStart ${
        JSON.stringify({
          name: this.name,
          id: this.spanId,
          life: enclosing(this, "Partitions.partition")?.spanId,
          start: millis(this.startTime)
        })
      }\n`
    )
  }

  override end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    super.end(endTime, exit)
    if (!reported.has(this.name)) return
    const run = enclosing(this, "Partitions.run")
    const checkpoint = enclosing(this, "BigQuerySink.checkpoint") ?? enclosing(this, "BigtableSink.checkpoint")
    const writer = String(run?.attributes.get("writer.id") ?? this.attributes.get("writer.id") ?? "")
    fs.writeSync(
      1,
      `STEP span ${
        JSON.stringify({
          name: this.name,
          id: this.spanId,
          run: run?.spanId,
          life: enclosing(this, "Partitions.partition")?.spanId,
          checkpointStart: checkpoint === undefined ? undefined : millis(checkpoint.status.startTime),
          writerId: writer === "" ? undefined : writer,
          partition: this.attributes.get("partition"),
          start: millis(this.startTime),
          end: millis(endTime),
          outcome: outcomeOf(exit),
          failure: failureOf(exit)
        })
      }\n`
    )
  }
}

/** The log lines of the partition writers and every warning or error, as `log` steps (stdout is the step pipe). */
const logSteps = Logger.make((options) => {
  const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
  const partitionWriter = "writerId" in annotations
  if (!partitionWriter && options.logLevel !== "Warn" && options.logLevel !== "Error" && options.logLevel !== "Fatal") {
    return
  }
  const message = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
  const cause = Cause.hasFails(options.cause) || Cause.hasDies(options.cause) ? Cause.pretty(options.cause) : undefined
  fs.writeSync(
    1,
    `STEP log ${
      JSON.stringify({
        level: options.logLevel,
        message,
        writerId: annotations.writerId,
        cause,
        at: options.date.getTime()
      })
    }\n`
  )
})

NodeRuntime.runMain(
  program.pipe(
    Effect.withTracer(Tracer.make({ span: (options) => new ReportedSpan(options) })),
    Effect.provide(Logger.layer([logSteps]))
  )
)
