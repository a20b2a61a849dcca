/**
 * One runner process of `npm start -- --cluster` (started three times by `cluster/main.ts`, never by hand):
 * joins an `effect/cluster` cluster whose shard locks live in PostgreSQL (`NodeClusterSocket.layer` with
 * `storage: "sql"` over `PgClient.layer`, every setting explicit: the layer otherwise reads `HOST`, `PORT` and
 * the like from the environment), and registers `Partitions.layer` for the demo's synthetic event log split into
 * `DEMO_CLUSTER_PARTITIONS` partitions. Partition `p` holds the events `p, p + P, p + 2P, ...` below
 * `DEMO_CLUSTER_EVENTS`; its position is the index of its next event. Every partition is written twice, by two
 * `Partitions.layer`s with writer ids of their own: into one BigQuery table exactly once (`<name>-bq-p`), and
 * into Bigtable exactly-once counters (`<name>-bt-p`: event `n` adds 1 to `c:n` and `n % 10000` to `c:cents` of
 * row `kind-<kind>-<n % 256>` of DEMO_CLUSTER_BT_TABLE), with their checkpoints in a file store shared by the runners
 * (its no-clobber link is the compare-and-set that fences a stale owner).
 *
 * It reports what it does as lines `STEP <name> <json>` on stdout, read by the demo, each with its `backend`
 * (`bq` or `bt`): `ready`, `started` (`partition`, `from`), `first` (the first chunk of that start reached the
 * sink), `committed` (a checkpoint of `partition` saved: `position` events of it are written), `done` (the
 * partition's last checkpoint), `handedOff` (its shard moved away: input ended early, final checkpoint taken),
 * `fenced` (a save refused by the store: another runner owns the partition now). SIGTERM or SIGINT stops it
 * cleanly (its shards are released), and so does the demo's death; SIGKILL is what the demo uses to show a
 * failover. Its parameters are read through test/support/childEnv.ts.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Array as Arr, Duration, Effect, Layer, Option, Schema, Sink, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination as BigtableTable,
  WriteMethod as BigtableWriteMethod
} from "effect-gcp-sinks/Bigtable"
import { Partitions } from "effect-gcp-sinks/Cluster"
import { type Checkpoint, CheckpointStore, type WriteSummary } from "effect-gcp-sinks/Sink"
import * as fs from "node:fs"
import { childEnv, int, string } from "../../../test/support/childEnv.ts"
import { shardingOverPostgres } from "../../../test/support/clusterSharding.ts"
import { type Event, Event as EventSchema, event } from "../events.ts"

const env = childEnv({
  name: string("DEMO_CLUSTER_NAME"),
  partitions: int("DEMO_CLUSTER_PARTITIONS"),
  total: int("DEMO_CLUSTER_EVENTS"),
  chunk: int("DEMO_CLUSTER_CHUNK"),
  chunkDelayMillis: int("DEMO_CLUSTER_CHUNK_DELAY_MS"),
  runnerPort: int("DEMO_CLUSTER_RUNNER_PORT"),
  storeDir: string("DEMO_CLUSTER_STORE_DIR"),
  projectId: string("DEMO_CLUSTER_PROJECT"),
  datasetId: string("DEMO_CLUSTER_DATASET"),
  tableId: string("DEMO_CLUSTER_TABLE"),
  bqGrpc: string("DEMO_CLUSTER_BQ_GRPC"),
  bqRest: string("DEMO_CLUSTER_BQ_REST"),
  bigtable: string("DEMO_CLUSTER_BT_EMULATOR"),
  bigtableInstance: string("DEMO_CLUSTER_BT_INSTANCE"),
  bigtableTable: string("DEMO_CLUSTER_BT_TABLE"),
  pgHost: string("DEMO_CLUSTER_PG_HOST"),
  pgPort: int("DEMO_CLUSTER_PG_PORT"),
  lockExpiry: int("DEMO_CLUSTER_LOCK_EXPIRY_MS"),
  lockRefresh: int("DEMO_CLUSTER_LOCK_REFRESH_MS")
})
const { partitions, total, chunk, runnerPort, name } = env
const chunkDelay = Duration.millis(env.chunkDelayMillis)

/** The BigQuery table, or the Bigtable counters. */
type Backend = "bq" | "bt"

const now = (): number => Math.round(performance.timeOrigin + performance.now())

/** A line the demo reads; written synchronously so that a SIGKILL never cuts one in half. */
const step = (stepName: string, data: Record<string, unknown>): Effect.Effect<void> =>
  Effect.sync(() => void fs.writeSync(1, `STEP ${stepName} ${JSON.stringify({ ...data, at: now() })}\n`))

/** How many events partition `p` holds. */
const sizeOf = (p: number): number => Math.max(0, Math.ceil((total - p) / partitions))

/** `backend:partition` of the starts that emitted their last chunk: their final checkpoint is the partition's last. */
const reachedEnd = new Set<string>()

/** Partition `p` from index `from`, `chunk` events at a time, one chunk per `chunkDelay`. */
const source = (backend: Backend, p: number, from: Option.Option<number>) => {
  const start = Option.getOrElse(from, () => 0)
  const size = sizeOf(p)
  const key = `${backend}:${p}`
  let first = true
  return Stream.fromEffect(Effect.andThen(
    // a start at the end (the last owner wrote it all, then the partition moved) is complete already
    Effect.sync(() => start >= size ? void reachedEnd.add(key) : void reachedEnd.delete(key)),
    step("started", { backend, partition: p, from: start })
  )).pipe(
    Stream.flatMap(() => start >= size ? Stream.empty : Stream.range(start, size - 1, chunk)),
    Stream.mapArrayEffect((indices) =>
      Effect.gen(function*() {
        yield* Effect.sleep(chunkDelay)
        if (first) {
          first = false
          yield* step("first", { backend, partition: p, from: start })
        }
        if (Arr.lastNonEmpty(indices) === size - 1) reachedEnd.add(key)
        return Arr.map(indices, (k) => event(p + k * partitions, 0))
      })
    )
  )
}

