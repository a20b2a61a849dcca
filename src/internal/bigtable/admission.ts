/**
 * The owner's intake: admitted entries join their table's batch (a full batch is sent), skipped
 * and routed records are counted and handled; admission waiting for permits sends the open
 * batches; the ticker sends batches older than `batchDelay`; idle tables are forgotten at barriers.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as batcher from "./batcher.ts"
import { route } from "./booking.ts"
import { cutAll, dispatch } from "./dispatch.ts"
import * as metrics from "./metrics.ts"
import { batchDelay } from "./options.ts"
import type { Command, State, WriterError } from "./ownerState.ts"
import { open } from "./repair.ts"
import * as stall from "./stall.ts"

/** An `Admit` command: entries that hold their permits, plus the records routed or skipped. @internal */
export const onAdmit = <A, EH, R>(
  st: State<A, EH, R>,
  command: Extract<Command<WriterError<EH>>, { readonly _tag: "Admit" }>
): Effect.Effect<void, SinkConfigError, R> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (const key of command.skipped) st.summary.add(key, "recordsSkipped", 1)
    if (command.skipped.length > 0) yield* Metric.update(metrics.recordsSkipped, command.skipped.length)
    let bytes = 0
    for (const item of command.items) {
      st.outstanding++
      st.outstandingBytes += item.bytes
      bytes += item.bytes
    }
    yield* Metric.modify(metrics.inFlightEntries, command.items.length)
    yield* Metric.modify(metrics.inFlightBytes, bytes)
    for (const item of command.items) {
      if (st.failure !== undefined) return
      const dest = st.dests.get(item.key) ?? (yield* open(st, item))
      dest.inFlight++
      dest.lastUsed = now
      if (dest.batch.items.length === 0) dest.openedAt = now
      for (const ready of batcher.add(dest.batch, item, st.thresholds)) yield* dispatch(st, dest, ready)
    }
    for (const failed of command.routed) {
      if (st.failure !== undefined) return
      yield* route(st, failed)
    }
  })

/**
 * A `SendAll` command: admission is waiting. While requests are in flight their completions free
 * permits, and cutting now would only send small batches; with none in flight, the open batches
 * hold them.
 *
 * @internal
 */
export const onSendAll = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (st.requestsInFlight > 0) {
      st.admissionWaiting = true
      return Effect.void
    }
    return cutAll(st)
  })

/** A `Tick` command: sends the batches open for `batchDelay`, and reports a stall (stall.ts). @internal */
export const onTick = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* stall.check(st)
    const now = yield* Clock.currentTimeMillis
    const due = Duration.toMillis(batchDelay)
    for (const dest of st.dests.values()) {
      if (dest.batch.items.length > 0 && now - dest.openedAt >= due) {
        yield* dispatch(st, dest, batcher.cut(dest.batch))
      }
    }
  })

/** Forgets tables idle longer than `destinationIdleTimeout` with nothing pending. @internal */
export const evictIdle = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const idle = Duration.toMillis(st.w.destinationIdleTimeout)
    for (const [key, dest] of st.dests) {
      if (
        dest.ready && dest.inFlight === 0 && dest.held.length === 0 && dest.batch.items.length === 0 &&
        now - dest.lastUsed > idle
      ) st.dests.delete(key)
    }
  })
