/**
 * The metrics of the at-least-once writer (reference 2.15), as Effect `Metric`s. Names follow
 * the reference (`numRecordsSend`, ...) under a `bigquery.` prefix, as the Bigtable sink's do under
 * `bigtable.`; error classes are one counter with an `errorClass` attribute.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

/** @internal */
export const recordsSend = Metric.counter("bigquery.numRecordsSend", {
  description: "rows handed to an append, counted once (re-appends are not counted again)",
  incremental: true
})

/** @internal */
export const bytesSend = Metric.counter("bigquery.numBytesSend", {
  description: "row bytes handed to an append, counted once",
  incremental: true
})

/** @internal */
export const recordsSendErrors = Metric.counter("bigquery.numRecordsSendErrors", {
  description: "records routed to the failure handler (unroutable ones included)",
  incremental: true
})

/** @internal */
export const recordsSkipped = Metric.counter("bigquery.recordsSkipped", {
  description: "records the serializer skipped",
  incremental: true
})

/** @internal */
export const inFlightBatches = Metric.gauge("bigquery.inFlightBatches", {
  description: "appends awaiting their response (summed over the process's writers)"
})

/** @internal */
export const openDestinations = Metric.gauge("bigquery.openDestinations", {
  description: "destinations with open state (summed over the process's writers)"
})

/** @internal */
export const appendRetries = Metric.counter("bigquery.appendRetries", {
  description: "batches appended again after a failure",
  incremental: true
})

/** @internal */
export const tablesCreated = Metric.counter("bigquery.tablesCreated", {
  description: "tables.insert requests made (lost races included)",
  incremental: true
})

/** @internal */
export const schemaReconciliations = Metric.counter("bigquery.schemaReconciliations", {
  description: "table schema reconciliations performed",
  incremental: true
})

/** @internal */
export const errors = Metric.counter("bigquery.errors", {
  description: "failed appends (re-appends included) by gRPC status name, UNCLASSIFIED without one",
  incremental: true
})

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
