/**
 * The Bigtable sink: bulk MutateRows with per-table batching, writer-global backpressure, per-entry
 * retries, an isolation pass for rejected batches, failure routing and table creation.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Sink from "effect/Sink"
import * as internalSink from "../internal/bigtable/sink.ts"
import * as internalWriter from "../internal/bigtable/writer.ts"
import type { CreateDisposition } from "../Sink/CreateDisposition.ts"
import type { FailureHandler, RecordFailed } from "../Sink/FailureHandler.ts"
import type { RetryPolicyOptions } from "../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { Writer } from "../Sink/Writer.ts"
import type { WriteSummary } from "../Sink/WriteSummary.ts"
import type { BigtableClient } from "./BigtableClient.ts"
import type { BigtableError } from "./BigtableError.ts"
import type { FailedMutation } from "./BigtableFailure.ts"
import type { RowMutationEntry } from "./RowMutationEntry.ts"
import type { TableCreateOptions } from "./TableCreateOptions.ts"
import type { DestinationResolver, TableDestination } from "./TableDestination.ts"

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
 * Writer tuning (reference 3.4). Every count is in entries (one per record), not mutations.
 *
 * - `batchElementCount`: entries per request; 1..19,999, default 100.
 * - `batchByteSize`: bytes per request; 1..104,857,599 (under 100 MiB), default 20 MiB.
 *   A batch is also sent 1 s after its first entry, on `flush`, and whenever admission must wait.
 *   No request carries more than 100,000 mutations.
 * - `maxInFlightEntries`: entries admitted and not yet applied or routed, over all tables; > 0, default 1000.
 * - `maxInFlightBytes`: the same in bytes; > 0, default 64 MiB. An entry larger than this is admitted
 *   once the writer is otherwise empty.
 * - `maxConsecutiveRejections`: rejected mutations in a row, with none applied between, before the
 *   write fails; > 0 or -1 (unbounded), default 100.
 * - `recoveryInitialBackoff` / `recoveryMaxBackoff` / `recoveryMaxAttempts`: the budget for
 *   creating missing tables and families and re-applying the parked mutations; at least 1 ms /
 *   at least 1 ms and at least the initial backoff / > 0; default 500 ms / 10 s / 10.
 * - `destinationIdleTimeout`: a table idle this long is forgotten at the next flush (and reopened
 *   on demand); > 0, default 1 hour.
 * - `perDestinationMetrics`: add a `destination` attribute to the per-record metrics; default false
 *   (an unbounded resolver would create unbounded series).
 * - `retry`: the per-entry retry of transient statuses (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`,
 *   `RESOURCE_EXHAUSTED`); default 10 ms doubling to 1 minute, 15 attempts, ±25 % jitter.
 *
 * @category models
 * @since 0.1.0
 */
export interface BigtableWriterOptions {
  readonly batchElementCount?: number | undefined
  readonly batchByteSize?: number | undefined
  readonly maxInFlightEntries?: number | undefined
  readonly maxInFlightBytes?: number | undefined
  readonly maxConsecutiveRejections?: number | undefined
  readonly recoveryInitialBackoff?: Duration.Input | undefined
  readonly recoveryMaxBackoff?: Duration.Input | undefined
  readonly recoveryMaxAttempts?: number | undefined
  readonly destinationIdleTimeout?: Duration.Input | undefined
  readonly perDestinationMetrics?: boolean | undefined
  readonly retry?: RetryPolicyOptions | undefined
}

/**
 * The options of {@link make} and {@link writer}.
 *
 * - `table` or `destinationResolver` (exactly one): where each record goes. The resolver runs before
 *   the serializer and may declare a record unroutable (routed to the handler).
 * - `serializer` (required): see {@link Serializer}.
 * - `appProfileId`: the application profile of every request; default the instance's default profile.
 * - `writerOptions`: see {@link BigtableWriterOptions}.
 * - `createDisposition`: default `"CREATE_NEVER"`; `"CREATE_IF_NEEDED"` requires `tableCreateOptions`,
 *   which `"CREATE_NEVER"` rejects.
 * - `failedMutationHandler`: default `FailureHandler.failJob`. It receives serializer failures,
 *   entries over the client limits, unroutable records and mutations Bigtable rejects as malformed.
 *   Its error type `E` is the write's: `RecordFailed` for the default, the handler's otherwise (a
 *   handler that drops, such as `FailureHandler.logAndDrop`, adds none).
 * - `flushInterval` (sink only): also flush on this timer; at least 1 ms.
 *
 * @category models
 * @since 0.1.0
 */
export interface BigtableSinkOptions<A, E = RecordFailed, R = never> {
  readonly table?: TableDestination | undefined
  readonly destinationResolver?: DestinationResolver<A> | undefined
  readonly serializer: Serializer<A>
  readonly appProfileId?: string | undefined
  readonly writerOptions?: BigtableWriterOptions | undefined
  readonly createDisposition?: CreateDisposition | undefined
  readonly tableCreateOptions?: TableCreateOptions | undefined
  readonly failedMutationHandler?: FailureHandler<FailedMutation, E, R> | undefined
  readonly flushInterval?: Duration.Input | undefined
}

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
 * channel holds the handler's error: `RecordFailed` without a `failedMutationHandler` (the default
 * `failJob`), exactly the handler's `E` with one. Delivery is
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
 * }).pipe(Effect.provide(BigtableClient.layer({ projectId: "p", emulatorEndpoint: "127.0.0.1:8086" })))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export function make<A, E, R>(
  options: BigtableSinkOptions<A, E, R> & { readonly failedMutationHandler: FailureHandler<FailedMutation, E, R> }
): Sink.Sink<WriteSummary, A, never, BigtableSinkError<E>, BigtableClient | R>
export function make<A, E = never, R = never>(
  options: BigtableSinkOptions<A, E, R>
): Sink.Sink<WriteSummary, A, never, BigtableSinkError<E | RecordFailed>, BigtableClient | R>
export function make<A, E, R>(
  options: BigtableSinkOptions<A, E, R>
): Sink.Sink<WriteSummary, A, never, BigtableSinkError<E | RecordFailed>, BigtableClient | R> {
  // `RecordFailed` comes only from the default `failJob`, used only when no handler is given:
  // that is what lets the first overload leave it out.
  return internalSink.make(options)
}

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
 * `RecordFailed` without a `failedMutationHandler`, exactly the handler's `E` with one.
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
export function writer<A, E, R>(
  options: BigtableSinkOptions<A, E, R> & { readonly failedMutationHandler: FailureHandler<FailedMutation, E, R> }
): Effect.Effect<Writer<A, BigtableSinkError<E>>, SinkConfigError | E, BigtableClient | Scope.Scope | R>
export function writer<A, E = never, R = never>(
  options: BigtableSinkOptions<A, E, R>
): Effect.Effect<
  Writer<A, BigtableSinkError<E | RecordFailed>>,
  SinkConfigError | E | RecordFailed,
  BigtableClient | Scope.Scope | R
>
export function writer<A, E, R>(
  options: BigtableSinkOptions<A, E, R>
): Effect.Effect<
  Writer<A, BigtableSinkError<E | RecordFailed>>,
  SinkConfigError | E | RecordFailed,
  BigtableClient | Scope.Scope | R
> {
  // as in `make`: `RecordFailed` only ever comes from the default handler
  // The language service checks an overload implementation against the first overload's types.
  // @effect-diagnostics-next-line missingEffectContext:off missingEffectError:off
  return internalWriter.make(options)
}
