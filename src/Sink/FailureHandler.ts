/**
 * Where records that failed terminally go: fail the write, log and drop, or a dead-letter sink.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Sink from "effect/Sink"
import * as internal from "../internal/core/deadLetter.ts"
import { type FailedElement, isFailedElement } from "./FailedElement.ts"
import type { SinkConfigError } from "./SinkConfigError.ts"

/**
 * Receives the records a sink could not write, with a lifecycle driven by the writer.
 *
 * **Details**
 *
 * - `open`: once, when the writer is created, before the first `handle`.
 * - `handle(failure)`: one terminally failed record. Succeeding **drops** the record (it is counted
 *   in `recordsFailed`); failing **fails the write** with that error.
 * - `flush`: at every barrier (`writer.flush`, a timer flush, end of input), after the sink's own
 *   writes drained. When it returns, everything handled so far must be durable.
 * - `close`: once, when the writer's scope closes, on success and on failure alike. It must not be
 *   relied on for persistence.
 *
 * The writer calls the handler from one fiber at a time, so a handler needs no locking.
 * The type is contravariant in `F`: a handler of `FailedElement` serves every backend.
 *
 * @see {@link FailureHandler.make} to build one from functions
 * @category models
 * @since 0.1.0
 */
export interface FailureHandler<in F, out E = never, out R = never> {
  readonly open: Effect.Effect<void, E, R>
  readonly handle: (failure: F) => Effect.Effect<void, E, R>
  readonly flush: Effect.Effect<void, E, R>
  readonly close: Effect.Effect<void, never, R>
}

/**
 * The error of the default handler, `failJob`: a record failed terminally and the write stops.
 *
 * **Details**
 *
 * `failure` is the routed element (its backend subtype at runtime: `FailedRow`, `FailedMutation`,
 * `UnroutableRecord`). The message names the connector, the destination and the reason, never
 * the payload.
 *
 * **Example** (Catching a failed record)
 * ```ts
 * import { Effect } from "effect"
 * import type { RecordFailed } from "effect-gcp-sinks/Sink"
 * declare const write: Effect.Effect<void, RecordFailed>
 * write.pipe(Effect.catchTag("RecordFailed", (e) => Effect.logError(e.failure.destination)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class RecordFailed extends Schema.TaggedError<RecordFailed>()("RecordFailed", {
  failure: Schema.declare(isFailedElement, { identifier: "FailedElement" })
}) {
  /**
   * Connector, destination and reason; never the payload.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.failure.connector} record failed for ${this.failure.destination}: ${this.failure.message}`
  }
}

/**
 * Builds a handler from a `handle` function and optional lifecycle steps (each defaults to doing nothing).
 *
 * **Example** (Counting failures)
 * ```ts
 * import { Effect, Ref } from "effect"
 * import { FailureHandler } from "effect-gcp-sinks/Sink"
 * declare const counter: Ref.Ref<number>
 * const counting = FailureHandler.make({ handle: () => Ref.update(counter, (n) => n + 1) })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const make = <F, E = never, R = never>(options: {
  readonly handle: (failure: F) => Effect.Effect<void, E, R>
  readonly open?: Effect.Effect<void, E, R> | undefined
  readonly flush?: Effect.Effect<void, E, R> | undefined
  readonly close?: Effect.Effect<void, never, R> | undefined
}): FailureHandler<F, E, R> => ({
  handle: options.handle,
  open: options.open ?? Effect.void,
  flush: options.flush ?? Effect.void,
  close: options.close ?? Effect.void
})

/**
 * The default handler: the first failed record fails the write with a {@link RecordFailed}
 * carrying it.
 *
 * **Example** (Explicit default)
 * ```ts
 * import { FailureHandler } from "effect-gcp-sinks/Sink"
 * const options = { failureHandler: FailureHandler.failJob }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const failJob: FailureHandler<FailedElement, RecordFailed> = make({
  handle: (failure) => Effect.fail(new RecordFailed({ failure }))
})

/**
 * Logs each failed record at WARN level (connector, destination, reason; never the payload) and
 * drops it. The drop is counted in the summary's `recordsFailed`.
 *
 * **Example** (Tolerating bad records)
 * ```ts
 * import { FailureHandler } from "effect-gcp-sinks/Sink"
 * const options = { failureHandler: FailureHandler.logAndDrop }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const logAndDrop: FailureHandler<FailedElement> = make({
  handle: (failure) =>
    Effect.logWarning("dropping a record that failed terminally").pipe(
      Effect.annotateLogs({
        connector: failure.connector,
        destination: failure.destination,
        reason: failure.message
      })
    )
})

/**
 * The error of a {@link FailureHandler.deadLetter} whose sink ended without consuming any of the
 * failures handed to it (a `Sink.fromEffect`, say): they would be lost, so the write fails.
 * `remaining` counts the failures not delivered.
 *
 * **Example** (Catching it)
 * ```ts
 * import { Effect } from "effect"
 * import type { DeadLetterStalled } from "effect-gcp-sinks/Sink"
 * declare const write: Effect.Effect<void, DeadLetterStalled>
 * write.pipe(Effect.catchTag("DeadLetterStalled", (e) => Effect.logError(`${e.remaining} undelivered`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class DeadLetterStalled extends Schema.TaggedError<DeadLetterStalled>()("DeadLetterStalled", {
  remaining: Schema.Int
}) {
  /**
   * How many failures the sink left.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `the dead-letter sink ended without consuming any of ${this.remaining} failures`
  }
}

/**
 * The options of {@link FailureHandler.deadLetter}.
 *
 * - `maxBuffered`: failures held before the dead-letter sink is run early, without waiting for the
 *   next barrier; default 1000. `1` (or less) forwards each failure at once; `Infinity` only at barriers.
 * - `maxBufferedBytes`: the same bound on the failures' payload bytes (an oversize row routed whole
 *   is up to 10 MiB); default 8 MiB, a positive number or `Infinity`. An invalid value fails the
 *   handler's `open` (so building the writer) with a `SinkConfigError` at `deadLetter.maxBufferedBytes`.
 *
 * @category models
 * @since 0.1.0
 */
