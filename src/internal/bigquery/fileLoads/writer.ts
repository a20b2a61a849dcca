/**
 * The file-loads writer and sink (reference 2.8): the writer core's admission seam
 * (`core/writer.ts` `makeStaging`) under the shared checkpoint protocol
 * (`internal/checkpoint/protocol.ts`), whose commit runs the load jobs:
 *
 * - `write` (caller fiber): per record resolve → serialize → Avro (row failures routed to the
 *   handler through the core, the write returning once the handler has them), cut into slices that
 *   take the core's in-flight permit: {@link maxInFlightBytesOf} bytes of rows not yet durable;
 * - admission (owner fiber): each row appended to its destination's open staging file; its permit
 *   comes back once its file is closed and uploaded (rolled at `maxStagingFileBytes`, or cut). A
 *   write waiting for permits, and every barrier (`flush`, a checkpoint's drain), cut: every open
 *   file is closed. A staging I/O failure fails the writer (the core's latch);
 * - checkpoint: drain (open files closed, the handler's flush) → prepare = the committables of the
 *   files closed since the last one → save the record (compare-and-set) → commit = plan and run the
 *   deterministic load jobs; a save refused with `CheckpointConflict` (this writer was fenced)
 *   deletes those files instead, unless the stored record names them (`Runner.discard`);
 * - restore: the stored committables are committed again: finished jobs are re-attached, never re-run.
 *
 * @internal
 */
import type { Storage } from "@google-cloud/storage"
import type avro from "avsc"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Sink from "effect/Sink"
import { BigQueryClient, type BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, FileLoadFailed } from "../../../BigQuery/BigQueryError.ts"
import { type BigQueryFailure, failedRow, unroutableRecord } from "../../../BigQuery/BigQueryFailure.ts"
import * as RowSerializer from "../../../BigQuery/RowSerializer.ts"
import * as TableDestination from "../../../BigQuery/TableDestination.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { CheckpointError, Resume } from "../../../Sink/Checkpoint.ts"
import { GcsClient } from "../../../Sink/GcsClient.ts"
import type { WriteSummary } from "../../../Sink/WriteSummary.ts"
import * as checkpoint from "../../checkpoint/protocol.ts"
import * as checkpointSink from "../../checkpoint/sink.ts"
import type { Accounted, Admission, AdmissionCore, Limits, Method, Slice } from "../../core/backend.ts"
import * as core from "../../core/writer.ts"
import type { Settings } from "../options.ts"
import { createResource } from "../storageWrite/destination.ts"
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

/** One staged row: accounted by the core from admission until its file is uploaded. */
interface Row extends Accounted {
  readonly destination: TableDestination.TableDestination
  readonly type: avro.Type
  readonly record: unknown
  /** Set when it is admitted (`Accounted.generation`). */
  generation: number
}

/**
 * The bound of the writer's backpressure: bytes of admitted rows (as serialized) whose staging file
 * is not yet closed and uploaded, four staging files' worth (`maxStagingFileBytes`, 64 MiB by
 * default), so a destination's file still rolls at its size. A write waits past it, once every open
 * file was cut (closed and uploaded).
 *
 * @internal
 */
export const maxInFlightBytesOf = (files: FileLoadsSettings): number =>
  Math.min(4 * files.maxStagingFileBytes, Number.MAX_SAFE_INTEGER)

/** Records prepared per `prepare` call (a slice is admitted while the next run is prepared). */
const sliceRecords = 1000

/** Rows cut into slices within `limits` (a row over the bytes bound takes the whole bound). */
const slicesOf = (rows: ReadonlyArray<Row>, limits: Limits): Array<Slice<ReadonlyArray<Row>>> => {
  const slices: Array<Slice<ReadonlyArray<Row>>> = []
  let payload: Array<Row> = []
  let bytes = 0
  let permitBytes = 0
  const push = () => {
    if (payload.length > 0) slices.push({ payload, units: payload.length, bytes, permitBytes })
    payload = []
    bytes = 0
    permitBytes = 0
  }
  for (const row of rows) {
    if (permitBytes + row.permitBytes > limits.maxBytes || payload.length >= limits.maxUnits) push()
    payload.push(row)
    bytes += row.bytes
    permitBytes += row.permitBytes
  }
  push()
  return slices
}

