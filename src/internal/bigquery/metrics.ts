/**
 * The metrics of the at-least-once writer (reference 2.15), as Effect `Metric`s. Names follow
 * the reference (`numRecordsSend`, ...) under a `bigquery.` prefix, as the Bigtable sink's do under
 * `bigtable.`; error classes are one counter with an `errorClass` attribute.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { counter, gauge } from "../core/metric.ts"

/** @internal */
export const recordsSend = counter(
  "bigquery.numRecordsSend",
  "rows handed to an append, counted once (re-appends are not counted again)"
)

/** @internal */
export const bytesSend = counter("bigquery.numBytesSend", "row bytes handed to an append, counted once")

/** @internal */
export const recordsSendErrors = counter(
  "bigquery.numRecordsSendErrors",
  "records routed to the failure handler (unroutable ones included)"
)

/** @internal */
export const recordsSkipped = counter("bigquery.recordsSkipped", "records the serializer skipped")

/** @internal */
export const inFlightBatches = gauge(
  "bigquery.inFlightBatches",
  "appends awaiting their response (summed over the process's writers)"
)

/** @internal */
export const openDestinations = gauge(
  "bigquery.openDestinations",
  "destinations with open state (summed over the process's writers)"
)

/**
 * The time from handing a batch to an append until its answer (its in-band re-sends included),
 * as Bigtable's `bigtable.client.latency`, in milliseconds.
 *
 * @internal
 */
export const appendLatency = Metric.timer("bigquery.appendLatency", {
  description: "time from handing a batch to an append until its answer"
})

/** @internal */
export const appendRetries = counter("bigquery.appendRetries", "batches appended again after a failure")

/** @internal */
export const tablesCreated = counter("bigquery.tablesCreated", "tables.insert requests made (lost races included)")

/** @internal */
export const schemaReconciliations = counter("bigquery.schemaReconciliations", "table schema reconciliations performed")

/** @internal */
export const stagedFilesDiscarded = counter(
  "bigquery.fileLoads.stagedFilesDiscarded",
  "staged files of a refused (fenced) checkpoint that were deleted, never loaded"
)

/** @internal */
export const errors = counter(
  "bigquery.errors",
  "failed appends (re-appends included) by gRPC status name, UNCLASSIFIED without one"
)

/** One failed append of class `code`. @internal */
export const countError = (code: string): Effect.Effect<void> =>
  Metric.update(Metric.withAttributes(errors, { errorClass: code }), 1)

/** Adds to a record counter, with the destination as attribute when asked for. @internal */
export const countRecords = (
  metric: Metric.Metric<number, unknown>,
  amount: number,
  destination: string | undefined
): Effect.Effect<void> =>
  amount === 0
    ? Effect.void
    : Metric.update(destination === undefined ? metric : Metric.withAttributes(metric, { destination }), amount)

/**
 * Moves a gauge by `delta`: each writer adds its own share and takes it back when it closes, so
 * writers side by side add up and a closed one leaves nothing behind.
 *
 * @internal
 */
export const moveGauge = (metric: Metric.Gauge<number>, delta: number): Effect.Effect<void> =>
  delta === 0 ? Effect.void : Metric.modify(metric, delta)