export interface DeadLetterOptions {
  readonly maxBuffered?: number | undefined
  readonly maxBufferedBytes?: number | undefined
}

/**
 * Forwards failed records to any Effect `Sink` (a queue, a file, another table), flushed at every
 * barrier, and drops them from the write.
 *
 * **Details**
 *
 * Failures are buffered and fed to `sink` at each `flush` and whenever `maxBuffered` failures or
 * `maxBufferedBytes` of payloads are waiting; the sink is run again over the rest of the batch
 * while it consumes some, so a sink that ends early loses nothing, and one that ends consuming none
 * fails the write with {@link DeadLetterStalled}. A failing sink fails the write with its error.
 * Delivery is at-least-once for failures that recur when the input is replayed.
 *
 * **Example** (Dead letters to a queue)
 * ```ts
 * import { Effect, Queue, Sink } from "effect"
 * import { FailureHandler, type FailedElement } from "effect-gcp-sinks/Sink"
 * declare const queue: Queue.Queue<FailedElement>
 * const handler = FailureHandler.deadLetter(Sink.forEach((f: FailedElement) => Queue.offer(queue, f)))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const deadLetter: <F, E = never, R = never>(
  sink: Sink.Sink<unknown, F, F, E, R>,
  options?: DeadLetterOptions
) => FailureHandler<F, E | DeadLetterStalled | SinkConfigError, R> = (sink, options) =>
  internal.deadLetter(sink, options, (remaining) => new DeadLetterStalled({ remaining }))

/**
 * Constructors of {@link FailureHandler}.
 *
 * **Example** (Dropping failures with a log line)
 * ```ts
 * import { BigtableSink } from "effect-gcp-sinks/Bigtable"
 * import { FailureHandler } from "effect-gcp-sinks/Sink"
 * declare const options: BigtableSink.BigtableSinkOptions<{ readonly id: string }>
 * const sink = BigtableSink.make({ ...options, failureHandler: FailureHandler.logAndDrop })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const FailureHandler: {
  readonly make: typeof make
  readonly failJob: typeof failJob
  readonly logAndDrop: typeof logAndDrop
  readonly deadLetter: typeof deadLetter
} = { make, failJob, logAndDrop, deadLetter }