/** What user code returned, or what it threw. */
const guarded = <T>(f: () => T): { readonly ok: T } | { readonly thrown: unknown } => {
  try {
    return { ok: f() }
  } catch (thrown) {
    return { thrown }
  }
}

const threw = (what: string, cause: unknown): string =>
  `the ${what} threw: ${cause instanceof Error ? cause.message : String(cause)}`

/**
 * The admission's `prepare` (caller fiber): each record resolved, serialized and converted to Avro;
 * an unroutable record, a serializer failure, a resolver or serializer that throws, or a value Avro
 * cannot hold is routed.
 */
const preparer = <A, E, R>(
  settings: Settings<A, E, R>,
  stateOf: (destination: TableDestination.TableDestination) => Effect.Effect<DestinationState, BigQueryError>
) =>
  Effect.fnUntraced(function*(records: ReadonlyArray<A>, limits: Limits) {
    const rows: Array<Row> = []
    const routed: Array<BigQueryFailure> = []
    const skipped: Array<string> = []
    for (const record of records) {
      // user code that throws routes its record, as on the Storage Write path
      const resolved = guarded(() => settings.resolve(record))
      if ("thrown" in resolved) {
        routed.push(unroutableRecord({ message: threw("destinationResolver", resolved.thrown) }))
        continue
      }
      const resolution = resolved.ok
      if (TableDestination.isUnroutable(resolution)) {
        routed.push(unroutableRecord({ message: resolution.reason, payload: resolution.payload }))
        continue
      }
      const key = resolution.toString()
      const state = yield* stateOf(resolution)
      const serialized = guarded(() => settings.serializer.serialize(record, resolution))
      if ("thrown" in serialized) {
        routed.push(
          failedRow({ destination: key, message: threw("serializer", serialized.thrown), cause: serialized.thrown })
        )
        continue
      }
      const row = serialized.ok
      if (row === null) skipped.push(key)
      else if (row instanceof RowSerializer.RowSerializationError) {
        routed.push(failedRow({ destination: key, message: row.message, cause: row }))
      } else {
        const converted = state.converter.convert(row)
        if (converted instanceof Avro.AvroError) {
          const message = converted.path === "" ? converted.reason : `${converted.path}: ${converted.reason}`
          routed.push(failedRow({ destination: key, message, payload: row, cause: converted }))
        } else {
          const size = row.length
          const permitBytes = Math.min(size, limits.maxBytes)
          rows.push({
            key,
            units: 1,
            bytes: size,
            permitBytes,
            generation: 0,
            destination: resolution,
            type: state.type,
            record: converted
          })
        }
      }
    }
    return { slices: slicesOf(rows, limits), routed, skipped }
  })

/** The rows of each destination's open file, given back to the core once their file is uploaded. */
type OpenRows = Map<string, Array<Row>>

/**
 * The file-loads method's types on the core: records `A` in, encoded rows admitted in slices and
 * staged in files (nothing is sent from the owner: no request, no outcome), routed
 * `BigQueryFailure`s; the handler fails with `E` and its steps need `R`.
 */
interface FileLoadsMethod<A, E, R> extends Method {
  readonly Record: A
  readonly Slice: ReadonlyArray<Row>
  readonly Item: Row
  readonly Request: never
  readonly Outcome: never
  readonly Failure: BigQueryFailure
  readonly Error: BigQueryError | E
  readonly HandlerError: E
  readonly Context: R
}

/** What the staging steps use of the core: the counters, and giving rows back. */
type StagingCore = Pick<AdmissionCore<FileLoadsMethod<unknown, unknown, unknown>>, "counters" | "resolved">

