/**
 * The owner's handling of a finished MutateRows call: each entry's status classified (applied,
 * retried after a backoff, rejected, table missing, fatal), and the isolation pass: an entry of a
 * batch with a row-level rejection is re-sent alone, since Bigtable fans one bad entry's status out
 * to the whole request; a solo rejection is routed to the failure handler, and
 * `maxConsecutiveRejections` of them in a row fail the writer.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type { EntryStatus } from "../../Bigtable/BigtableClient.ts"
import { BigtableError, RpcFailed, TooManyRejections } from "../../Bigtable/BigtableError.ts"
import { FailedMutation } from "../../Bigtable/BigtableFailure.ts"
import * as grpc from "../grpcStatus.ts"
import * as retrySchedule from "../retrySchedule.ts"
import { applied, resolved, route } from "./booking.ts"
import { cutAll, send } from "./dispatch.ts"
import * as metrics from "./metrics.ts"
import * as proto from "./mutationProto.ts"
import { fail, fork, offer, type State } from "./ownerState.ts"
import type { Item } from "./prepare.ts"
import { notFound } from "./repair.ts"
import { afterBudget, classify } from "./retry.ts"
import { progressed } from "./stall.ts"

const rpcFailed = (item: Item, status: EntryStatus): BigtableError =>
  new BigtableError({
    reason: new RpcFailed({
      method: "MutateRows",
      table: item.key,
      code: status.code,
      description: status.message,
      attempts: item.attempts,
      cause: { code: status.code, message: status.message }
    })
  })

const reject = <A, EH, R>(st: State<A, EH, R>, item: Item, status: EntryStatus): Effect.Effect<void, never, R> =>
  Effect.gen(function*() {
    yield* metrics.errorClass(grpc.name(status.code), 1)
    const failed = new FailedMutation({
      destination: item.key,
      table: item.table,
      entry: item.entry,
      payload: proto.encodeEntry(item.entry),
      message: status.message,
      cause: { code: status.code, status: grpc.name(status.code), message: status.message }
    })
    yield* resolved(st, [item])
    yield* route(st, failed)
    st.consecutiveRejections++
    const max = st.w.maxConsecutiveRejections
    if (max !== -1 && st.consecutiveRejections >= max) {
      yield* fail(
        st,
        new BigtableError({ reason: new TooManyRejections({ table: item.key, rejections: st.consecutiveRejections }) })
      )
    }
  })

const onStatuses = <A, EH, R>(
  st: State<A, EH, R>,
  items: ReadonlyArray<Item>,
  statuses: ReadonlyArray<EntryStatus>
): Effect.Effect<void, never, R> =>
  Effect.gen(function*() {
    const solo = items.length === 1
    const ok: Array<Item> = []
    const retry: Array<Item> = []
    const lastStatus = new Map<Item, EntryStatus>()
    for (let i = 0; i < items.length; i++) {
      if (st.failure !== undefined) return
      const item = items[i] as Item
      const status = statuses[i] ?? { code: undefined, message: "no status" }
      const verdict = status.code === 0
        ? "applied"
        : afterBudget(classify([status.code]), item.attempts, retrySchedule.attemptBudget(st.w.retry))
      switch (verdict) {
        case "applied":
          ok.push(item)
          break
        case "retry":
          yield* metrics.errorClass(grpc.name(status.code), 1)
          retry.push(item)
          lastStatus.set(item, status)
          break
        case "rowLevel":
          if (solo || item.isolated) yield* reject(st, item, status)
          else {
            // A batched rejection: Bigtable fans one bad entry's status to the whole request.
            item.isolated = true
            st.parked++
            yield* Metric.modify(metrics.parkedEntries, 1)
            yield* send(st, [item])
          }
          break
        case "tableNotFound":
          yield* notFound(st, item, status)
          break
        case "fatal":
          yield* metrics.errorClass(grpc.name(status.code), 1)
          return yield* fail(st, rpcFailed(item, status))
      }
    }
    yield* applied(st, ok)
    if (retry.length > 0) {
      for (const item of retry) st.summary.add(item.key, "retries", 1)
      const attempt = Math.max(...retry.map((item) => item.attempts))
      const delay = yield* retrySchedule.delayAfter(st.w.retry, attempt)
      if (Option.isNone(delay)) {
        const first = retry[0] as Item
        return yield* fail(st, rpcFailed(first, lastStatus.get(first) ?? { code: undefined, message: "no status" }))
      }
      yield* fork(st, Effect.sleep(delay.value).pipe(Effect.andThen(offer(st, { _tag: "Resend", items: retry }))))
    }
  })

/**
 * A `Completed` command. Once the last call in flight is booked while admission waits, the open
 * batches are sent: they hold the permits admission waits for.
 *
 * @internal
 */
export const onCompleted = <A, EH, R>(
  st: State<A, EH, R>,
  items: ReadonlyArray<Item>,
  statuses: ReadonlyArray<EntryStatus>
): Effect.Effect<void, never, R> => {
  st.requestsInFlight--
  return Effect.andThen(
    Effect.andThen(Effect.map(Clock.currentTimeMillis, (now) => progressed(st, now)), onStatuses(st, items, statuses)),
    Effect.suspend(() => {
      if (!st.admissionWaiting || st.requestsInFlight > 0) return Effect.void
      st.admissionWaiting = false
      return cutAll(st)
    })
  )
}
