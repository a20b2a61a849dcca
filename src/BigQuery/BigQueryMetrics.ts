/**
 * The BigQuery sink's metrics as Effect `Metric`s, for dashboards and alerts: records and bytes sent,
 * routed and skipped, appends in flight, retries, table creation and schema reconciliation, errors by class.
 *
 * **Details**
 *
 * The names are a public contract, kept across versions: `bigquery.<name>`, with dimensions as
 * attributes (`errorClass`, `destination`). Exporters (OpenTelemetry, Prometheus) turn the dots into
 * underscores or keep them. Gauges move by deltas: several writers in one process add up, and each
 * takes its share back when it closes.
 *
 * **Example** (Reading a counter)
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const report = Effect.gen(function*() {
 *   const sent = yield* Metric.value(BigQueryMetrics.recordsSend)
 *   yield* Effect.log(`records sent: ${sent.count}`)
 * })
 * ```
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Metric from "effect/Metric"
import * as internal from "../internal/bigquery/metrics.ts"

/**
 * `bigquery.numRecordsSend`: rows handed to an append, each counted once (re-appends are not counted again).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.recordsSend)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const recordsSend: Metric.Counter<number> = internal.recordsSend

/**
 * `bigquery.numBytesSend`: row bytes handed to an append, each counted once.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.bytesSend)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const bytesSend: Metric.Counter<number> = internal.bytesSend

/**
 * `bigquery.appendLatency`: the time from handing a batch to an append until its answer, in-band
 * re-sends included (a histogram of milliseconds).
 *
 * **Example** (Reading the histogram)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const latency = Metric.value(BigQueryMetrics.appendLatency)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const appendLatency: Metric.Histogram<Duration.Duration> = internal.appendLatency

/**
 * `bigquery.numRecordsSendErrors`: records routed to the failure handler, unroutable ones included.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.recordsSendErrors)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const recordsSendErrors: Metric.Counter<number> = internal.recordsSendErrors

/**
 * `bigquery.recordsSkipped`: records the serializer skipped (returned `null`).
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.recordsSkipped)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const recordsSkipped: Metric.Counter<number> = internal.recordsSkipped

/**
 * `bigquery.inFlightBatches`: appends awaiting their response.
 *
 * **Example** (Reading the gauge)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const current = Metric.value(BigQueryMetrics.inFlightBatches)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const inFlightBatches: Metric.Gauge<number> = internal.inFlightBatches

/**
 * `bigquery.openDestinations`: destinations with open state (stream, schema, batch).
 *
 * **Example** (Reading the gauge)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const current = Metric.value(BigQueryMetrics.openDestinations)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const openDestinations: Metric.Gauge<number> = internal.openDestinations

/**
 * `bigquery.appendRetries`: batches appended again after a failure.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.appendRetries)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const appendRetries: Metric.Counter<number> = internal.appendRetries

/**
 * `bigquery.tablesCreated`: `tables.insert` requests made, lost creation races included.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.tablesCreated)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const tablesCreated: Metric.Counter<number> = internal.tablesCreated

/**
 * `bigquery.schemaReconciliations`: table schema reconciliations performed.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.schemaReconciliations)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const schemaReconciliations: Metric.Counter<number> = internal.schemaReconciliations

/**
 * `bigquery.errors`: failed appends (re-appends included), with an `errorClass` attribute: the gRPC status name, `UNCLASSIFIED` without one.
 *
 * **Example** (One error class)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const unavailable = Metric.withAttributes(BigQueryMetrics.errors, { errorClass: "UNAVAILABLE" })
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const errors: Metric.Counter<number> = internal.errors

/**
 * `bigquery.fileLoads.stagedFilesDiscarded`: staged files of a refused checkpoint (a fenced file-loads
 * writer's) that were deleted: no record names them, so no writer will ever load them.
 *
 * **Example** (Reading the counter)
 * ```ts
 * import { Metric } from "effect"
 * import { BigQueryMetrics } from "effect-gcp-sinks/BigQuery"
 * const total = Metric.value(BigQueryMetrics.stagedFilesDiscarded)
 * ```
 *
 * @category metrics
 * @since 0.1.0
 */
export const stagedFilesDiscarded: Metric.Counter<number> = internal.stagedFilesDiscarded
