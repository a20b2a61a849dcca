/**
 * The Bigtable backend's verdict on a finished MutateRows call, from each entry's status classified
 * by `transport/classify.ts` (applied, retried after the budget's wait, rejected, table missing, fatal), and the
 * isolation pass: an entry of a batch with a row-level rejection is re-sent alone, since Bigtable
 * fans one bad entry's status out to the whole request; a solo rejection is routed to the failure
 * handler, and `maxConsecutiveRejections` of them in a row fail the writer. The writer core acts on
 * the verdict (`internal/core/owner.ts` `act`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { EntryStatus } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, RpcFailed, TooManyRejections } from "../../../Bigtable/BigtableError.ts"
import { FailedMutation } from "../../../Bigtable/BigtableFailure.ts"
import type { Retry, Routed } from "../../core/backend.ts"
import * as grpc from "../../wire/grpcStatus.ts"
import * as metrics from "../metrics.ts"
import { afterBudget, classify, maxAttemptsOf } from "../transport/classify.ts"
import * as proto from "../transport/mutationProto.ts"
import type { Item } from "./prepare.ts"
import * as repair from "./repair.ts"
import type { Request, State, WriterError } from "./state.ts"

const rpcFailed = (item: Item, status: EntryStatus, attempts = item.attempts): BigtableError =>
  new BigtableError({
    reason: new RpcFailed({
      method: "MutateRows",
      table: item.key,
      code: status.code,
      description: status.message,
      attempts,
      cause: { code: status.code, message: status.message }
    })
  })

const rejected = (item: Item, status: EntryStatus): FailedMutation =>
  new FailedMutation({
    destination: item.key,
    table: item.table,
    entry: item.entry,
    payload: proto.encodeEntry(item.entry),
    message: status.message,
    cause: { code: status.code, status: grpc.name(status.code), message: status.message }
  })

/**
 * A row-level rejection: re-sent alone when it came in a batch (the isolation pass), routed when it
 * was alone; the writer's failure once `maxConsecutiveRejections` were routed in a row.
 */
const rowLevel = Effect.fnUntraced(function*<A, EH, R>(
  st: State<A, EH, R>,
  item: Item,
  status: EntryStatus,
  solo: boolean,
  routed: Array<Routed<Item, FailedMutation>>,
  resend: Array<Item>
) {
  if (!solo && !item.isolated) {
    // A batched rejection: Bigtable fans one bad entry's status to the whole request.
    item.isolated = true
    yield* st.core.gauge(metrics.parkedEntries, 1)
    resend.push(item)
    return undefined
  }
  yield* metrics.errorClass(grpc.name(status.code), 1)
  routed.push({ item, failure: rejected(item, status) })
  st.consecutiveRejections++
  const max = st.w.maxConsecutiveRejections
  if (max === -1 || st.consecutiveRejections < max) return undefined
  return new BigtableError({
    reason: new TooManyRejections({ table: item.key, rejections: st.consecutiveRejections })
  })
})

const noStatus: EntryStatus = { code: undefined, message: "no status" }

/**
 * Entries answered with a transient status go again after the `retry` budget's wait for the latest
 * attempt that failed, each charged one more attempt of that budget (only these re-sends are: one
 * after its table's repair, or alone in the isolation pass, is not a retry of a transient status).
 */
const retryOf = <EH>(entries: ReadonlyArray<Item>, status: EntryStatus): Retry<Item, WriterError<EH>> | undefined => {
  const first = entries[0]
  if (first === undefined) return undefined
  const failed = first.attempts
  let latest = 0
  for (const item of entries) {
    latest = Math.max(latest, item.attempts)
    item.attempts++
  }
  return { items: entries, attempt: latest, budget: "retry", exhausted: () => rpcFailed(first, status, failed) }
}

/** Whether every entry has status OK (the usual answer: its verdict is the request written whole). */
const allApplied = (items: Request, statuses: ReadonlyArray<EntryStatus>): boolean => {
  for (let i = 0; i < items.length; i++) if (statuses[i]?.code !== 0) return false
  return true
}

/** Each entry's verdict, in order; stops at the first that fails the writer. @internal */
export const judge = Effect.fnUntraced(function*<A, EH, R>(
  st: State<A, EH, R>,
  items: Request,
  statuses: ReadonlyArray<EntryStatus>
) {
  if (allApplied(items, statuses)) {
    if (items.length > 0) st.consecutiveRejections = 0
    return { written: items, routed: [], resend: [], repair: [], retry: undefined, terminal: undefined }
  }
  const solo = items.length === 1
  const written: Array<Item> = []
  const routed: Array<Routed<Item, FailedMutation>> = []
  const resend: Array<Item> = []
  const missing: Array<{ readonly item: Item; readonly detail: string; readonly cause: unknown }> = []
  const retry: Array<Item> = []
  let retryStatus = noStatus
  let terminal: WriterError<EH> | undefined
  for (let i = 0; i < items.length && terminal === undefined; i++) {
    const item = items[i] as Item
    const status = statuses[i] ?? noStatus
    const verdict = status.code === 0
      ? "applied"
      : afterBudget(classify([status.code]), item.attempts, maxAttemptsOf(st.w.retry))
    switch (verdict) {
      case "applied":
        written.push(item)
        break
      case "retry":
        yield* metrics.errorClass(grpc.name(status.code), 1)
        if (retry.length === 0) retryStatus = status
        retry.push(item)
        break
      case "rowLevel":
        terminal = yield* rowLevel(st, item, status, solo, routed, resend)
        break
      case "tableNotFound":
        missing.push({ item, detail: status.message, cause: status })
        break
      case "fatal":
        yield* metrics.errorClass(grpc.name(status.code), 1)
        terminal = rpcFailed(item, status)
        break
    }
  }
  if (written.length > 0) st.consecutiveRejections = 0
  const repairs = missing.length === 0 ? undefined : yield* repair.troubles(st, missing)
  return {
    written,
    routed,
    resend,
    repair: repairs?.troubles ?? [],
    retry: retryOf<EH>(retry, retryStatus),
    terminal: terminal ?? repairs?.terminal
  }
})
