/**
 * The Bigtable sink's metrics (reference 3.7) as Effect `Metric`s. Gauges move by deltas, so
 * several writers in one process add up, and each writer takes its share back when it closes.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { counter, gauge } from "../core/metric.ts"

/** @internal */
export const recordsSend = counter(
  "bigtable.numRecordsSend",
  "records applied by Bigtable (each record once, retries not counted)"
)
/** @internal */
export const bytesSend = counter("bigtable.numBytesSend", "serialized bytes of the applied records")
/** @internal */
export const recordsSendErrors = counter("bigtable.numRecordsSendErrors", "records routed to the failure handler")
/** @internal */
export const recordsSkipped = counter("bigtable.recordsSkipped", "records the serializer skipped (returned null)")
/** @internal */
export const inFlightEntries = gauge("bigtable.inFlightEntries", "entries admitted and not yet applied or routed")
/** @internal */
export const inFlightBytes = gauge("bigtable.inFlightBytes", "bytes of the entries in flight")
/** @internal */
export const parkedEntries = gauge(
  "bigtable.parkedEntries",
  "entries parked for the isolation pass or for table repair"
)
/** @internal */
export const errors = counter(
  "bigtable.errors",
  "failed entries by status (errorClass attribute); batched rejections are not counted"
)
/** @internal */
export const tablesCreated = counter("bigtable.tablesCreated", "tables the sink created, with their families")
/** @internal */
export const columnFamiliesAdded = counter(
  "bigtable.columnFamiliesAdded",
  "column families the sink added to existing tables"
)
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
export const stagedEntries = gauge(
  "bigtable.stagedEntries",
  "exactly-once: entries staged since the last checkpoint (sent at the next one)"
)
/** @internal */
export const stagedBytes = gauge(
  "bigtable.stagedBytes",
  "exactly-once: bytes of the staged entries (CheckAndMutateRow request size + 256)"
)
/** @internal */
export const requestsCompleted = counter(
  "bigtable.requestsCompleted",
  "exactly-once: CheckAndMutateRow requests that applied their mutations and marker"
)
/** @internal */
export const requestsDeduplicated = counter(
  "bigtable.requestsDeduplicated",
  "exactly-once: CheckAndMutateRow requests whose marker was already there (applied earlier)"
)
/** @internal */
export const requestsFailed = counter(
  "bigtable.requestsFailed",
  "exactly-once: CheckAndMutateRow requests that failed (the commit failed)"
)