/** The backend and partition of a writer id (`name-backend-partition`). */
const writerOf = (writerId: string): { readonly backend: string; readonly partition: number } => {
  const match = /-(bq|bt)-(\d+)$/.exec(writerId)
  return { backend: match?.[1] ?? "", partition: Number(match?.[2] ?? -1) }
}

/** The shared file store, reporting each committed checkpoint and each save refused by its compare-and-set. */
const store = Layer.effect(
  CheckpointStore,
  Effect.gen(function*() {
    const inner = yield* CheckpointStore
    return CheckpointStore.of({
      load: inner.load,
      claim: inner.claim,
      save: (writerId, record, expected) =>
        inner.save(writerId, record, expected).pipe(
          Effect.tap(() => step("committed", { ...writerOf(writerId), position: record.position })),
          Effect.tapError((error) =>
            error._tag === "CheckpointConflict" ? step("fenced", writerOf(writerId)) : Effect.void
          )
        )
    })
  })
).pipe(Layer.provide(CheckpointStore.file(env.storeDir)))

/**
 * Counter rows per kind. A few hot rows would serialize every exactly-once commit on them, and each event
 * leaves a marker cell in its row that later writes to it pay for (docs/exactly-once.md, "The marker
 * family's cost"): at 100,000 events, 16 rows a kind held the counters 20 s behind BigQuery, 256 keep pace.
 */
const ROWS_PER_KIND = 256
/** The digits of a row's number: `kind-view-007`. */
const rowDigits = String(ROWS_PER_KIND - 1).length

/**
 * Event `n` adds 1 to `c:n` and `n % 10000` (its amount in cents) to `c:cents` of row `kind-<kind>-<n % 256>`;
 * the demo adds the rows of a kind up.
 */
const increments = (e: Event): RowMutationEntry.RowMutationEntry =>
  RowMutationEntry.make(`kind-${e.kind}-${String(e.id % BigInt(ROWS_PER_KIND)).padStart(rowDigits, "0")}`, [
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: 1n }),
    Mutation.addToCell({ family: "c", qualifier: "cents", timestampMicros: 0, input: e.id % 10_000n })
  ])

/** The partition writers of one backend, reporting their ends as `done` or `handedOff`. */
const partitionsOf = <E, R>(
  backend: Backend,
  sink: (partition: number, resume: Checkpoint.Resume<number>) => Sink.Sink<WriteSummary, Event, unknown, E, R>
) =>
  Partitions.layer({
    name: `${name}-${backend}`,
    partitions,
    positionSchema: Schema.Number,
    restartDelay: "1 second",
    stopTimeout: "3 seconds",
    source: (p, from) => source(backend, p, from),
    sink: ({ partition, resume }) =>
      sink(partition, resume).pipe(
        Sink.mapEffect((summary) =>
          step(reachedEnd.has(`${backend}:${partition}`) ? "done" : "handedOff", {
            backend,
            partition,
            written: summary.recordsWritten
          })
        )
      )
  })

/** Where partition `partition` resumes once event `e` is written. */
const position = (partition: number) => (e: Event) => (Number(e.id) - partition) / partitions + 1

const program = Effect.gen(function*() {
  const table = yield* TableDestination.make({
    projectId: env.projectId,
    datasetId: env.datasetId,
    tableId: env.tableId
  })
  const serializer = yield* RowSerializer.fromSchema(EventSchema)
  const every = "1 second"
  const bigQueryWriters = partitionsOf("bq", (partition, resume) =>
    BigQuerySink.make({
      table,
      serializer,
      writeMethod: WriteMethod.exactlyOnce(),
      checkpoint: { resume, every, position: position(partition) }
    })).pipe(
      Layer.provide(BigQueryClient.layer({
        projectId: env.projectId,
        emulator: { grpc: env.bqGrpc, rest: env.bqRest }
      }))
    )
  const counters = BigtableTable.makeUnsafe({
    projectId: env.projectId,
    instanceId: env.bigtableInstance,
    tableId: env.bigtableTable
  })
  const bigtableWriters = partitionsOf("bt", (partition, resume) =>
    BigtableSink.make({
      table: counters,
      writeMethod: BigtableWriteMethod.exactlyOnce({ markerFamily: "m" }),
      checkpoint: { resume, every, position: position(partition) },
      serializer: increments
    })).pipe(
      Layer.provide(BigtableClient.layer({ projectId: env.projectId, emulator: { grpc: env.bigtable } }))
    )
  // NodeClusterSocket over PostgreSQL, every setting explicit (README, "Many machines")
  const sharding = shardingOverPostgres({
    runnerPort,
    postgres: { host: env.pgHost, port: env.pgPort },
    lockExpirationMillis: env.lockExpiry,
    lockRefreshMillis: env.lockRefresh,
    applicationName: `demo-runner-${runnerPort}`
  })
  const live = Layer.merge(bigQueryWriters, bigtableWriters).pipe(Layer.provide(sharding), Layer.provide(store))
  return yield* Layer.launch(Layer.merge(live, Layer.effectDiscard(step("ready", { port: runnerPort }))))
})

// Never outlive the demo: if it dies without stopping this runner (SIGKILL), stop as on SIGTERM.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, "SIGTERM")
}, 1_000).unref()

NodeRuntime.runMain(program)
