/**
 * Streaming into BigQuery: `make` for `Stream.run`, `writer` for explicit control.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Sink from "effect/Sink"
import * as internalSink from "../internal/bigquery/atLeastOnce/sink.ts"
import * as internalWriter from "../internal/bigquery/atLeastOnce/writer.ts"
import * as internalExactlyOnce from "../internal/bigquery/exactlyOnce/writer.ts"
import * as internalFileLoadsOptions from "../internal/bigquery/fileLoads/options.ts"
import * as internalFileLoads from "../internal/bigquery/fileLoads/writer.ts"
import * as internalOptions from "../internal/bigquery/options.ts"
import * as internalCheckpointSink from "../internal/checkpoint/sink.ts"
import type * as Checkpoint from "../Sink/Checkpoint.ts"
import type { FailureHandler, RecordFailed } from "../Sink/FailureHandler.ts"
import type { GcsClient } from "../Sink/GcsClient.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, SinkOptions, WithFailureHandler } from "../Sink/SinkOptions.ts"
import type { Writer } from "../Sink/Writer.ts"
import type { WriteSummary } from "../Sink/WriteSummary.ts"
import type { AdditionalFields } from "./AdditionalFields.ts"
import type { BigQueryClient } from "./BigQueryClient.ts"
import type { BigQueryError } from "./BigQueryError.ts"
import type { BigQueryFailure } from "./BigQueryFailure.ts"
import type { RowSerializer } from "./RowSerializer.ts"
import type { TableCreateOptions, TableCreateOptionsInput } from "./TableCreateOptions.ts"
import type { DestinationResolver, TableDestination } from "./TableDestination.ts"
import { type AtLeastOnce, type ExactlyOnce, type FileLoads, isFileLoads } from "./WriteMethod.ts"

/**
 * The options of {@link make} and {@link writer}: the shared `SinkOptions` (destination, failure
 * handler, write method) in BigQuery's types, plus the serializer, schema updates and additional
 * fields.
 *
 * **Details**
 *
 * - `table` or `destinationResolver` (exactly one): a fixed table, or one per record; a resolver
 *   may return `TableDestination.unroutable(...)`, routed to the handler as `UnroutableRecord`.
 * - `serializer` (required): the table schema per destination and the row bytes; `null` skips.
 * - `writeMethod`: default `WriteMethod.atLeastOnce()`; its options hold the tuning (in-flight
 *   bounds, `retry`, `recovery`, `responseTimeout`, `adminTimeout`, `flushInterval`, ...).
 * - `createDisposition`: default `"CREATE_IF_NEEDED"` (Bigtable's is `"CREATE_NEVER"`: see
 *   `SinkOptions`): a missing table is created with the
 *   serializer's schema (plus `additionalFields`) and `tableCreateOptions` (fixed and validated
 *   when the sink starts, or a function of the destination whose result is validated, against the
 *   table's schema too, before the table is created: an invalid one is a terminal `BigQueryError`
 *   (`TableAdminFailed`) naming the destination and the option; default a plain table).
 * - `schemaUpdate`: default off; with `allowNewFields` / `allowFieldRelaxation` the sink widens a
 *   table whose appends fail with extra fields (an etag-conditioned patch of the union).
 * - `additionalFields`: physical columns appended to every row (`AdditionalFields.make`), extending
 *   each destination's schema (`AdditionalFields.extendSchema`); with a fixed `table`, a column
 *   colliding with the serializer's is rejected when the sink starts (`SinkConfigError`), with a
 *   resolver when the destination is first prepared (a terminal `BigQueryError`, `SchemaMismatch`,
 *   naming the destination and the field).
 * - `failureHandler`: default `FailureHandler.failJob`: receives `FailedRow` and `UnroutableRecord`.
 *   Its error type `E` is the write's: `RecordFailed` for the default, the handler's otherwise (a
 *   handler that drops, such as `FailureHandler.logAndDrop`, adds none).
 *
 * Every option is decoded when the sink is built (`SinkConfigError` naming the option).
 *
 * @category models
 * @since 0.1.0
 */
export interface BigQuerySinkOptions<A, E = RecordFailed, R = never> extends
  SinkOptions<
    BigQueryFailure,
    E,
    R,
    TableDestination,
    DestinationResolver<A>,
    TableCreateOptionsInput | ((destination: TableDestination) => TableCreateOptions),
    AtLeastOnce<A>
  >
{
  readonly serializer: RowSerializer<A>
  readonly schemaUpdate?:
    | { readonly allowNewFields?: boolean | undefined; readonly allowFieldRelaxation?: boolean | undefined }
    | undefined
  readonly additionalFields?: AdditionalFields<A> | undefined
}

