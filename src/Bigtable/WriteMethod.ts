/**
 * How the Bigtable sink writes: `AtLeastOnce` bulk MutateRows, or `ExactlyOnce` staged envelopes
 * committed as marker-guarded CheckAndMutateRow at each checkpoint, each carrying its own tuning,
 * so options of one method cannot be given to another.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import * as method from "../internal/options/writeMethod.ts"
import type { WriteMethodOf, WriterOptions } from "../Sink/SinkOptions.ts"

/**
 * The options of {@link atLeastOnce}: the shared {@link WriterOptions}
 * plus what only Bigtable has. Every count is in entries (one per record), not mutations.
 *
 * **Details**
 *
 * - `batchElementCount` (100): entries per request; 1..19,999.
 * - `batchByteSize` (20 MiB): bytes per request; 1..104,857,599 (under 100 MiB). Entries never wait
 *   for a batch to fill: a table with no MutateRows call out sends what it has at once, and entries
 *   are batched only while one of its calls is out (its answer sends them; at the latest 1 s after the
 *   batch's first entry, on `flush`, or when admission must wait), so at a low rate each entry is sent
 *   within about one round trip. No request carries more than 100,000 mutations.
 * - `maxInFlightEntries` (1000), `maxInFlightBytes` (64 MiB): entries (bytes) admitted and not yet
 *   applied or routed, over all tables; admission waits when either is reached. An entry larger
 *   than `maxInFlightBytes` is admitted once the writer is otherwise empty.
 * - `maxConsecutiveRejections` (100): rejected mutations in a row, with none applied between,
 *   before the write fails; at least 1, or -1 (unbounded).
 * - `retry` (`{ initialBackoff: "10 millis", maxBackoff: "1 minute", maxAttempts: 15 }`): the
 *   per-entry retry of transient statuses (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`,
 *   `RESOURCE_EXHAUSTED`), ±25 % jitter; or `RetryPolicy.fromSchedule(schedule)`.
 * - `recovery` (`{ initialBackoff: "500 millis", maxBackoff: "10 seconds", maxAttempts: 10 }`): the
 *   budget for creating missing tables and families and re-applying the parked mutations.
 * - `responseTimeout` (1 min, at least 1 ms): a MutateRows call unanswered this long is abandoned
 *   and its entries count as `DEADLINE_EXCEEDED` (retried on `retry`); the per-attempt timeout of
 *   Google's Bigtable clients.
 * - `adminTimeout` (1 min, at least 1 ms): the deadline of each table admin call (get, create,
 *   modify column families), retried on `recovery`.
 * - `destinationIdleTimeout` (1 h, positive): a table idle this long is forgotten at the next flush
 *   (and reopened on demand).
 * - `flushInterval` (unset): `BigtableSink.make` also runs a barrier (the failure handler's flush) on
 *   this timer; at least 1 ms, on a fixed rate (a barrier that outlasts the interval is followed at
 *   once by the next). Entries do not wait for it: they are sent as above, within the interval plus
 *   one round trip, for as long as the stream runs.
 * - `perDestinationMetrics` (false): add a `destination` attribute to the per-record metrics.
 *
 * @category models
 * @since 0.1.0
 */
export interface AtLeastOnceOptions extends WriterOptions {
  readonly batchElementCount?: number | undefined
  readonly batchByteSize?: number | undefined
  readonly maxInFlightEntries?: number | undefined
  readonly maxConsecutiveRejections?: number | undefined
}

/**
 * At-least-once bulk writes: a retried or replayed entry is applied again, so prefer explicit
 * cell timestamps (then a replay writes the same cells).
 *
 * @category models
 * @since 0.1.0
 */
export interface AtLeastOnce extends WriteMethodOf<"AtLeastOnce", "bigtable", AtLeastOnceOptions> {}

/**
 * The options of {@link exactlyOnce}, in the shared vocabulary.
 *
 * **Details**
 *
 * - `markerFamily` (required): the reserved column family of the marker cells. It must exist on
 *   every table written, with no GC rule and no value type (raw), and no user mutation may touch it;
 *   the sink checks this before the first request to a table and never changes the table.
 * - `maxStagedEntries` (100,000), `maxStagedBytes` (64 MiB): what may be staged between two
 *   checkpoints (an entry counts its CheckAndMutateRow request size plus 256 bytes); one more fails
 *   the write with `StagingFull`: checkpoint more often.
 * - `maxInFlightRequests` (100): CheckAndMutateRow requests outstanding while a checkpoint commits.
 * - `responseTimeout` (20 s, at least 1 ms): the deadline of each request, its only attempt.
 * - `adminTimeout` (1 min): the deadline of each metadata call of the precondition check.
 * - `perDestinationMetrics` (false): add a `destination` attribute to the request counters.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnceOptions {
  readonly markerFamily: string
  readonly maxStagedEntries?: number | undefined
  readonly maxStagedBytes?: number | undefined
  readonly maxInFlightRequests?: number | undefined
  readonly responseTimeout?: Duration.Input | undefined
  readonly adminTimeout?: Duration.Input | undefined
  readonly perDestinationMetrics?: boolean | undefined
}

/**
 * Exactly-once writes: entries staged until `checkpoint(position)`, saved with the checkpoint,
 * then committed as CheckAndMutateRow requests guarded by marker cells whose identities derive
 * from the writer id and each record's position, so lost responses, restores and source replays
 * are absorbed: a commit applies a record's mutations only where its marker is not there yet.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnce extends WriteMethodOf<"ExactlyOnce", "bigtable", ExactlyOnceOptions> {}

/**
 * Every write method of `BigtableSink.make` and `writer`: {@link AtLeastOnce} (the default) and
 * {@link ExactlyOnce} (with the sink's `checkpoint` option).
 *
 * @category models
 * @since 0.1.0
 */
export type WriteMethod = AtLeastOnce | ExactlyOnce

/**
 * The default write method, with optional {@link AtLeastOnceOptions} (validated when the sink is
 * built, errors naming `writeMethod.<option>`).
 *
 * **Example** (Smaller batches, a timer flush, a shorter retry budget)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/Bigtable"
 * const method = WriteMethod.atLeastOnce({
 *   batchElementCount: 50,
 *   flushInterval: "1 second",
 *   retry: { initialBackoff: "10 millis", maxBackoff: "5 seconds", maxAttempts: 5 }
 * })
 * method._tag
 * // => "AtLeastOnce"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const atLeastOnce = (options?: AtLeastOnceOptions): AtLeastOnce =>
  method.make("AtLeastOnce", "bigtable", options ?? {})

/**
 * The exactly-once write method with its {@link ExactlyOnceOptions} (validated when the sink is
 * built, errors naming `writeMethod.<option>`), for `BigtableSink.make` or `writer` with a
 * `checkpoint` option.
 *
 * **Example** (Counters that survive crashes)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/Bigtable"
 * const method = WriteMethod.exactlyOnce({ markerFamily: "eo", maxStagedEntries: 50_000 })
 * method._tag
 * // => "ExactlyOnce"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const exactlyOnce = (options: ExactlyOnceOptions): ExactlyOnce => method.make("ExactlyOnce", "bigtable", options)

/**
 * Tells whether a value is a Bigtable {@link WriteMethod} (a BigQuery one is not).
 *
 * **Example** (Checking an untyped value)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/Bigtable"
 * WriteMethod.isWriteMethod(WriteMethod.atLeastOnce())
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isWriteMethod: (u: unknown) => u is WriteMethod = method.guard<WriteMethod>("bigtable", [
  "AtLeastOnce",
  "ExactlyOnce"
])
