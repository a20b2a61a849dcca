/**
 * The Bigtable sink: bulk MutateRows with per-table batching, writer-global backpressure, per-entry
 * retries, an isolation pass for rejected batches, failure routing and table creation.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Sink from "effect/Sink"
import * as internalSink from "../internal/bigtable/sink.ts"
import * as internalWriter from "../internal/bigtable/writer.ts"
import type { FailureHandler, RecordFailed } from "../Sink/FailureHandler.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, SinkOptions, WithFailureHandler } from "../Sink/SinkOptions.ts"
import type { Writer } from "../Sink/Writer.ts"
import type { WriteSummary } from "../Sink/WriteSummary.ts"
import type { BigtableClient } from "./BigtableClient.ts"
import type { BigtableError } from "./BigtableError.ts"
import type { FailedMutation } from "./BigtableFailure.ts"
import type { RowMutationEntry } from "./RowMutationEntry.ts"
import type { TableCreateOptions } from "./TableCreateOptions.ts"
import type { DestinationResolver, TableDestination } from "./TableDestination.ts"
import type { WriteMethod } from "./WriteMethod.ts"

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
 * The options of {@link make} and {@link writer}: the shared `SinkOptions` (destination, failure
 * handler, write method) in Bigtable's types, plus the serializer and the app profile.
 *
 * - `table` or `destinationResolver` (exactly one): where each record goes. The resolver runs before
 *   the serializer and may declare a record unroutable (routed to the handler).
 * - `serializer` (required): see {@link Serializer}.
 * - `appProfileId`: the application profile of every request; default the instance's default profile.
 * - `writeMethod`: default `WriteMethod.atLeastOnce()`; its options hold the tuning (batching,
 *   in-flight bounds, `retry`, `recovery`, `responseTimeout`, `adminTimeout`, `flushInterval`, ...).
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
 * A sink that writes every record to Bigtable and completes with a `WriteSummary`.
 *
 * **Details**
 *
 * One batch per table is filled and sent as a MutateRows request; many requests are in flight at
 * once, within the writer-global `maxInFlightEntries` and `maxInFlightBytes`, and the stream waits
 * (backpressure) when they are reached. At the end of the input everything is flushed. The error
 * channel holds the handler's error: `RecordFailed` without a `failureHandler` (the default
 * `failJob`), exactly the handler's `E` with one (`never` for
 * `FailureHandler.logAndDrop`; both for a handler that may be `undefined`). One generic signature
 * gives this: `H` captures the handler's type and the error is `SinkOptions.HandlerError<H>`. Delivery is
 * at-least-once: a retried or replayed entry is applied again, so prefer explicit cell timestamps.
 * When calls go a minute without an answer, a warning naming the tables is logged (once a minute).
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
 * @category constructors
 * @since 0.1.0
 */
export const make = <A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<BigtableSinkOptions<A>, H>
): Sink.Sink<WriteSummary, A, never, BigtableSinkError<HandlerError<H>>, BigtableClient | HandlerContext<H>> =>
  internalSink.make(options)

/**
 * A scoped writer for callers that drive writes and flushes themselves.
 *
 * **Details**
 *
 * `write` admits records and waits when the in-flight bounds are reached; `flush` returns once
 * every earlier record is applied or routed, then flushes the failure handler; `summary` reads the
 * counters at once (it never waits behind a `write`). Closing the scope after success flushes;
 * after failure or interruption it releases the writer without flushing. `checkpoint` is a plain `flush` for this at-least-once writer.
 *
 * Building it fails with a `SinkConfigError` for invalid options, or with the handler's error when
 * its `open` fails; its operations fail with a {@link BigtableSinkError}. The handler's error is
 * `RecordFailed` without a `failureHandler`, exactly the handler's `E` with one (`never` for
 * `FailureHandler.logAndDrop`; both for a handler that may be `undefined`). One generic signature
 * gives this: `H` captures the handler's type and the error is `SinkOptions.HandlerError<H>`.
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
 * @category constructors
 * @since 0.1.0
 */
export const writer = <A, H extends Handler | undefined = undefined>(
  options: WithFailureHandler<BigtableSinkOptions<A>, H>
): Effect.Effect<
  Writer<A, BigtableSinkError<HandlerError<H>>>,
  SinkConfigError | HandlerError<H>,
  BigtableClient | Scope.Scope | HandlerContext<H>
> => internalWriter.make(options)
