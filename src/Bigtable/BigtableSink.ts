/**
 * The Bigtable sink: bulk MutateRows with per-table batching, writer-global backpressure, per-entry
 * retries, an isolation pass for rejected batches, failure routing and table creation; or, with
 * `WriteMethod.exactlyOnce(...)`, marker-guarded CheckAndMutateRow commits at checkpoints. `make`
 * for `Stream.run`, `writer` for explicit control.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Sink from "effect/Sink"
import * as internalMethod from "../internal/bigtable/method.ts"
import type { CheckpointError, CheckpointOptions } from "../Sink/Checkpoint.ts"
import type { FailureHandler, RecordFailed } from "../Sink/FailureHandler.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, SinkOptions, WithFailureHandler, WriterForm } from "../Sink/SinkOptions.ts"
import type { Writer } from "../Sink/Writer.ts"
import type { WriteSummary } from "../Sink/WriteSummary.ts"
import type { BigtableClient } from "./BigtableClient.ts"
import type { BigtableError } from "./BigtableError.ts"
import type { FailedMutation } from "./BigtableFailure.ts"
import type { RowMutationEntry } from "./RowMutationEntry.ts"
import type { TableCreateOptions } from "./TableCreateOptions.ts"
import type { DestinationResolver, TableDestination } from "./TableDestination.ts"
import type { AtLeastOnce, ExactlyOnce, WriteMethod } from "./WriteMethod.ts"

/**
 * Turns a record into the mutations of one row, or `null` to skip it (written nowhere, counted in
 * `recordsSkipped`, never a failure). It may return an `Effect`. A serializer that throws or fails
 * routes the record to the failure handler.
 *
 * @category models
 * @since 0.1.0
 */
export type Serializer<A> = (record: A) => RowMutationEntry | null | Effect.Effect<RowMutationEntry | null, unknown>

/**
 * What both Bigtable write methods share: the shared `SinkOptions` (destination, failure handler,
 * write method) in Bigtable's types, plus the serializer and the app profile. Each method's options
 * ({@link AtLeastOnceSinkOptions}, {@link ExactlyOnceSinkOptions}) add its `writeMethod` and, for
 * exactly-once, its `checkpoint`.
 *
 * - `table` or `destinationResolver` (exactly one): where each record goes. The resolver runs before
 *   the serializer and may declare a record unroutable (routed to the handler).
 * - `serializer` (required): see {@link Serializer}.
 * - `appProfileId`: the application profile of every request; default the instance's default profile.
 * - `writeMethod`: default `WriteMethod.atLeastOnce()`, or `WriteMethod.exactlyOnce({ markerFamily })`;
 *   its options hold the tuning (batching, in-flight bounds, `retry`, `recovery`, `responseTimeout`,
 *   `adminTimeout`, `flushInterval`, ...).
 * - `checkpoint` (`Checkpoint.CheckpointOptions`): required by exactly-once, refused by
 *   at-least-once (a `SinkConfigError` naming `checkpoint`).
 * - `createDisposition`: default `"CREATE_NEVER"` (BigQuery's is `"CREATE_IF_NEEDED"`: see
 *   `SinkOptions`); `"CREATE_IF_NEEDED"` requires `tableCreateOptions`, which `"CREATE_NEVER"` rejects.
 * - `failureHandler`: default `FailureHandler.failJob`. It receives serializer failures,
 *   entries over the client limits, unroutable records and mutations Bigtable rejects as malformed.
 *   Its error type `E` is the write's: `RecordFailed` for the default, the handler's otherwise (a
 *   handler that drops, such as `FailureHandler.logAndDrop`, adds none).
 *
 * Every option is decoded when the sink is built (`SinkConfigError` naming the option).
 *
 * @category models
 * @since 0.1.0
 */
export interface BigtableSinkOptions<A, E = RecordFailed, R = never> extends
  SinkOptions<
    FailedMutation,
    E,
    R,
    TableDestination,
    DestinationResolver<A>,
    TableCreateOptions,
    WriteMethod
  >
{
  readonly serializer: Serializer<A>
  readonly appProfileId?: string | undefined
}

/**
 * What `failureHandler` may be: a handler of Bigtable's failures, with any error and services.
 *
 * @category models
 * @since 0.1.0
 */
export type Handler = FailureHandler<FailedMutation, unknown, unknown>

/**
 * What a Bigtable write can fail with: a terminal `BigtableError`, a `SinkConfigError` for an
 * invalid option (or an invalid destination from a resolver), or the failure handler's error `E`
 * (`RecordFailed` for the default `failJob`).
 *
 * @category errors
 * @since 0.1.0
 */
export type BigtableSinkError<E = RecordFailed> = BigtableError | SinkConfigError | E

/**
 * The options of at-least-once writes (the default method): {@link BigtableSinkOptions} with
 * `WriteMethod.atLeastOnce(...)` or no `writeMethod`, and no `checkpoint`.
 *
 * @category models
 * @since 0.1.0
 */