/** The admission's `admit` (owner fiber): each row appended to its destination's open file, counted as written. */
const admitRows = (c: StagingCore, staging: Staging.Staging, open: OpenRows) =>
  Effect.fnUntraced(function*(rows: ReadonlyArray<Row>, _now: number, generation: number) {
    for (const row of rows) {
      row.generation = generation
      const rolled = yield* staging.append(row.destination, row.type, row.record, row.bytes)
      c.counters.add(row.key, "recordsWritten", 1)
      c.counters.add(row.key, "bytesWritten", row.bytes)
      const pending = open.get(row.key)
      if (pending === undefined) open.set(row.key, [row])
      else pending.push(row)
      if (rolled) {
        yield* c.resolved(open.get(row.key) ?? [])
        open.delete(row.key)
      }
    }
  })

/** The admission's `cutAll` (owner fiber): every open file closed and uploaded, its rows given back. */
const cutRows = (
  c: StagingCore,
  staging: Staging.Staging,
  open: OpenRows
): Effect.Effect<void, BigQueryError> =>
  Effect.andThen(
    staging.closeOpen,
    Effect.suspend(() => {
      const rows = [...open.values()].flat()
      open.clear()
      return c.resolved(rows)
    })
  )

/**
 * What both forms share: the staging writer on the core's admission (`write` stages, `flush` cuts
 * and drains) and the participant that hands the closed files over (`prepare`) and loads them (`commit`).
 */
const build = Effect.fnUntraced(
  function*<A, E, R>(settings: Settings<A, E, R>, files: FileLoadsSettings, writerId: string) {
    const client = yield* BigQueryClient
    const gcs = yield* GcsClient
    const staging = yield* Staging.make({
      storage: gcs.storage,
      stagingPath: files.stagingPath,
      writerId,
      maxStagingFileBytes: files.maxStagingFileBytes,
      uploadTimeout: files.adminTimeout
    })
    // the schema of a destination is captured at its first record, for the writer's lifetime
    const destinations = new Map<string, DestinationState>()
    const prepare = preparer(settings, destinationState(settings, destinations))
    const open: OpenRows = new Map()
    const base = yield* core.makeStaging<FileLoadsMethod<A, E, R>>({
      handler: settings.failureHandler,
      limits: { maxUnits: Number.MAX_SAFE_INTEGER, maxBytes: maxInFlightBytesOf(files) },
      metrics: { perDestination: false },
      admission: (c) =>
        Effect.succeed<Admission<FileLoadsMethod<A, E, R>>>({
          name: "BigQuerySink.fileLoads",
          // a record routed as it is prepared fails the write that brought it when the handler fails
          writeAwaitsRouted: true,
          sliceRecords,
          prepare,
          admit: admitRows(c, staging, open),
          cutAll: cutRows(c, staging, open)
        })
    })
    const ctx = runnerContext(settings, files, client, gcs.storage, destinations)
    const participant: checkpoint.Participant<Committable, BigQueryError | E> = {
      commitSchema: CommittableSchema,
      // after the drain every file is closed: the committables of those closed since the last checkpoint
      prepare: staging.closeAll,
      commit: (commits) => Effect.asVoid(Runner.commit(ctx, commits)),
      restore: () => Effect.void,
      // a refused (fenced) checkpoint: its files are named by no record, no writer will load them
      discard: (commits) => Runner.discard(ctx, commits)
    }
    return { base, participant }
  }
)

/** The file-loads writer of `settings`, restored from `resume`. @internal */
export const make = Effect.fnUntraced(
  function*<A, P, E, R>(settings: Settings<A, E, R>, files: FileLoadsSettings, resume: Resume<P>) {
    const { base, participant } = yield* build(settings, files, resume.writerId)
    return yield* checkpoint.make({ name: "BigQuerySink.fileLoads", writer: base, resume, participant })
  }
)

/** The file-loads sink: checkpoints every `every` and at the end of input, each loading its files. @internal */
export const sink = <A, P, E, R>(
  settings: Settings<A, E, R>,
  files: FileLoadsSettings,
  decoded: checkpointSink.Settings<A, P>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  BigQueryError | E | CheckpointError,
  BigQueryClient | GcsClient | R
> =>
  checkpointSink.make(Effect.map(
    make<A, P, E, R>(settings, files, decoded.resume),
    (w) => ({ writer: w, every: decoded.every, position: decoded.position })
  ))