/**
 * What `failureHandler` may be: a handler of BigQuery's failures, with any error and services.
 *
 * @category models
 * @since 0.1.0
 */
export type Handler = FailureHandler<BigQueryFailure, unknown, unknown>

/**
 * The error of a BigQuery sink: a terminal `BigQueryError`, a `SinkConfigError` for invalid
 * options, or the failure handler's error `E` (`RecordFailed` for the default `failJob`).
 *
 * @category errors
 * @since 0.1.0
 */
export type BigQuerySinkError<E = RecordFailed> = BigQueryError | SinkConfigError | E

/**
 * A sink appending every record to BigQuery, completing with a `WriteSummary` once every record
 * is acknowledged or routed.
 *
 * **Details**
 *
 * Options are validated when the sink starts, before any I/O. Rows are appended to each table's
 * `_default` stream in batches cut by bytes, pipelined up to the in-flight bounds; transient
 * failures are retried, failed rows routed to the handler, missing tables created, schemas widened
 * when allowed. A table with no append in flight sends its rows at once; rows are batched only
 * while an append is out, so a slow stream's rows are sent within about one round trip. With
 * `flushInterval` a timer barrier flushes the failure handler too. At least once: a batch whose
 * response was lost is appended again.
 *
 * With `writeMethod: WriteMethod.fileLoads({ stagingPath })` (reference 2.8, batch mode) the sink
 * stages instead: each record is converted to Avro and streamed into its destination's staging file in
 * Cloud Storage (rolled at `maxStagingFileBytes`); at the end of input every file is loaded by load
 * jobs with deterministic ids (no streaming charges; any `writeDisposition`). A run that fails loads
 * nothing and leaves its staged files; the next run stages again under a new run id. This form needs
 * a `GcsClient` too. For loads at checkpoints that survive restarts exactly once, see {@link fileLoads}.
 *
 * The error channel holds the handler's error: `RecordFailed` without a `failureHandler` (the
 * default `failJob`), exactly the handler's `E` with one (`never` for
 * `FailureHandler.logAndDrop`; both for a handler that may be `undefined`). One generic signature
 * gives this: `H` captures the handler's type and the error is `SinkOptions.HandlerError<H>`.
 *
 * **Example** (Streaming orders into a table)
 * ```ts
 * import { Effect, Schema, Stream } from "effect"
 * import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination } from "effect-gcp-sinks/BigQuery"
 * const Order = Schema.Struct({ id: Schema.String, total: Schema.Number })
 * const program = Effect.gen(function*() {
 *   const serializer = yield* RowSerializer.fromSchema(Order)
 *   const table = yield* TableDestination.make({ projectId: "p", datasetId: "shop", tableId: "orders" })
 *   return yield* Stream.make({ id: "a", total: 1 }).pipe(Stream.run(BigQuerySink.make({ table, serializer })))
 * }).pipe(Effect.provide(BigQueryClient.layer({ projectId: "p" })))
 * ```
 *
 * **Example** (A nightly batch by file loads, replacing the table's rows)
 * ```ts
 * import { Effect, Layer, Schema, Stream } from "effect"
 * import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * import { GcsClient } from "effect-gcp-sinks/Sink"
 * declare const todays: Stream.Stream<{ readonly sku: string; readonly stock: number }>
 * const Stock = Schema.Struct({ sku: Schema.String, stock: Schema.Number })
 * const program = Effect.gen(function*() {
 *   const serializer = yield* RowSerializer.fromSchema(Stock)
 *   const table = yield* TableDestination.make({ projectId: "p", datasetId: "shop", tableId: "stock" })
 *   return yield* todays.pipe(Stream.run(BigQuerySink.make({
 *     table,
 *     serializer,
 *     writeMethod: WriteMethod.fileLoads({ stagingPath: "gs://my-staging/stock", writeDisposition: "WRITE_TRUNCATE_DATA" })
 *   })))
 * }).pipe(Effect.provide(Layer.mergeAll(BigQueryClient.layer({ projectId: "p" }), GcsClient.layer({ projectId: "p" }))))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: {
  // the at-least-once overload first: an inline WriteMethod.atLeastOnce infers its element type from it
  <A, H extends Handler | undefined = undefined>(
    options: WithFailureHandler<BigQuerySinkOptions<A>, H>
  ): Sink.Sink<WriteSummary, A, never, BigQuerySinkError<HandlerError<H>>, BigQueryClient | HandlerContext<H>>
  <A, H extends Handler | undefined = undefined>(
    options: WithFailureHandler<MakeFileLoadsOptions<A>, H>
  ): Sink.Sink<
    WriteSummary,
    A,
    never,
    BigQuerySinkError<HandlerError<H>>,
    BigQueryClient | GcsClient | HandlerContext<H>
  >
} = <A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<BigQuerySinkOptions<A> | MakeFileLoadsOptions<A>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  BigQuerySinkError<HandlerError<H>>,
  BigQueryClient | GcsClient | HandlerContext<H>
> =>
  Sink.unwrap(
    isFileLoads(options.writeMethod)
      ? Effect.map(
        internalFileLoadsOptions.decodeSink(options, "plain"),
        ({ files, settings }) => internalFileLoads.plainSink<A, HandlerError<H>, HandlerContext<H>>(settings, files)
      )
      : Effect.map(
        internalOptions.decode(options as WithFailureHandler<BigQuerySinkOptions<A>, H>),
        (settings): Sink.Sink<
          WriteSummary,
          A,
          never,
          BigQuerySinkError<HandlerError<H>>,
          BigQueryClient | HandlerContext<H>
        > => internalSink.make(settings)
      )
  )

/**
 * The options of {@link make} with file loads: those of {@link make} with
 * `WriteMethod.fileLoads(...)` as the write method (no `checkpoint`: see {@link fileLoads}).
 *
 * @category models
 * @since 0.1.0
 */
