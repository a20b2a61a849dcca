/**
 * Streaming into BigQuery: `make` for `Stream.run`, `writer` for explicit control; the options'
 * `writeMethod` chooses how (at least once, exactly once, or file loads).
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Sink from "effect/Sink"
import * as internalMethod from "../internal/bigquery/method.ts"
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
import type { AtLeastOnce, ExactlyOnce, FileLoads, WriteMethod } from "./WriteMethod.ts"

/**
 * What every BigQuery write method shares: the shared `SinkOptions` (destination, failure handler)
 * in BigQuery's types, plus the serializer, schema updates and additional fields. Each method's
 * options ({@link AtLeastOnceSinkOptions}, {@link ExactlyOnceSinkOptions},
 * {@link FileLoadsSinkOptions}) add its `writeMethod` and, where it needs one, its `checkpoint`.
 *
 * **Details**
 *
 * - `table` or `destinationResolver` (exactly one): a fixed table, or one per record; a resolver
 *   may return `TableDestination.unroutable(...)`, routed to the handler as `UnroutableRecord`.
 * - `serializer` (required): the table schema per destination and the row bytes; `null` skips.
 * - `writeMethod`: default `WriteMethod.atLeastOnce()`; also `WriteMethod.exactlyOnce(...)` and
 *   `WriteMethod.fileLoads(...)`; its options hold the tuning (in-flight bounds, `retry`,
 *   `recovery`, `responseTimeout`, `adminTimeout`, `flushInterval`, ...).
 * - `checkpoint` (`Checkpoint.CheckpointOptions`): required by exactly-once and file loads, refused
 *   by at-least-once (a `SinkConfigError` naming `checkpoint`).
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
    WriteMethod<A>
  >
{
  readonly serializer: RowSerializer<A>
  readonly schemaUpdate?:
    | { readonly allowNewFields?: boolean | undefined; readonly allowFieldRelaxation?: boolean | undefined }
    | undefined
  readonly additionalFields?: AdditionalFields<A> | undefined
}

/**
 * The options of at-least-once writes (the default method): {@link BigQuerySinkOptions} with
 * `WriteMethod.atLeastOnce(...)` or no `writeMethod`, and no `checkpoint`.
 *
 * @category models
 * @since 0.1.0
 */
export interface AtLeastOnceSinkOptions<A, E = RecordFailed, R = never>
  extends Omit<BigQuerySinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod?: AtLeastOnce<A> | undefined
  readonly checkpoint?: undefined
}

/**
 * The options of exactly-once writes: {@link BigQuerySinkOptions} with
 * `WriteMethod.exactlyOnce(...)` and the `checkpoint` option (`Checkpoint.CheckpointOptions`:
 * where the writer resumes, the source position a record stands for and, for {@link make}, how
 * often it checkpoints).
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnceSinkOptions<A, P, E = RecordFailed, R = never>
  extends Omit<BigQuerySinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod: ExactlyOnce
  readonly checkpoint: Checkpoint.CheckpointOptions<A, P>
}

/**
 * The options of file loads: {@link BigQuerySinkOptions} with `WriteMethod.fileLoads(...)` (it
 * names the staging bucket) and the `checkpoint` option, whose `resume.writerId` is part of every
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
 * The error of an exactly-once or file-loads sink or writer: that of at-least-once, and the
 * checkpoint's (`CheckpointConflict`: another process advanced this writer, which stopped without
 * committing; `CheckpointStoreError`).
 *
 * @category errors
 * @since 0.1.0
 */
export type ExactlyOnceSinkError<E = RecordFailed> = BigQuerySinkError<E> | Checkpoint.CheckpointError

