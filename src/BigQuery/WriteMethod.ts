/**
 * How the BigQuery sink writes: `AtLeastOnce` on each table's Storage Write `_default` stream, with
 * its own options. Exactly-once (buffered streams) and file loads join this union as their own
 * variants, each carrying its own options, so options of one method cannot be given to another.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"

/**
 * The options of {@link atLeastOnce} (reference section 2.5), each with its default.
 *
 * **Details**
 *
 * - `maxAppendRequestBytes` (512 KiB): a batch is appended once the next row would take it over
 *   this; at most 9 MiB, so a request stays under the service's 10 MB limit. Batching is by bytes
 *   only. A row larger than this (but at most 9 MiB) is sent alone.
 * - `recoveryInitialBackoff` (500 ms), `recoveryMaxBackoff` (10 s, at least the initial backoff),
 *   `recoveryMaxAttempts` (10):
 *   the writer-level budget for re-appending a batch after a transient or stale-connection
 *   failure, a missing table that was created, ±25 % jitter.
 * - `retryInitialDelay` (500 ms; 0 = no delay), `retryDelayMultiplier` (2.0, at least 1.0),
 *   `retryMaxDelay` (30 s; 0 or at least 1 ms, and at least `retryInitialDelay`),
 *   `retryMaxAttempts` (5), `maxRetryDuration` (5 min; 0 = no limit): the first-level retries of
 *   an in-band transient error on the same connection (what the Java SDK does before the writer
 *   sees the failure).
 * - `maxInflightRequests` (100), `maxInflightBytes` (100 MiB): writer-global bounds on appends
 *   awaiting their response; admission waits when either is reached.
 * - `minConnectionsPerRegion` (2), `maxConnectionsPerRegion` (20, at least the minimum): validated for parity with the
 *   reference; this writer opens one connection per active destination.
 * - `destinationIdleTimeout` (1 h, positive): a destination idle for longer and with nothing in flight is
 *   closed at the next flush and reopened on demand.
 * - `flushInterval` (unset): a timer flush in `BigQuerySink.make`; at least 1 ms.
 * - `responseTimeout` (5 min, at least 1 ms): an append without a response for this long is treated as a stale
 *   connection (rebuilt, batch re-appended).
 * - `perDestinationMetrics` (false): adds a `destination` attribute to the record counters.
 *
 * @category models
 * @since 0.1.0
 */
export interface DefaultStreamOptions {
  readonly maxAppendRequestBytes?: number | undefined
  readonly recoveryInitialBackoff?: Duration.Input | undefined
  readonly recoveryMaxBackoff?: Duration.Input | undefined
  readonly recoveryMaxAttempts?: number | undefined
  readonly retryInitialDelay?: Duration.Input | undefined
  readonly retryDelayMultiplier?: number | undefined
  readonly retryMaxDelay?: Duration.Input | undefined
  readonly retryMaxAttempts?: number | undefined
  readonly maxRetryDuration?: Duration.Input | undefined
  readonly maxInflightRequests?: number | undefined
  readonly maxInflightBytes?: number | undefined
  readonly minConnectionsPerRegion?: number | undefined
  readonly maxConnectionsPerRegion?: number | undefined
  readonly destinationIdleTimeout?: Duration.Input | undefined
  readonly flushInterval?: Duration.Input | undefined
  readonly responseTimeout?: Duration.Input | undefined
  readonly perDestinationMetrics?: boolean | undefined
}

/**
 * At-least-once appends to each table's `_default` stream: rows are committed when acknowledged;
 * a batch whose outcome was lost is appended again, so duplicates are possible, losses are not.
 *
 * @category models
 * @since 0.1.0
 */
export interface AtLeastOnce {
  readonly _tag: "AtLeastOnce"
  readonly options: DefaultStreamOptions
}

/**
 * Every write method. Today only {@link AtLeastOnce}; `ExactlyOnce` and `FileLoads` are added as
 * further variants.
 *
 * @category models
 * @since 0.1.0
 */
export type WriteMethod = AtLeastOnce

/**
 * The default write method, with optional {@link DefaultStreamOptions} (validated when the sink is
 * built, errors naming `writeMethod.<option>`).
 *
 * **Example** (Smaller requests, fewer in flight)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * const method = WriteMethod.atLeastOnce({ maxAppendRequestBytes: 256 * 1024, maxInflightRequests: 20 })
 * method._tag
 * // => "AtLeastOnce"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const atLeastOnce = (options?: DefaultStreamOptions): AtLeastOnce => ({
  _tag: "AtLeastOnce",
  options: options ?? {}
})

/**
 * Tells whether a value is a {@link WriteMethod}.
 *
 * **Example** (Checking an untyped value)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * WriteMethod.isWriteMethod(WriteMethod.atLeastOnce())
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isWriteMethod = (u: unknown): u is WriteMethod =>
  typeof u === "object" && u !== null && "_tag" in u && u._tag === "AtLeastOnce" && "options" in u