export interface AtLeastOnceSinkOptions<A, E = RecordFailed, R = never>
  extends Omit<BigtableSinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod?: AtLeastOnce | undefined
  readonly checkpoint?: undefined
}

/**
 * The options of exactly-once writes: {@link BigtableSinkOptions} with
 * `WriteMethod.exactlyOnce({ markerFamily })` and `checkpoint`. With `createDisposition:
 * "CREATE_IF_NEEDED"` and `tableCreateOptions`, the sink creates each table before its first commit
 * with the declared families (the aggregate ones an `AddToCell` needs) and the marker family (raw,
 * without a GC rule), or adds the ones an existing table lacks; under `CREATE_NEVER` (the default)
 * the operator provisions them.
 *
 * **Details**
 *
 * `checkpoint.position(a)` is where the source resumes once `a` and everything before it are
 * written; it is also the record's position from which its marker identity is derived, so it must
 * be stable and unique per record: an offset, not an arrival time (a record whose position repeats
 * another's would be taken for it and skipped).
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnceSinkOptions<A, P, E = RecordFailed, R = never>
  extends Omit<BigtableSinkOptions<A, E, R>, "writeMethod">
{
  readonly writeMethod: ExactlyOnce
  readonly checkpoint: CheckpointOptions<A, P>
}

/**
 * A sink that writes every record to Bigtable by its `writeMethod` and completes with a
 * `WriteSummary`.
 *
 * **Details**
 *
 * - **At least once** (`WriteMethod.atLeastOnce(...)`, the default): one batch per table is filled
 *   and sent as a MutateRows request; many requests are in flight at once, within the
 *   writer-global `maxInFlightEntries` and `maxInFlightBytes`, and the stream waits (backpressure)
 *   when they are reached. At the end of the input everything is flushed. A retried or replayed
 *   entry is applied again, so prefer explicit cell timestamps. When calls go a minute without an
 *   answer, a warning naming the tables is logged (once a minute).
 * - **Exactly once** (`WriteMethod.exactlyOnce({ markerFamily })`; needs
 *   `checkpoint`): records are staged, saved with each checkpoint, then committed as
 *   CheckAndMutateRow requests guarded by marker cells, so `AddToCell` counters and other
 *   non-idempotent mutations survive crashes, lost responses and source replays. On start it
 *   restores `checkpoint.resume`'s record (the stored envelopes are committed again; markers absorb
 *   those already applied); start the source at `resume.position`. Every `checkpoint.every`
 *   (records or time; without it, when the staging bounds fill) and at the end of input it drains,
 *   saves the staged envelopes with the position (compare-and-set), then commits them. Before the
 *   first request to a table its preconditions are checked: app profile (where the service reports
 *   it), marker family (exists, no GC rule, raw), families the mutations name. A failed commit
 *   fails the write with `BigtableError` `CommitFailed`: restore and run again.
 *
 * The error channel holds the handler's error: `RecordFailed` without a `failureHandler` (the
 * default `failJob`), exactly the handler's `E` with one (`never` for `FailureHandler.logAndDrop`;
 * both for a handler that may be `undefined`), and `Checkpoint.CheckpointError` for exactly-once.
 *
 * **Example** (Writing events)
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { BigtableClient, BigtableSink, Mutation, RowMutationEntry, TableDestination } from "effect-gcp-sinks/Bigtable"
 *
 * const program = Effect.gen(function*() {
 *   const table = yield* TableDestination.make({ projectId: "p", instanceId: "i", tableId: "events" })
 *   const sink = BigtableSink.make({
 *     table,
 *     serializer: (e: { id: string; body: string }) =>
 *       RowMutationEntry.make(e.id, Mutation.setCell({ family: "cf", qualifier: "body", value: e.body }))
 *   })
 *   return yield* Stream.make({ id: "a", body: "x" }).pipe(Stream.run(sink))
 * }).pipe(Effect.provide(BigtableClient.layer({ projectId: "p", emulator: { grpc: "127.0.0.1:8086" } })))
 * ```
 *
 * **Example** (Exactly-once counters)
 * ```ts
 * import { Effect, Option, Schema, Stream } from "effect"
 * import { BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } from "effect-gcp-sinks/Bigtable"
 * import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"
 *
 * declare const clicksFrom: (offset: number) => Stream.Stream<{ readonly offset: number; readonly page: string }>
 * const program = Effect.gen(function*() {
 *   const table = yield* TableDestination.make({ projectId: "p", instanceId: "i", tableId: "clicks" })
 *   const resume = yield* Checkpoint.resume({ writerId: "clicks-0", positionSchema: Schema.Number })
 *   return yield* clicksFrom(Option.getOrElse(resume.position, () => 0)).pipe(
 *     Stream.run(BigtableSink.make({
 *       table,
 *       writeMethod: WriteMethod.exactlyOnce({ markerFamily: "eo" }),
 *       checkpoint: { resume, every: "1 second", position: (c) => c.offset + 1 },
 *       serializer: (c) =>
 *         RowMutationEntry.make(c.page, Mutation.addToCell({ family: "n", qualifier: "clicks", timestampMicros: 0, input: 1n }))
 *     }))
 *   )
 * }).pipe(Effect.provide(CheckpointStore.file("./state")))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export function make<A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
): Sink.Sink<WriteSummary, A, never, BigtableSinkError<HandlerError<H>>, BigtableClient | HandlerContext<H>>
export function make<A, P, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  BigtableSinkError<HandlerError<H>> | CheckpointError,
  BigtableClient | HandlerContext<H>
>
export function make<A, P, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<AtLeastOnceSinkOptions<A>, H> | WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  BigtableSinkError<HandlerError<H>> | CheckpointError,
  BigtableClient | HandlerContext<H>
> {
  return internalMethod.sink<A, P, H>(options)
}

/**
 * A scoped writer by the options' `writeMethod`, for callers that drive writes, flushes and
 * checkpoints themselves.
 *
 * **Details**
 *
 * `write` admits records and waits when the in-flight bounds are reached; `flush` returns once
 * every earlier record is applied or routed (staged, for exactly-once), then flushes the failure
 * handler; `summary` reads the counters at once (it never waits behind a `write`). Closing the
 * scope after success flushes; after failure or interruption it releases the writer without
 * flushing. At least once, `checkpoint` is a plain `flush`. Exactly once (`checkpoint: { resume,
 * position }`), building it restores from `resume`, and `checkpoint(position)` drains, saves and
 * commits (see {@link make}).
 *
 * Building it fails with a `SinkConfigError` for invalid options, with a `BigtableError` whose
 * reason is `ContactFailed` when the first contact with the service fails (see the client's
 * `firstContactTimeout`), or with the handler's error when its `open` fails; its operations fail
 * with a {@link BigtableSinkError} (and a `Checkpoint.CheckpointError` for exactly-once).
 *
 * **Example** (Explicit barriers)
 * ```ts
 * import { Effect } from "effect"
 * import { BigtableSink, Mutation, RowMutationEntry, TableDestination } from "effect-gcp-sinks/Bigtable"
 *
 * const program = Effect.gen(function*() {
 *   const table = yield* TableDestination.make({ projectId: "p", instanceId: "i", tableId: "t" })
 *   const writer = yield* BigtableSink.writer({
 *     table,
 *     serializer: (n: number) => RowMutationEntry.make(`row${n}`, Mutation.setCell({ family: "cf", qualifier: "n", value: BigInt(n) }))
 *   })
 *   yield* writer.write([1, 2, 3])
 *   yield* writer.flush
 *   return yield* writer.summary
 * }).pipe(Effect.scoped)
 * ```
 *
 * **Example** (Explicit checkpoints, exactly once)
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } from "effect-gcp-sinks/Bigtable"
 * import { Checkpoint } from "effect-gcp-sinks/Sink"
 *
 * const program = Effect.gen(function*() {
 *   const table = yield* TableDestination.make({ projectId: "p", instanceId: "i", tableId: "t" })
 *   const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Number })
 *   const writer = yield* BigtableSink.writer({
 *     table,
 *     writeMethod: WriteMethod.exactlyOnce({ markerFamily: "eo" }),
 *     checkpoint: { resume, position: (n: number) => n },
 *     serializer: (n: number) =>
 *       RowMutationEntry.make("total", Mutation.addToCell({ family: "n", qualifier: "sum", timestampMicros: 0, input: BigInt(n) }))
 *   })
 *   yield* writer.write([1, 2, 3])
 *   yield* writer.checkpoint(4)
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export function writer<A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
): Effect.Effect<
  Writer<A, BigtableSinkError<HandlerError<H>>>,
  BigtableSinkError<HandlerError<H>>,
  BigtableClient | Scope.Scope | HandlerContext<H>
>
export function writer<A, P, H extends Handler | undefined = undefined>(
  options: WriterForm<WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>>
): Effect.Effect<
  Writer<A, BigtableSinkError<HandlerError<H>> | CheckpointError, P>,
  BigtableSinkError<HandlerError<H>> | CheckpointError,
  BigtableClient | Scope.Scope | HandlerContext<H>
>
export function writer<A, P, H extends Handler | undefined = undefined>(
  options:
    | WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
    | WriterForm<WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>>
): Effect.Effect<
  Writer<A, BigtableSinkError<HandlerError<H>> | CheckpointError, P> | Writer<A, BigtableSinkError<HandlerError<H>>>,
  BigtableSinkError<HandlerError<H>> | CheckpointError,
  BigtableClient | Scope.Scope | HandlerContext<H>
> {
  // the language service checks this body against the first overload, not this signature
  // @effect-diagnostics-next-line missingEffectContext:off missingEffectError:off
  return internalMethod.writer<A, P, H>(options)
}
