/**
 * `--file-loads`: the BigQuery side written by `BigQuerySink.make` with `WriteMethod.fileLoads`. Rows are staged as Avro
 * files in Cloud Storage (fake-gcs-server locally) and loaded by load jobs at a checkpoint every 10
 * chunks and at the end of input, on a memory `CheckpointStore`; the display shows the rows loaded
 * so far and those staged but not yet loaded.
 */
import { Effect, Layer, Option, Predicate, Ref, Schema, Stream } from "effect"
import { BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import {
  Checkpoint,
  CheckpointStore,
  type DeadLetterStalled,
  type FailedElement,
  type FailureHandler,
  GcsClient,
  type SinkConfigError,
  WriteSummary
} from "effect-gcp-sinks/Sink"
import { type Event, Event as EventSchema } from "./events.ts"

/**
 * The emulator's table: bqemulator reads Avro through DuckDB, which ignores Avro logical types, so
 * TIMESTAMP and NUMERIC columns fail its loads (pinned in test/integration/bigquery/fileLoads.test.ts).
 * Locally the event is stored with `at_micros` (INT64) and `amount` as its decimal text.
 */
const LoadableEvent = Schema.Struct({
  id: Schema.BigInt,
  user: Schema.String,
  kind: Schema.Literals(["view", "click", "purchase"]),
  amount: Schema.String,
  at_micros: Schema.BigInt
})

/** NUMERIC keeps 9 decimals: a longer fraction is refused, as BigQuery's NUMERIC column refuses it. */
const fitsNumeric = (amount: string): boolean => (amount.split(".")[1] ?? "").replace(/0+$/, "").length <= 9

/**
 * The serializer of the loaded table: the demo's `Event` schema on GCP; on the emulators the
 * loadable shape above, with the invalid amounts routed as NUMERIC would route them.
 */
export const serializer = (real: boolean) =>
  Effect.gen(function*() {
    if (real) return yield* RowSerializer.fromSchema(EventSchema)
    const loadable = yield* RowSerializer.fromSchema(LoadableEvent)
    return RowSerializer.make<Event>({
      tableSchema: loadable.tableSchema,
      serialize: (event, destination) =>
        fitsNumeric(event.amount)
          ? loadable.serialize({
            id: event.id,
            user: event.user,
            kind: event.kind,
            amount: event.amount,
            at_micros: BigInt(event.at.getTime()) * 1000n
          }, destination)
          : new RowSerializer.RowSerializationError({
            path: "amount",
            reason: `${event.amount} has more than 9 decimals: it does not fit NUMERIC`
          })
    })
  })

/** What the checkpoints saved so far hold: the files their loads read and those files' rows. */
interface Saved {
  readonly checkpoints: number
  readonly files: number
  readonly rows: number
}

const rowCountOf = (commit: unknown): number =>
  Predicate.isObject(commit) && "rowCount" in commit && Predicate.isNumber(commit.rowCount) ? commit.rowCount : 0

/** A memory store that also counts what each saved checkpoint holds (its committables: one per staged file). */
const observedStore = (saved: Ref.Ref<Saved>): Layer.Layer<CheckpointStore> =>
  Layer.effect(
    CheckpointStore,
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      return CheckpointStore.of({
        load: store.load,
        claim: store.claim,
        save: (writerId, record, expectedPreviousId) =>
          store.save(writerId, record, expectedPreviousId).pipe(
            Effect.andThen(Ref.update(saved, (s) => ({
              checkpoints: s.checkpoints + 1,
              files: s.files + record.commits.length,
              rows: s.rows + record.commits.reduce((n: number, c) => n + rowCountOf(c), 0)
            })))
          )
      })
    })
  ).pipe(Layer.provide(CheckpointStore.memory))

export interface FileLoadsOptions {
  readonly table: TableDestination.TableDestination
  readonly serializer: RowSerializer.RowSerializer<Event>
  /** The demo's dead-letter handler (its sink never fails; the handler's own errors stay typed). */
  readonly failureHandler: FailureHandler<FailedElement, DeadLetterStalled | SinkConfigError>
  readonly gcs: GcsClient.GcsClientService
  readonly bucket: string
  readonly events: Stream.Stream<Array<Event>>
  readonly chunkSize: number
  /** Rows the sink routed to the dead-letter sink so far. */
  readonly routed: Effect.Effect<number>
}

/**
 * Creates the staging bucket when missing, then returns the BigQuery side of the demo: the write,
 * its summary for the display (rows loaded so far; the sink's own summary once it completed), the
 * rows in flight (staged, not yet loaded) and a line on the checkpoints.
 */
export const make = Effect.fnUntraced(function*(options: FileLoadsOptions) {
  const { bucket, gcs } = options
  const [exists] = yield* Effect.tryPromise(() => gcs.storage.bucket(bucket).exists())
  if (!exists) yield* Effect.tryPromise(() => gcs.storage.createBucket(bucket))

  const saved = yield* Ref.make<Saved>({ checkpoints: 0, files: 0, rows: 0 })
  const resume = yield* Checkpoint.resume({ writerId: "demo-events-file-loads", positionSchema: Schema.Number }).pipe(
    Effect.provide(observedStore(saved))
  )
  const handed = yield* Ref.make(0)
  // With `every` counted in records the sink checkpoints between two chunks (drain, close the files,
  // save, load) before it pulls the next one: when a chunk is pulled, every saved checkpoint is loaded.
  const loaded = yield* Ref.make(0)
  const result = yield* Ref.make(Option.none<WriteSummary>())

  const write = options.events.pipe(
    Stream.tap((batch) =>
      Effect.andThen(
        Ref.update(handed, (n) => n + batch.length),
        Effect.flatMap(Ref.get(saved), (s) => Ref.set(loaded, s.rows))
      )
    ),
    Stream.flattenIterable,
    Stream.rechunk(options.chunkSize),
    Stream.run(BigQuerySink.make({
      table: options.table,
      serializer: options.serializer,
      writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${bucket}/events` }),
      failureHandler: options.failureHandler,
      checkpoint: { resume, every: 10 * options.chunkSize, position: (event: Event) => Number(event.id) + 1 }
    })),
    Effect.tap((summary) => Ref.set(result, Option.some(summary))),
    Effect.provideService(GcsClient.GcsClient, gcs)
  )

  const summary: Effect.Effect<WriteSummary> = Effect.gen(function*() {
    const done = yield* Ref.get(result)
    if (Option.isSome(done)) return done.value
    const routed = yield* options.routed
    return { ...WriteSummary.empty, recordsWritten: yield* Ref.get(loaded), recordsFailed: routed }
  })
  const inFlight = Effect.gen(function*() {
    if (Option.isSome(yield* Ref.get(result))) return 0
    return (yield* Ref.get(handed)) - (yield* options.routed) - (yield* Ref.get(loaded))
  })
  const detail = Effect.map(
    Ref.get(saved),
    (s) => `${s.checkpoints} checkpoints saved, ${s.files} staged files in them`
  )
  return { write, summary, inFlight, detail }
})

/** The demo's table for file loads: its own, as the emulator's schema differs from `events`. */
export const table = (projectId: string, datasetId: string) =>
  TableDestination.make({ projectId, datasetId, tableId: "events_file_loads" })
