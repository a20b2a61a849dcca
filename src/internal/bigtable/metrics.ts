/**
 * The Bigtable sink's metrics (reference 3.7) as Effect `Metric`s. Gauges move by deltas, so
 * several writers in one process add up, and each writer takes its share back when it closes.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

/** @internal */
export const recordsSend = Metric.counter("bigtable.numRecordsSend", {
  description: "records applied by Bigtable (each record once, retries not counted)",
  incremental: true
})
/** @internal */
export const bytesSend = Metric.counter("bigtable.numBytesSend", {
  description: "serialized bytes of the applied records",
  incremental: true
})
/** @internal */
export const recordsSendErrors = Metric.counter("bigtable.numRecordsSendErrors", {
  description: "records routed to the failure handler",
  incremental: true
})
/** @internal */
export const recordsSkipped = Metric.counter("bigtable.recordsSkipped", {
  description: "records the serializer skipped (returned null)",
  incremental: true
})
/** @internal */
export const inFlightEntries = Metric.gauge("bigtable.inFlightEntries", {
  description: "entries admitted and not yet applied or routed"
})
/** @internal */
export const inFlightBytes = Metric.gauge("bigtable.inFlightBytes", {
  description: "bytes of the entries in flight"
})
/** @internal */
export const parkedEntries = Metric.gauge("bigtable.parkedEntries", {
  description: "entries parked for the isolation pass or for table repair"
})
/** @internal */
export const errors = Metric.counter("bigtable.errors", {
  description: "failed entries by status (errorClass attribute); batched rejections are not counted",
  incremental: true
})
/** @internal */
export const tablesCreated = Metric.counter("bigtable.tablesCreated", {
  description: "tables the sink created, with their families",
  incremental: true
})
/** @internal */
export const columnFamiliesAdded = Metric.counter("bigtable.columnFamiliesAdded", {
  description: "column families the sink added to existing tables",
  incremental: true
})
/** @internal */
export const destinationRecordsSend = Metric.counter("bigtable.destination.recordsSend", { incremental: true })
/** @internal */
export const destinationSendErrors = Metric.counter("bigtable.destination.sendErrors", { incremental: true })

/** @internal */
export const errorClass = (status: string, amount: number): Effect.Effect<void> =>
  Metric.update(Metric.withAttributes(errors, { errorClass: status }), amount)

/** @internal */
export const clientAttempts = Metric.counter("bigtable.client.attempts", { incremental: true })
/** @internal */
export const clientLatency = Metric.timer("bigtable.client.latency")

/** One client RPC (exportClientMetrics): its count by method and status, and its latency. @internal */
export const clientCall = (method: string, status: string, duration: Duration.Duration | undefined) =>
  Effect.andThen(
    Metric.update(Metric.withAttributes(clientAttempts, { method, status }), 1),
    duration === undefined ? Effect.void : Metric.update(Metric.withAttributes(clientLatency, { method }), duration)
  )

/** @internal */
export const stagedEntries = Metric.gauge("bigtable.stagedEntries", {
  description: "exactly-once: entries staged since the last checkpoint (sent at the next one)"
})
/** @internal */
export const stagedBytes = Metric.gauge("bigtable.stagedBytes", {
  description: "exactly-once: bytes of the staged entries (CheckAndMutateRow request size + 256)"
})
/** @internal */
export const requestsCompleted = Metric.counter("bigtable.requestsCompleted", {
  description: "exactly-once: CheckAndMutateRow requests that applied their mutations and marker",
  incremental: true
})
/** @internal */
export const requestsDeduplicated = Metric.counter("bigtable.requestsDeduplicated", {
  description: "exactly-once: CheckAndMutateRow requests whose marker was already there (applied earlier)",
  incremental: true
})
/** @internal */
export const requestsFailed = Metric.counter("bigtable.requestsFailed", {
  description: "exactly-once: CheckAndMutateRow requests that failed (the commit failed)",
  incremental: true
})