export interface MakeFileLoadsOptions<A, E = RecordFailed, R = never>
  extends Omit<BigQuerySinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod: FileLoads
}

/**
 * A scoped writer: `write` admits records (waiting when the in-flight bounds are reached),
 * `flush` returns when every earlier record is acknowledged or routed, `summary` reads the
 * counters at once (it never waits behind a `write`). Closing the scope after success flushes when
 * anything was written since the last `flush` (a failure of that closing flush is a defect, since a
 * finalizer cannot fail: call `flush` before closing to get it as a typed error); after a failure
 * it releases without flushing.
 *
 * **Details**
 *
 * Building it fails with a `SinkConfigError` for invalid options, or with the handler's error when
 * its `open` fails; its operations fail with a `BigQueryError` or the handler's error. The
 * handler's error is `RecordFailed` without a `failureHandler`, exactly the handler's `E` with one (`never` for
 * `FailureHandler.logAndDrop`; both for a handler that may be `undefined`). One generic signature
 * gives this: `H` captures the handler's type and the error is `SinkOptions.HandlerError<H>`.
 *
 * **Example** (Explicit barriers)
 * ```ts
 * import { Effect } from "effect"
 * import { BigQuerySink, type RowSerializer, type TableDestination } from "effect-gcp-sinks/BigQuery"
 * declare const serializer: RowSerializer.RowSerializer<{ id: string }>
 * declare const table: TableDestination.TableDestination
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const writer = yield* BigQuerySink.writer({ table, serializer })
 *   yield* writer.write([{ id: "a" }])
 *   yield* writer.flush
 *   return yield* writer.summary
 * }))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const writer = <A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<BigQuerySinkOptions<A>, H>
): Effect.Effect<
  Writer<A, BigQueryError | HandlerError<H>>,
  SinkConfigError | HandlerError<H>,
  BigQueryClient | HandlerContext<H> | Scope.Scope
> => Effect.flatMap(internalOptions.decode(options), internalWriter.make<A, HandlerError<H>, HandlerContext<H>>)

/**
 * The options of {@link exactlyOnce}: those of {@link make} with `WriteMethod.exactlyOnce` (the
 * default) as the write method, and the `checkpoint` option (`Checkpoint.CheckpointOptions`): where
 * the writer resumes (`Checkpoint.resume`), how often it checkpoints, and the source position a
 * record stands for.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnceSinkOptions<A, P, E = RecordFailed, R = never>
  extends Omit<BigQuerySinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod?: ExactlyOnce | undefined
  readonly checkpoint: Checkpoint.CheckpointOptions<A, P>
}

/**
 * The options of {@link exactlyOnceWriter}: those of {@link exactlyOnce}, with only `resume` in
 * `checkpoint` (the caller checkpoints with `writer.checkpoint(position)`).
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnceWriterOptions<A, P, E = RecordFailed, R = never>
  extends Omit<BigQuerySinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod?: ExactlyOnce | undefined
  readonly checkpoint: Checkpoint.WriterCheckpointOptions<P>
}

/**
 * The error of an exactly-once sink or writer: that of {@link make}, and the checkpoint's
 * (`CheckpointConflict`: another process advanced this writer, which stopped without committing;
 * `CheckpointStoreError`).
 *
 * @category errors
 * @since 0.1.0
 */
