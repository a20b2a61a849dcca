/**
 * The Bigtable sink's metrics as Effect `Metric`s, for dashboards and alerts: records and bytes applied,
 * routed and skipped, entries and bytes in flight, parked entries, table and family creation, errors by
 * class, and client RPC attempts and latency.
 *
 * **Details**
 *
 * The names are a public contract, kept across versions: `bigtable.<name>`, with dimensions as
 * attributes (`errorClass`, `destination`). Exporters (OpenTelemetry, Prometheus) turn the dots into
 * underscores or keep them. Gauges move by deltas: several writers in one process add up, and each
 * takes its share back when it closes.
 *
 * **Example** (Reading a counter)
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const report = Effect.gen(function*() {
 *   const sent = yield* Metric.value(BigtableMetrics.recordsSend)
 *   yield* Effect.log(`records sent: ${sent.count}`)
 * })
 * ```
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Metric from "effect/Metric"
import * as internal from "../internal/bigtable/metrics.ts"

/**
 * `bigtable.numRecordsSend`: records applied by Bigtable, each once (retries are not counted).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.recordsSend)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const recordsSend: Metric.Counter<number> = internal.recordsSend

/**
 * `bigtable.numBytesSend`: serialized bytes of the applied records.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.bytesSend)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const bytesSend: Metric.Counter<number> = internal.bytesSend

/**
 * `bigtable.numRecordsSendErrors`: records routed to the failure handler.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.recordsSendErrors)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const recordsSendErrors: Metric.Counter<number> = internal.recordsSendErrors

/**
 * `bigtable.recordsSkipped`: records the serializer skipped (returned `null`).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.recordsSkipped)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const recordsSkipped: Metric.Counter<number> = internal.recordsSkipped

/**
 * `bigtable.inFlightEntries`: entries admitted and not yet applied or routed.
 *
 * **Example** (Reading the gauge)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const current = Metric.value(BigtableMetrics.inFlightEntries)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const inFlightEntries: Metric.Gauge<number> = internal.inFlightEntries

/**
 * `bigtable.inFlightBytes`: bytes of the entries in flight.
 *
 * **Example** (Reading the gauge)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const current = Metric.value(BigtableMetrics.inFlightBytes)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const inFlightBytes: Metric.Gauge<number> = internal.inFlightBytes

/**
 * `bigtable.parkedEntries`: entries parked for the isolation pass or for table repair.
 *
 * **Example** (Reading the gauge)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const current = Metric.value(BigtableMetrics.parkedEntries)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const parkedEntries: Metric.Gauge<number> = internal.parkedEntries

/**
 * `bigtable.errors`: failed entries, with an `errorClass` attribute (the status name); batched rejections are not counted.
 *
 * **Example** (One error class)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const unavailable = Metric.withAttributes(BigtableMetrics.errors, { errorClass: "UNAVAILABLE" })
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const errors: Metric.Counter<number> = internal.errors

/**
 * `bigtable.tablesCreated`: tables the sink created, with their families.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.tablesCreated)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const tablesCreated: Metric.Counter<number> = internal.tablesCreated

/**
 * `bigtable.columnFamiliesAdded`: column families the sink added to existing tables.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.columnFamiliesAdded)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const columnFamiliesAdded: Metric.Counter<number> = internal.columnFamiliesAdded

/**
 * `bigtable.destination.recordsSend`: applied records with a `destination` attribute (opt-in per-destination counters).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.destinationRecordsSend)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const destinationRecordsSend: Metric.Counter<number> = internal.destinationRecordsSend

/**
 * `bigtable.destination.sendErrors`: routed records with a `destination` attribute (opt-in per-destination counters).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.destinationSendErrors)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const destinationSendErrors: Metric.Counter<number> = internal.destinationSendErrors

/**
 * `bigtable.client.attempts`: client RPC attempts, with `method` and `status` attributes (when client metrics are exported).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.clientAttempts)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const clientAttempts: Metric.Counter<number> = internal.clientAttempts

/**
 * `bigtable.client.latency`: client RPC latency, with a `method` attribute (when client metrics are exported).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const total = Metric.value(BigtableMetrics.clientLatency)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const clientLatency: Metric.Histogram<Duration.Duration> = internal.clientLatency

/**
 * `bigtable.stagedEntries`: exactly-once entries staged since the last checkpoint.
 *
 * **Example** (Reading the metric)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const value = Metric.value(BigtableMetrics.stagedEntries)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const stagedEntries: Metric.Gauge<number> = internal.stagedEntries

/**
 * `bigtable.stagedBytes`: bytes of those staged entries (request size + 256 each).
 *
 * **Example** (Reading the metric)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const value = Metric.value(BigtableMetrics.stagedBytes)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const stagedBytes: Metric.Gauge<number> = internal.stagedBytes

/**
 * `bigtable.requestsCompleted`: exactly-once CheckAndMutateRow requests that applied their mutations and marker
 * (added once per commit, when it ends).
 *
 * **Example** (Reading the metric)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const value = Metric.value(BigtableMetrics.requestsCompleted)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const requestsCompleted: Metric.Counter<number> = internal.requestsCompleted

/**
 * `bigtable.requestsDeduplicated`: exactly-once requests whose marker was already there (applied earlier, absorbed;
 * added once per commit, when it ends).
 *
 * **Example** (Reading the metric)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const value = Metric.value(BigtableMetrics.requestsDeduplicated)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const requestsDeduplicated: Metric.Counter<number> = internal.requestsDeduplicated

/**
 * `bigtable.requestsFailed`: exactly-once requests that failed (each fails the commit; added when it ends).
 *
 * **Example** (Reading the metric)
 * ```ts
 * import { Metric } from "effect"
 * import { BigtableMetrics } from "effect-gcp-sinks/Bigtable"
 * const value = Metric.value(BigtableMetrics.requestsFailed)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const requestsFailed: Metric.Counter<number> = internal.requestsFailed
