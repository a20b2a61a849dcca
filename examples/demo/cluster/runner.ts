/**
 * One runner process of `npm start -- --cluster` (started three times by `cluster/main.ts`, never by hand):
 * joins an `effect/cluster` cluster whose shard locks live in PostgreSQL (`NodeClusterSocket.layer` with
 * `storage: "sql"` over `PgClient.layer`, every setting explicit: the layer otherwise reads `HOST`, `PORT` and
 * the like from the environment), and registers `Partitions.layer` for the demo's synthetic event log split into
 * `DEMO_CLUSTER_PARTITIONS` partitions. Partition `p` holds the events `p, p + P, p + 2P, ...` below
 * `DEMO_CLUSTER_EVENTS`; its position is the index of its next event. Every partition writes into one BigQuery
 * table exactly once, with its checkpoints in a file store shared by the runners (its no-clobber link is the
 * compare-and-set that fences a stale owner).
 *
 * It reports what it does as lines `STEP <name> <json>` on stdout, read by the demo: `ready`, `started`
 * (`partition`, `from`), `first` (the first chunk of that start reached the sink), `committed` (a checkpoint
 * of `partition` saved: `position` events of it are in the table), `done` (the partition's last checkpoint),
 * `handedOff` (its shard moved away: input ended early, final checkpoint taken), `fenced` (a save refused by
 * the store: another runner owns the partition now). SIGTERM or SIGINT stops it cleanly (its shards are
 * released), and so does the demo's death; SIGKILL is what the demo uses to show a failover.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Array as Arr, Duration, Effect, Layer, Option, Schema, Sink, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import { Partitions } from "effect-gcp-sinks/Cluster"
import { CheckpointStore } from "effect-gcp-sinks/Sink"
import * as fs from "node:fs"
import { shardingOverPostgres } from "../../../test/support/clusterSharding.ts"
import { Event as EventSchema, event } from "../events.ts"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} must be set (this runner is started by --cluster)`)
  return value
}
const intEnv = (name: string): number => {
  const value = Number(env(name))
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, was ${env(name)}`)
  return value
}

const partitions = intEnv("DEMO_CLUSTER_PARTITIONS")
const total = intEnv("DEMO_CLUSTER_EVENTS")
const chunk = intEnv("DEMO_CLUSTER_CHUNK")
const chunkDelay = Duration.millis(intEnv("DEMO_CLUSTER_CHUNK_DELAY_MS"))
const runnerPort = intEnv("DEMO_CLUSTER_RUNNER_PORT")
const name = env("DEMO_CLUSTER_NAME")

const now = (): number => Math.round(performance.timeOrigin + performance.now())

/** A line the demo reads; written synchronously so that a SIGKILL never cuts one in half. */
const step = (stepName: string, data: Record<string, unknown>): Effect.Effect<void> =>
  Effect.sync(() => void fs.writeSync(1, `STEP ${stepName} ${JSON.stringify({ ...data, at: now() })}\n`))

/** How many events partition `p` holds. */
const sizeOf = (p: number): number => Math.max(0, Math.ceil((total - p) / partitions))

/** Partitions whose current start emitted their last chunk: their final checkpoint is the partition's last. */
const reachedEnd = new Set<number>()

/** Partition `p` from index `from`, `chunk` events at a time, one chunk per `chunkDelay`. */
const source = (p: number, from: Option.Option<number>) => {
  const start = Option.getOrElse(from, () => 0)
  const size = sizeOf(p)
  let first = true
  return Stream.fromEffect(Effect.andThen(
    // a start at the end (the last owner wrote it all, then the partition moved) is complete already
    Effect.sync(() => start >= size ? void reachedEnd.add(p) : void reachedEnd.delete(p)),
    step("started", { partition: p, from: start })
  )).pipe(
    Stream.flatMap(() => start >= size ? Stream.empty : Stream.range(start, size - 1, chunk)),
    Stream.mapArrayEffect((indices) =>
      Effect.gen(function*() {
        yield* Effect.sleep(chunkDelay)
        if (first) {
          first = false
          yield* step("first", { partition: p, from: start })
        }
        if (Arr.lastNonEmpty(indices) === size - 1) reachedEnd.add(p)
        return Arr.map(indices, (k) => event(p + k * partitions, 0))
      })
    )
  )
}

/** The partition of a writer id (`name-partition`). */
const partitionOf = (writerId: string): number => Number(writerId.slice(writerId.lastIndexOf("-") + 1))

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
          Effect.tap(() => step("committed", { partition: partitionOf(writerId), position: record.position })),
          Effect.tapError((error) =>
            error._tag === "CheckpointConflict" ? step("fenced", { partition: partitionOf(writerId) }) : Effect.void
          )
        )
    })
  })
).pipe(Layer.provide(CheckpointStore.file(env("DEMO_CLUSTER_STORE_DIR"))))

const program = Effect.gen(function*() {
  const projectId = env("DEMO_CLUSTER_PROJECT")
  const table = yield* TableDestination.make({
    projectId,
    datasetId: env("DEMO_CLUSTER_DATASET"),
    tableId: env("DEMO_CLUSTER_TABLE")
  })
  const serializer = yield* RowSerializer.fromSchema(EventSchema)
  const writers = Partitions.layer({
    name,
    partitions,
    positionSchema: Schema.Number,
    restartDelay: "1 second",
    stopTimeout: "3 seconds",
    source,
    sink: ({ partition, resume }) =>
      BigQuerySink.make({
        table,
        serializer,
        writeMethod: WriteMethod.exactlyOnce(),
        checkpoint: { resume, every: "1 second", position: (e) => (Number(e.id) - partition) / partitions + 1 }
      }).pipe(
        Sink.mapEffect((summary) =>
          step(reachedEnd.has(partition) ? "done" : "handedOff", { partition, written: summary.recordsWritten })
        )
      )
  }).pipe(
    Layer.provide(BigQueryClient.layer({
      projectId,
      emulator: { grpc: env("DEMO_CLUSTER_BQ_GRPC"), rest: env("DEMO_CLUSTER_BQ_REST") }
    }))
  )
  // NodeClusterSocket over PostgreSQL, every setting explicit (README, "Many machines")
  const sharding = shardingOverPostgres({
    runnerPort,
    postgres: { host: env("DEMO_CLUSTER_PG_HOST"), port: intEnv("DEMO_CLUSTER_PG_PORT") },
    lockExpirationMillis: intEnv("DEMO_CLUSTER_LOCK_EXPIRY_MS"),
    lockRefreshMillis: intEnv("DEMO_CLUSTER_LOCK_REFRESH_MS"),
    applicationName: `demo-runner-${runnerPort}`
  })
  const live = writers.pipe(Layer.provide(sharding), Layer.provide(store))
  return yield* Layer.launch(Layer.merge(live, Layer.effectDiscard(step("ready", { port: runnerPort }))))
})

// Never outlive the demo: if it dies without stopping this runner (SIGKILL), stop as on SIGTERM.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, "SIGTERM")
}, 1_000).unref()

NodeRuntime.runMain(program)