export type ExactlyOnceSinkError<E = RecordFailed> = BigQuerySinkError<E> | Checkpoint.CheckpointError

/**
 * An exactly-once sink (reference 2.6, DESIGN 6): every record lands once, across crashes and
 * restarts, provided the source restarts at the position `Checkpoint.resume` returned.
 *
 * **Details**
 *
 * Each destination gets one BUFFERED stream, created when it is first written and reused across
 * checkpoints (never finalized); batches are appended at explicit offsets and stay invisible. Every
 * `checkpoint.every` (records or time), and always at the end of input, the sink drains every
 * append, saves `{ id, position, commits }` to the `CheckpointStore` with compare-and-set, then
 * flushes each stream up to its last row (`FlushRows`). On start it restores the record it was
 * given: re-runs its flushes (idempotent) and adopts each stream through a probe append at the
 * stored offset (a stream that cannot be adopted is left as it is and a fresh one is used). Rows
 * written after the last checkpoint are never flushed: after a crash they stay invisible and the
 * source replays them.
 *
 * If another process saved a checkpoint for the same `writerId` since (a zombie and its
 * replacement), the save fails with `CheckpointConflict` and this sink stops without flushing.
 *
 * **Example** (Resuming a replayable source)
 * ```ts
 * import { Effect, Option, Schema, Stream } from "effect"
 * import { BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"
 * declare const linesFrom: (line: number) => Stream.Stream<{ readonly line: number; readonly text: string }>
 * const Row = Schema.Struct({ line: Schema.Number, text: Schema.String })
 * const program = Effect.gen(function*() {
 *   const serializer = yield* RowSerializer.fromSchema(Row)
 *   const table = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "lines" })
 *   const resume = yield* Checkpoint.resume({ writerId: "lines-0", positionSchema: Schema.Number })
 *   return yield* linesFrom(Option.getOrElse(resume.position, () => 0)).pipe(
 *     Stream.run(BigQuerySink.exactlyOnce({
 *       table,
 *       serializer,
 *       writeMethod: WriteMethod.exactlyOnce(),
 *       checkpoint: { resume, every: "1 second", position: (row) => row.line + 1 }
 *     }))
 *   )
 * }).pipe(Effect.provide(CheckpointStore.file("./checkpoints")))
 * ```
 *
 * @see {@link exactlyOnceWriter} for explicit checkpoints
 * @category constructors
 * @since 0.1.0
 */
export const exactlyOnce = <A, P, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  ExactlyOnceSinkError<HandlerError<H>>,
  BigQueryClient | HandlerContext<H>
> =>
  Sink.unwrap(
    Effect.map(
      internalOptions.decode(options, "ExactlyOnce"),
      (settings) => internalExactlyOnce.sink<A, P, HandlerError<H>, HandlerContext<H>>(settings, options.checkpoint)
    )
  )

/**
 * An exactly-once writer: `write` as {@link writer}'s, and `checkpoint(position)`, which drains,
 * saves the record with `position` and flushes the streams (see {@link exactlyOnce}). Rows written
 * after the last checkpoint are never made visible: checkpoint before closing.
 *
 * **Example** (A checkpoint per batch of the source)
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { BigQuerySink, type RowSerializer, type TableDestination } from "effect-gcp-sinks/BigQuery"
 * import { Checkpoint } from "effect-gcp-sinks/Sink"
 * declare const serializer: RowSerializer.RowSerializer<{ id: number }>
 * declare const table: TableDestination.TableDestination
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const resume = yield* Checkpoint.resume({ writerId: "w-0", positionSchema: Schema.Number })
 *   const writer = yield* BigQuerySink.exactlyOnceWriter({ table, serializer, checkpoint: { resume } })
 *   yield* writer.write([{ id: 1 }, { id: 2 }])
 *   yield* writer.checkpoint(3)
 * }))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const exactlyOnceWriter = <A, P, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<ExactlyOnceWriterOptions<A, P>, H>
): Effect.Effect<
  Writer<A, BigQueryError | Checkpoint.CheckpointError | HandlerError<H>, P>,
  SinkConfigError | BigQueryError | Checkpoint.CheckpointError | HandlerError<H>,
  BigQueryClient | HandlerContext<H> | Scope.Scope
> =>
  Effect.gen(function*() {
    const settings = yield* internalOptions.decode(options, "ExactlyOnce")
    const resume = yield* internalCheckpointSink.decodeResume<P>(options.checkpoint)
    return yield* internalExactlyOnce.make<A, P, HandlerError<H>, HandlerContext<H>>(settings, resume)
  })

/**
 * The options of {@link fileLoads}: those of {@link make} with `WriteMethod.fileLoads(...)` (required:
 * it names the staging bucket) and the `checkpoint` option, whose `resume.writerId` is part of every
 * staged object name and load job id.
 *
 * @category models
 * @since 0.1.0
 */
