/**
 * The file-loads writer and sink (reference 2.8) on the shared checkpoint protocol
 * (`internal/checkpoint/protocol.ts`):
 *
 * - `write`: per record resolve → serialize → Avro → the destination's open staging file (row
 *   failures routed to the handler; a staging I/O failure fails the write);
 * - checkpoint: drain (the handler's flush) → prepare = close every open file, one committable per
 *   file → save the record (compare-and-set) → commit = plan and run the deterministic load jobs;
 * - restore: the stored committables are committed again: finished jobs are re-attached, never re-run.
 *
 * @internal
 */
import type { Storage } from "@google-cloud/storage"
import type avro from "avsc"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import { BigQueryClient, type BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, FileLoadFailed } from "../../../BigQuery/BigQueryError.ts"
import { type BigQueryFailure, failedRow, unroutableRecord } from "../../../BigQuery/BigQueryFailure.ts"
import * as RowSerializer from "../../../BigQuery/RowSerializer.ts"
import * as TableDestination from "../../../BigQuery/TableDestination.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { CheckpointError, Resume } from "../../../Sink/Checkpoint.ts"
import { GcsClient } from "../../../Sink/GcsClient.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { Writer } from "../../../Sink/Writer.ts"
import type { WriteSummary } from "../../../Sink/WriteSummary.ts"
import * as checkpoint from "../../checkpoint/protocol.ts"
import * as checkpointSink from "../../checkpoint/sink.ts"
import * as failureRouting from "../../core/failureRouting.ts"
import * as summaryCounters from "../../core/summaryCounters.ts"
import { createResource } from "../atLeastOnce/destination.ts"
import type { Settings } from "../options.ts"
import * as Avro from "./avro.ts"
import type { FileLoadsSettings } from "./options.ts"
import type { Committable } from "./plan.ts"
import * as Runner from "./runner.ts"
import * as Staging from "./staging.ts"

/** One committable in the checkpoint record. @internal */
export const CommittableSchema = Schema.Struct({
  writerId: Schema.String,
  destination: Schema.String,
  uri: Schema.String,
  byteCount: Schema.Number,
  rowCount: Schema.Number,
  format: Schema.Literals(["AVRO", "PARQUET"])
})

interface DestinationState {
  readonly schema: TableSchema.TableSchema
  readonly type: avro.Type
  readonly converter: Avro.RowConverter
}

const schemaError = (destination: string, e: Avro.AvroError) =>
  new BigQueryError({
    reason: new FileLoadFailed({ step: "schema", destination, detail: `${e.path}: ${e.reason}`, cause: e })
  })

/** A destination's schema and Avro conversion, made at its first record and kept in `destinations`. */
const destinationState =
  <A, E, R>(settings: Settings<A, E, R>, destinations: Map<string, DestinationState>) =>
  (destination: TableDestination.TableDestination): Effect.Effect<DestinationState, BigQueryError> =>
    Effect.suspend(() => {
      const key = destination.toString()
      const known = destinations.get(key)
      if (known !== undefined) return Effect.succeed(known)
      const schema = settings.serializer.tableSchema(destination)
      const avroSchema = Avro.avroSchema(schema)
      if (avroSchema instanceof Avro.AvroError) return Effect.fail(schemaError(key, avroSchema))
      const state: DestinationState = {
        schema,
        type: Avro.avroType(avroSchema),
        converter: Avro.converter(schema, RowSerializer.descriptorOf(settings.serializer, destination))
      }
      destinations.set(key, state)
      return Effect.succeed(state)
    })

/** What the load runner needs: the clients, the settings, and each destination's captured schema. */
const runnerContext = <A, E, R>(
  settings: Settings<A, E, R>,
  files: FileLoadsSettings,
  client: BigQueryClientService,
  storage: Storage,
  destinations: ReadonlyMap<string, DestinationState>
): Runner.RunnerContext => ({
  rest: client.rest,
  storage,
  location: client.location,
  settings: files,
  createDisposition: settings.createDisposition,
  schemaUpdate: settings.schemaUpdate,
  schemaOf: (destination) =>
    destinations.get(destination.toString())?.schema ?? settings.serializer.tableSchema(destination),
  createResource: (destination, schema) => createResource(settings, destination, schema)
})

/**
 * Stages one record: resolved, serialized, converted to Avro and appended to its destination's open
 * file; an unroutable record, a serializer failure or a value Avro cannot hold is routed.
 */
const stageRecord = <A, E, R>(
  settings: Settings<A, E, R>,
  router: failureRouting.FailureRouter<BigQueryFailure, E, R>,
  staging: Staging.Staging,
  counters: summaryCounters.SummaryCounters,
  stateOf: (destination: TableDestination.TableDestination) => Effect.Effect<DestinationState, BigQueryError>
) =>
(record: A) =>
  Effect.gen(function*() {
    const resolution = settings.resolve(record)
    if (TableDestination.isUnroutable(resolution)) {
      return yield* router.route(unroutableRecord({ message: resolution.reason, payload: resolution.payload }))
    }
    const key = resolution.toString()
    const state = yield* stateOf(resolution)
    const row = settings.serializer.serialize(record, resolution)
    if (row === null) return counters.add(key, "recordsSkipped", 1)
    if (row instanceof RowSerializer.RowSerializationError) {
      return yield* router.route(failedRow({ destination: key, message: row.message, cause: row }))
    }
    const converted = state.converter.convert(row)
    if (converted instanceof Avro.AvroError) {
      const message = converted.path === "" ? converted.reason : `${converted.path}: ${converted.reason}`
      return yield* router.route(failedRow({ destination: key, message, payload: row, cause: converted }))
    }
    yield* staging.append(resolution, state.type, converted, row.length)
    counters.add(key, "recordsWritten", 1)
    counters.add(key, "bytesWritten", row.length)
  })

