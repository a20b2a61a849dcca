/**
 * One runner process of the cluster proof (`Partitions.proof.test.ts`): joins an `effect/cluster` cluster whose
 * shard locks live in PostgreSQL (`NodeClusterSocket.layer` with `storage: "sql"` over `PgClient.layer`, every
 * setting explicit), and registers `Partitions.layer` for a deterministic, replayable log split into
 * `CLUSTER_PARTITIONS` partitions: partition `p` holds the ids `p, p + P, p + 2P, ... < CLUSTER_TOTAL`, its
 * position is the index of the next id. Each partition writes into one BigQuery emulator table exactly once
 * and, with CLUSTER_BT_EMULATOR, also into Bigtable exactly-once counters (row `id` adds `id % 7 + 1` to
 * counter `id % CLUSTER_BT_COUNTERS` of CLUSTER_BT_TABLE): two `Partitions.layer`s, `<name>-bq` and
 * `<name>-bt`, each with its own writer ids, in the file checkpoint store shared by all runners (its
 * no-clobber link is the compare-and-set).
 *
 * Steps on stdout (`STEP <name> <json>`, see test/support/crashChild.ts), with `at` in epoch milliseconds and
 * `backend` (`bq` or `bt`) on the partition steps:
 * `ready` (the layer is built), `started` (a partition's writer resumed: `partition`, `from`), `first` (the
 * first chunk of that start reached the sink), `partitionDone` (its source ended and its final checkpoint
 * committed), `handedOff` (its shard moved away: the input was ended early and the final checkpoint committed),
 * `conflict` (a save refused by the store's compare-and-set: this runner's writer was fenced).
 *
 * Environment: CLUSTER_PG_HOST, CLUSTER_PG_PORT, CLUSTER_RUNNER_PORT, CLUSTER_BQ_GRPC, CLUSTER_BQ_REST,
 * CLUSTER_PROJECT, CLUSTER_DATASET, CLUSTER_TABLE, CLUSTER_STORE_DIR, CLUSTER_NAME, CLUSTER_PARTITIONS,
 * CLUSTER_TOTAL, CLUSTER_CHUNK (ids per chunk), CLUSTER_CHUNK_DELAY_MS, CLUSTER_EVERY (checkpoint interval, ms),
 * CLUSTER_LOCK_EXPIRY_MS, CLUSTER_LOCK_REFRESH_MS.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Array as Arr, Duration, Effect, Layer, Option, Schema, Sink, Stream } from "effect"
import * as path from "node:path"
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
import { shardingOverPostgres } from "../support/clusterSharding.ts"
import { intEnv, step, stringEnv } from "../support/crashChild.ts"

const partitions = intEnv("CLUSTER_PARTITIONS")
const total = intEnv("CLUSTER_TOTAL")
const chunk = intEnv("CLUSTER_CHUNK")
const chunkDelay = intEnv("CLUSTER_CHUNK_DELAY_MS")
const projectId = stringEnv("CLUSTER_PROJECT")
const runnerPort = intEnv("CLUSTER_RUNNER_PORT")

const now = (): number => Math.round(performance.timeOrigin + performance.now())

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

/** The shared file store, reporting each save refused by its compare-and-set (this runner was fenced). */
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
).pipe(Layer.provide(CheckpointStore.file(path.join(stringEnv("CLUSTER_STORE_DIR"), "store"))))

/** The index after the row's: where partition `partition` resumes once `row` is written. */
const position = (partition: number) => (row: Row) => (row.id - partition) / partitions + 1

/** Row `id` adds `id % 7 + 1` to the counter `id % CLUSTER_BT_COUNTERS`. */
const increment = (row: Row) =>
  RowMutationEntry.make(
    `counter${String(row.id % intEnv("CLUSTER_BT_COUNTERS", 1)).padStart(4, "0")}`,
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: BigInt((row.id % 7) + 1) })
  )

const bigtableTable = (tableId: string) =>
  BigtableDestination.makeUnsafe({ projectId: "test-project", instanceId: "cluster", tableId })

const program = Effect.gen(function*() {
  const serializer = yield* RowSerializer.fromJson(schema)
  const table = yield* TableDestination.make({
    projectId,
    datasetId: stringEnv("CLUSTER_DATASET"),
    tableId: stringEnv("CLUSTER_TABLE")
  })
  /** The partition writers of one backend, reporting their steps with `backend`. */
  const partitionsOf = <E, R>(
    backend: Backend,
    sink: (partition: number, resume: Checkpoint.Resume<number>) => Sink.Sink<WriteSummary, Row, unknown, E, R>
  ) =>
    Partitions.layer({
      name: `${stringEnv("CLUSTER_NAME")}-${backend}`,
      partitions,
      positionSchema: Schema.Number,
      restartDelay: "1 second",
      stopTimeout: "3 seconds",
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
  const every = Duration.millis(intEnv("CLUSTER_EVERY"))
  const bigQueryWriters = partitionsOf("bq", (partition, resume) =>
    BigQuerySink.make<Row, number>({
      table,
      serializer,
      writeMethod: WriteMethod.exactlyOnce(),
      checkpoint: { resume, every, position: position(partition) }
    })).pipe(
      Layer.provide(BigQueryClient.layer({
        projectId,
        emulator: { grpc: stringEnv("CLUSTER_BQ_GRPC"), rest: stringEnv("CLUSTER_BQ_REST") }
      }))
    )
  const bigtable = process.env.CLUSTER_BT_EMULATOR
  const writers = bigtable === undefined ? bigQueryWriters : Layer.merge(
    bigQueryWriters,
    partitionsOf("bt", (partition, resume) =>
      BigtableSink.make({
        table: bigtableTable(stringEnv("CLUSTER_BT_TABLE")),
        writeMethod: BigtableWriteMethod.exactlyOnce({ markerFamily: "m", responseTimeout: "2 minutes" }),
        checkpoint: { resume, every, position: position(partition) },
        serializer: increment
      })).pipe(Layer.provide(BigtableClient.layer({ projectId: "test-project", emulator: { grpc: bigtable } })))
  )
  const sharding = shardingOverPostgres({
    runnerPort,
    postgres: { host: stringEnv("CLUSTER_PG_HOST"), port: intEnv("CLUSTER_PG_PORT") },
    lockExpirationMillis: intEnv("CLUSTER_LOCK_EXPIRY_MS"),
    lockRefreshMillis: intEnv("CLUSTER_LOCK_REFRESH_MS"),
    applicationName: `runner-${runnerPort}`
  })
  const live = writers.pipe(Layer.provide(sharding), Layer.provide(store))
  return yield* Layer.launch(Layer.merge(live, Layer.effectDiscard(step("ready", { port: runnerPort, at: now() }))))
})

NodeRuntime.runMain(program)