export interface FileLoadsSinkOptions<A, P, E = RecordFailed, R = never>
  extends Omit<BigQuerySinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod: FileLoads
  readonly checkpoint: Checkpoint.CheckpointOptions<A, P>
}

/**
 * A file-loads sink with checkpoints (reference 2.8, streaming mode): records are staged as Avro files
 * in Cloud Storage and loaded by load jobs at every checkpoint and at the end of input, free of
 * streaming charges, exactly once across crashes and restarts provided the source restarts at the
 * position `Checkpoint.resume` returned.
 *
 * **Details**
 *
 * Each record is resolved, serialized, converted to Avro and appended to its destination's open
 * staging file, which streams into a resumable upload (objects named
 * `<prefix>/<writerId>/<project.dataset.table>/<run>-<seq>.avro`, never reused). Every checkpoint
 * (`checkpoint.every` records or time, and the end of input) closes the open files, saves them in the
 * checkpoint record (compare-and-set), then loads each destination's files with load jobs whose ids
 * are derived from the writer id, the destination and the files. On start the stored record's loads
 * run again: each job is looked up first and re-attached (done: not re-run; running: awaited; failed:
 * the next of `-r1`…`-r5`), so a process killed between a save and its loads neither loses nor
 * doubles a row. Files staged after the last checkpoint are never loaded: the source replays them.
 * Staged files are deleted after their load succeeded and kept when it failed.
 *
 * Only `writeDisposition: "WRITE_APPEND"` is accepted here (each checkpoint loads; another disposition
 * would replace the rows of the previous ones): `BigQuerySink.make` takes the others for one load at
 * the end of input. A commit too large for one load job per destination (10,000 files or 11 TiB)
 * loads through temp tables and copy jobs (reference 2.8), all with deterministic ids. Requires
 * `BigQueryClient`, `GcsClient` and the `CheckpointStore` of `Checkpoint.resume`.
 *
 * **Example** (A nightly backfill)
 * ```ts
 * import { Effect, Option, Schema, Stream } from "effect"
 * import { BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"
 * declare const linesFrom: (line: number) => Stream.Stream<{ readonly line: number; readonly text: string }>
 * const Row = Schema.Struct({ line: Schema.Number, text: Schema.String })
 * const program = Effect.gen(function*() {
 *   const serializer = yield* RowSerializer.fromSchema(Row)
 *   const table = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "lines" })
 *   const resume = yield* Checkpoint.resume({ writerId: "backfill-0", positionSchema: Schema.Number })
 *   return yield* linesFrom(Option.getOrElse(resume.position, () => 0)).pipe(
 *     Stream.run(BigQuerySink.fileLoads({
 *       table,
 *       serializer,
 *       writeMethod: WriteMethod.fileLoads({ stagingPath: "gs://my-staging/loads" }),
 *       checkpoint: { resume, every: 1_000_000, position: (row) => row.line + 1 }
 *     }))
 *   )
 * }).pipe(Effect.provide(CheckpointStore.file("./checkpoints")))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fileLoads = <A, P, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<FileLoadsSinkOptions<A, P>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  ExactlyOnceSinkError<HandlerError<H>>,
  BigQueryClient | GcsClient | HandlerContext<H>
> =>
  Sink.unwrap(
    Effect.map(
      internalFileLoadsOptions.decodeSink(options),
      ({ files, settings }) =>
        internalFileLoads.sink<A, P, HandlerError<H>, HandlerContext<H>>(settings, files, options.checkpoint)
    )
  )
