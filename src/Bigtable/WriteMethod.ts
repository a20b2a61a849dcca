/**
 * How the Bigtable sink writes: `AtLeastOnce` bulk MutateRows, carrying its own tuning. An
 * exactly-once method (staged commits) joins this union as another variant with its own options,
 * so options of one method cannot be given to another.
 *
 * @since 0.1.0
 */
import * as method from "../internal/writeMethod.ts"
import type { WriteMethodOf, WriterOptions } from "../Sink/SinkOptions.ts"

/**
 * The options of {@link atLeastOnce} (reference section 3.4): the shared {@link WriterOptions}
 * plus what only Bigtable has. Every count is in entries (one per record), not mutations.
 *
 * **Details**
 *
 * - `batchElementCount` (100): entries per request; 1..19,999.
 * - `batchByteSize` (20 MiB): bytes per request; 1..104,857,599 (under 100 MiB). A batch is also
 *   sent 1 s after its first entry, on `flush`, and whenever admission must wait. No request carries
 *   more than 100,000 mutations.
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
 * - `flushInterval` (unset): `BigtableSink.make` also flushes on this timer; at least 1 ms.
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
 * Every write method of the Bigtable sink. Today only {@link AtLeastOnce}.
 *
 * @category models
 * @since 0.1.0
 */
export type WriteMethod = AtLeastOnce

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
export const isWriteMethod: (u: unknown) => u is WriteMethod = method.guard<WriteMethod>("bigtable", ["AtLeastOnce"])
