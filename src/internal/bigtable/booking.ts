/**
 * The owner's bookkeeping of entries leaving the writer: applied (counted, metrics) or routed to
 * the failure handler (counted, handled), and the permits and in-flight counts they release. One
 * Effect per group of entries, not per entry.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import type { FailedMutation } from "../../Bigtable/BigtableFailure.ts"
import * as metrics from "./metrics.ts"
import { type Dest, failCause, perDestination, type State } from "./ownerState.ts"
import type { Item } from "./prepare.ts"

/** Entries that leave the writer, applied or routed: in-flight counts down, permits back. @internal */
export const resolved = <A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Item>): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (items.length === 0) return
    let bytes = 0
    let permitBytes = 0
    let isolated = 0
    // Items of one request share a table: look each destination up once per run of its items.
    let key: string | undefined
    let dest: Dest | undefined
    for (const item of items) {
      bytes += item.bytes
      permitBytes += item.permitBytes
      if (item.key !== key) {
        key = item.key
        dest = st.dests.get(key)
      }
      if (dest !== undefined) dest.inFlight--
      if (item.isolated) isolated++
    }
    st.outstanding -= items.length
    st.outstandingBytes -= bytes
    st.parked -= isolated
    yield* st.ctx.release({ units: items.length, bytes: permitBytes })
    yield* Metric.modify(metrics.inFlightEntries, -items.length)
    yield* Metric.modify(metrics.inFlightBytes, -bytes)
    if (isolated > 0) yield* Metric.modify(metrics.parkedEntries, -isolated)
  })

/** Entries Bigtable applied: counted per destination, and the rejection streak ends. @internal */
export const applied = <A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Item>): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (items.length === 0) return
    let bytes = 0
    // Counted per run of items of one destination (a request's items share one).
    let from = 0
    let runBytes = 0
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as Item
      bytes += item.bytes
      runBytes += item.bytes
      const next = items[i + 1]
      if (next === undefined || next.key !== item.key) {
        st.summary.add(item.key, "recordsWritten", i + 1 - from)
        st.summary.add(item.key, "bytesWritten", runBytes)
        const attributes = perDestination(st, item.key)
        if (attributes !== undefined) {
          yield* Metric.update(Metric.withAttributes(metrics.destinationRecordsSend, attributes), i + 1 - from)
        }
        from = i + 1
        runBytes = 0
      }
    }
    yield* resolved(st, items)
    st.consecutiveRejections = 0
    yield* Metric.update(metrics.recordsSend, items.length)
    yield* Metric.update(metrics.bytesSend, bytes)
  })

/** Hands one failed record to the handler; the handler's failure is the writer's. @internal */
export const route = <A, EH, R>(st: State<A, EH, R>, failed: FailedMutation): Effect.Effect<void, never, R> =>
  Effect.gen(function*() {
    st.summary.add(failed.destination, "recordsFailed", 1)
    yield* Metric.update(metrics.recordsSendErrors, 1)
    const attributes = perDestination(st, failed.destination)
    if (attributes !== undefined) {
      yield* Metric.update(Metric.withAttributes(metrics.destinationSendErrors, attributes), 1)
    }
    const exit = yield* Effect.exit(st.handler.handle(failed))
    if (Exit.isFailure(exit)) yield* failCause(st, exit.cause)
  })