/**
 * What both forms share: the staging writer (`write` stages, `flush` drains the handler) and the
 * participant that closes the open files (`prepare`) and loads them (`commit`).
 */
const build = <A, E, R>(
  settings: Settings<A, E, R>,
  files: FileLoadsSettings,
  writerId: string
): Effect.Effect<
  {
    readonly base: Writer<A, BigQueryError | E>
    readonly participant: checkpoint.Participant<Committable, BigQueryError | E>
  },
  E,
  BigQueryClient | GcsClient | R | Scope.Scope
> =>
  Effect.gen(function*() {
    const client = yield* BigQueryClient
    const gcs = yield* GcsClient
    const context = yield* Effect.context<R>()
    const counters = summaryCounters.make()
    const router = yield* failureRouting.make<BigQueryFailure, E, R>(settings.failureHandler, counters)
    const staging = yield* Staging.make({
      storage: gcs.storage,
      stagingPath: files.stagingPath,
      writerId,
      maxStagingFileBytes: files.maxStagingFileBytes,
      uploadTimeout: files.adminTimeout
    })
    // the schema of a destination is captured at its first record, for the writer's lifetime
    const destinations = new Map<string, DestinationState>()
    const stateOf = destinationState(settings, destinations)
    const writeOne = stageRecord(settings, router, staging, counters, stateOf)

    const base: Writer<A, BigQueryError | E> = {
      write: (records) => Effect.provideContext(Effect.forEach(records, writeOne, { discard: true }), context),
      // staged files are left alone: they become visible at the next checkpoint
      flush: Effect.provideContext(router.flush, context),
      checkpoint: () => Effect.void,
      summary: Effect.sync(() => counters.snapshot())
    }

    const ctx = runnerContext(settings, files, client, gcs.storage, destinations)

    const participant: checkpoint.Participant<Committable, BigQueryError | E> = {
      commitSchema: CommittableSchema,
      prepare: staging.closeAll,
      commit: (commits) => Effect.asVoid(Runner.commit(ctx, commits)),
      restore: () => Effect.void
    }
    return { base, participant }
  })

/** The file-loads writer of `settings`, restored from `resume`. @internal */
export const make = <A, P, E, R>(
  settings: Settings<A, E, R>,
  files: FileLoadsSettings,
  resume: Resume<P>
): Effect.Effect<
  Writer<A, BigQueryError | E | CheckpointError, P>,
  BigQueryError | E | CheckpointError,
  BigQueryClient | GcsClient | R | Scope.Scope
> =>
  Effect.gen(function*() {
    const { base, participant } = yield* build(settings, files, resume.writerId)
    return yield* checkpoint.make({ name: "BigQuerySink.fileLoads", writer: base, resume, participant })
  })

/**
 * The writer id of a run without a checkpoint: `run-` and random base-36 digits, so the staged
 * object names and job ids of two runs never meet.
 *
 * @internal
 */
export const runWriterId: Effect.Effect<string> = Effect.map(
  Effect.all([Random.nextIntBetween(0, 0x7fffffff), Random.nextIntBetween(0, 0x7fffffff)]),
  ([a, b]) => `run-${a.toString(36).padStart(6, "0")}${b.toString(36).padStart(6, "0")}`
)

/**
 * The file-loads sink of `BigQuerySink.make` (no checkpoint): every chunk is staged; at the end of
 * input the open files are closed and loaded, under a fresh {@link runWriterId}. A run that fails or
 * is interrupted loads nothing and leaves its staged files in place.
 *
 * @internal
 */
export const plainSink = <A, E, R>(
  settings: Settings<A, E, R>,
  files: FileLoadsSettings
): Sink.Sink<WriteSummary, A, never, BigQueryError | E, BigQueryClient | GcsClient | R> =>
  Sink.make<A>()((input) =>
    Effect.gen(function*() {
      const writerId = yield* runWriterId
      const { base, participant } = yield* build(settings, files, writerId)
      yield* input.pipe(Stream.runForEachArray((chunk) => base.write(chunk)))
      yield* base.flush
      yield* participant.commit(yield* participant.prepare)
      return yield* base.summary
    }).pipe(Effect.withSpan("BigQuerySink.make.fileLoads"))
  )

/** The file-loads sink: checkpoints every `every` and at the end of input, each loading its files. @internal */
export const sink = <A, P, E, R>(
  settings: Settings<A, E, R>,
  files: FileLoadsSettings,
  options: unknown
): Sink.Sink<
  WriteSummary,
  A,
  never,
  BigQueryError | E | CheckpointError | SinkConfigError,
  BigQueryClient | GcsClient | R
> =>
  checkpointSink.make(Effect.gen(function*() {
    const decoded = yield* checkpointSink.decodeSettings<A, P>(options)
    const w = yield* make<A, P, E, R>(settings, files, decoded.resume)
    return { writer: w, every: decoded.every, position: decoded.position }
  }))