/**
 * A sink writing every record to BigQuery by its `writeMethod`, completing with a `WriteSummary`
 * once every record is acknowledged, committed or routed.
 *
 * **Details**
 *
 * Options are validated when the sink starts, before any I/O (`SinkConfigError` naming the option).
 *
 * - **At least once** (`WriteMethod.atLeastOnce(...)`, the default): rows are appended to each
 *   table's `_default` stream in batches cut by bytes, pipelined up to the in-flight bounds;
 *   transient failures are retried, failed rows routed to the handler, missing tables created,
 *   schemas widened when allowed. A table with no append in flight sends its rows at once; rows are
 *   batched only while an append is out, so a slow stream's rows are sent within about one round
 *   trip. With `flushInterval` a timer barrier flushes the failure handler too. A batch whose
 *   response was lost is appended again.
 * - **Exactly once** (`WriteMethod.exactlyOnce(...)`; needs `checkpoint`):
 *   each destination gets one BUFFERED stream, appended at explicit offsets and invisible until a
 *   checkpoint. Every `checkpoint.every` (records or time) and at the end of input the sink drains,
 *   saves `{ id, position, commits }` to the `CheckpointStore` with compare-and-set, then flushes
 *   each stream (`FlushRows`). On start it restores the record `Checkpoint.resume` read: re-runs its
 *   flushes and adopts each stream through a probe. Rows written after the last checkpoint are never
 *   flushed: the source replays them. If another process saved a checkpoint for the same `writerId`
 *   since, the save fails with `CheckpointConflict` and this sink stops without flushing.
 * - **File loads** (`WriteMethod.fileLoads({ stagingPath })`; needs `checkpoint` and a
 *   `GcsClient`): each record is converted to Avro and streamed into its destination's staging file
 *   in Cloud Storage; every checkpoint closes the open files, saves them in the checkpoint record and
 *   loads them with load jobs whose ids derive from the writer id and the files, so a restart
 *   re-attaches to them instead of loading twice (no streaming charges). Without `checkpoint.every`
 *   it loads once, at the end of input, and any `writeDisposition` is accepted; with it, only
 *   `WRITE_APPEND` (each checkpoint loads). A commit too large for one load job per destination loads
 *   through temp tables and copy jobs.
 *
 * The error channel holds the handler's error: `RecordFailed` without a `failureHandler` (the
 * default `failJob`), exactly the handler's `E` with one (`never` for `FailureHandler.logAndDrop`;
 * both for a handler that may be `undefined`), and `Checkpoint.CheckpointError` for the methods with
 * a checkpoint.
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
 * **Example** (Exactly once from a replayable source)
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
 *     Stream.run(BigQuerySink.make({
 *       table,
 *       serializer,
 *       writeMethod: WriteMethod.exactlyOnce(),
 *       checkpoint: { resume, every: "1 second", position: (row) => row.line + 1 }
 *     }))
 *   )
 * }).pipe(Effect.provide(CheckpointStore.file("./checkpoints")))
 * ```
 *
 * **Example** (A nightly batch by file loads, replacing the table's rows)
 * ```ts
 * import { Effect, Layer, Schema, Stream } from "effect"
 * import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * import { Checkpoint, CheckpointStore, GcsClient } from "effect-gcp-sinks/Sink"
 * declare const todays: Stream.Stream<{ readonly line: number; readonly sku: string; readonly stock: number }>
 * const Stock = Schema.Struct({ line: Schema.Number, sku: Schema.String, stock: Schema.Number })
 * const program = Effect.gen(function*() {
 *   const serializer = yield* RowSerializer.fromSchema(Stock)
 *   const table = yield* TableDestination.make({ projectId: "p", datasetId: "shop", tableId: "stock" })
 *   const resume = yield* Checkpoint.resume({ writerId: "stock-2026-12-04", positionSchema: Schema.Number })
 *   return yield* todays.pipe(Stream.run(BigQuerySink.make({
 *     table,
 *     serializer,
 *     writeMethod: WriteMethod.fileLoads({ stagingPath: "gs://my-staging/stock", writeDisposition: "WRITE_TRUNCATE_DATA" }),
 *     checkpoint: { resume, position: (row) => row.line + 1 } // no `every`: one load at the end of input
 *   })))
 * }).pipe(Effect.provide(Layer.mergeAll(
 *   BigQueryClient.layer({ projectId: "p" }),
 *   GcsClient.layer({ projectId: "p" }),
 *   CheckpointStore.file("./checkpoints")
 * )))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export function make<A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
): Sink.Sink<WriteSummary, A, never, BigQuerySinkError<HandlerError<H>>, BigQueryClient | HandlerContext<H>>
export function make<A, P, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>
): Sink.Sink<WriteSummary, A, never, ExactlyOnceSinkError<HandlerError<H>>, BigQueryClient | HandlerContext<H>>
export function make<A, P, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<FileLoadsSinkOptions<A, P>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  ExactlyOnceSinkError<HandlerError<H>>,
  BigQueryClient | GcsClient | HandlerContext<H>
>
export function make<A, P, H extends Handler | undefined = undefined>(
  options:
    | WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
    | WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>
    | WithFailureHandler<FileLoadsSinkOptions<A, P>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  ExactlyOnceSinkError<HandlerError<H>>,
  BigQueryClient | GcsClient | HandlerContext<H>
> {
  return internalMethod.sink<A, P, H>(options)
}

/**
 * The options of {@link writer} with a method that checkpoints (`WriteMethod.exactlyOnce(...)`,
 * `WriteMethod.fileLoads(...)`): the sink's options with `checkpoint: { resume }` alone. The caller
 * checkpoints when it chooses and names the position then (`writer.checkpoint(position)`), so the
 * sink form's `every` and `position` are not taken (a `SinkConfigError` names either). Options
 * without a `checkpoint` are unchanged.
 *
 * **Example** (The writer form of the exactly-once options)
 * ```ts
 * import type { BigQuerySink } from "effect-gcp-sinks/BigQuery"
 * type Options = BigQuerySink.WriterOptions<BigQuerySink.ExactlyOnceSinkOptions<{ readonly id: number }, number>>
 * // checkpoint: { readonly resume: Checkpoint.Resume<number> }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type WriterOptions<O> = O extends { readonly checkpoint: { readonly resume: Checkpoint.Resume<infer P> } }
  ? Omit<O, "checkpoint"> & { readonly checkpoint: { readonly resume: Checkpoint.Resume<P> } }
  : O

/**
 * A scoped writer by the options' `writeMethod`: `write` admits records (waiting when the in-flight
 * bounds are reached), `flush` returns when every earlier record is acknowledged or routed,
 * `summary` reads the counters at once (it never waits behind a `write`). With an exactly-once
 * method (`WriteMethod.exactlyOnce(...)`, `WriteMethod.fileLoads(...)`) it takes `checkpoint:
 * { resume }` ({@link WriterOptions}), restores from `resume` when built, and `checkpoint(position)`
 * drains, saves the record with `position` and commits (flushes the streams, or loads the staged
 * files); rows written after the last checkpoint are never made visible: checkpoint before closing.
 *
 * **Details**
 *
 * Closing the scope after success flushes when anything was written since the last `flush` (a
 * failure of that closing flush is a defect, since a finalizer cannot fail: call `flush` before
 * closing to get it as a typed error); after a failure it releases without flushing. Building it
 * fails with a `SinkConfigError` for invalid options, with a `BigQueryError` whose reason is
 * `ContactFailed` when the first contact with the service fails (see the client's
 * `firstContactTimeout`), or with the handler's error when its `open` fails; its operations fail
 * with a `BigQueryError`, the handler's error, and for exactly-once methods a
 * `Checkpoint.CheckpointError`.
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
 * **Example** (Exactly once, a checkpoint per batch of the source)
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { BigQuerySink, WriteMethod, type RowSerializer, type TableDestination } from "effect-gcp-sinks/BigQuery"
 * import { Checkpoint } from "effect-gcp-sinks/Sink"
 * declare const serializer: RowSerializer.RowSerializer<{ id: number }>
 * declare const table: TableDestination.TableDestination
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const resume = yield* Checkpoint.resume({ writerId: "w-0", positionSchema: Schema.Number })
 *   const writer = yield* BigQuerySink.writer({
 *     table,
 *     serializer,
 *     writeMethod: WriteMethod.exactlyOnce(),
 *     checkpoint: { resume }
 *   })
 *   yield* writer.write([{ id: 1 }, { id: 2 }])
 *   yield* writer.checkpoint(3)
 * }))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export function writer<A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
): Effect.Effect<
  Writer<A, BigQueryError | HandlerError<H>>,
  SinkConfigError | BigQueryError | HandlerError<H>,
  BigQueryClient | HandlerContext<H> | Scope.Scope
>
export function writer<A, P, H extends Handler | undefined = undefined>(
  options: WriterOptions<WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>>
): Effect.Effect<
  Writer<A, BigQueryError | Checkpoint.CheckpointError | HandlerError<H>, P>,
  ExactlyOnceSinkError<HandlerError<H>>,
  BigQueryClient | HandlerContext<H> | Scope.Scope
>
export function writer<A, P, H extends Handler | undefined = undefined>(
  options: WriterOptions<WithFailureHandler<FileLoadsSinkOptions<A, P>, H>>
): Effect.Effect<
  Writer<A, BigQueryError | Checkpoint.CheckpointError | HandlerError<H>, P>,
  ExactlyOnceSinkError<HandlerError<H>>,
  BigQueryClient | GcsClient | HandlerContext<H> | Scope.Scope
>
export function writer<A, P, H extends Handler | undefined = undefined>(
  options:
    | WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
    | WriterOptions<WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>>
    | WriterOptions<WithFailureHandler<FileLoadsSinkOptions<A, P>, H>>
): Effect.Effect<
  | Writer<A, BigQueryError | Checkpoint.CheckpointError | HandlerError<H>, P>
  | Writer<A, BigQueryError | HandlerError<H>>,
  ExactlyOnceSinkError<HandlerError<H>>,
  BigQueryClient | GcsClient | HandlerContext<H> | Scope.Scope
> {
  // the language service checks this body against the first overload, not this signature
  // @effect-diagnostics-next-line missingEffectContext:off missingEffectError:off
  return internalMethod.writer<A, P, H>(options)
}
