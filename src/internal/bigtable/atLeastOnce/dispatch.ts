/**
 * The Bigtable backend's batching and sending: admitted entries join their table's batch (a full
 * batch is sent), batches open for `batchDelay` are sent on the tick, requests are cut from a
 * table's batch or from entries held while the table was repaired (within the batch thresholds and
 * the 100,000-mutation limit), and
 * retried or isolated entries are re-sent. Each request goes through `core.send`, which starts it at
 * once on no fiber (`callNow.ts`) or runs {@link call} on a fiber of its own, and brings the statuses
 * back to `verdict.ts`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { EntryStatus, MutateRowsRequest } from "../../../Bigtable/BigtableClient.ts"
import type { RowMutationEntry } from "../../../Bigtable/RowMutationEntry.ts"
import { hotSpan } from "../../core/hotSpan.ts"
import { emptyArray } from "../../sitelessArrays.ts"
import * as heap from "../heapObjects.ts"
import * as metrics from "../metrics.ts"
import { batchDelay } from "../options.ts"
import * as batcher from "./batcher.ts"
import type { Item } from "./prepare.ts"
import { open } from "./repair.ts"
import type { Dest, Request, State } from "./state.ts"

/** How many entries a call did not apply. @internal */
export const notApplied = (statuses: ReadonlyArray<EntryStatus>): number => {
  let n = 0
  for (const status of statuses) if (status.code !== 0) n++
  return n
}

/**
 * The MutateRows call of one request (one table); runs on its own fiber and never fails. Its span
 * counts the entries not applied (`bigtable.failedEntries`): a failed call is per-entry statuses here,
 * not a failed effect.
 *
 * @internal
 */
export const call = <A, EH, R>(st: State<A, EH, R>, items: Request): Effect.Effect<ReadonlyArray<EntryStatus>> =>
  st.client.mutateRows(publicRequest(st, items)).pipe(
    Effect.tap((statuses) => Effect.annotateCurrentSpan("bigtable.failedEntries", notApplied(statuses))),
    hotSpan(callSpan, callAttributes(items))
  )

/**
 * The MutateRows request of `items` (one table) for the library's own client started at once
 * (`callNow.ts`): over the items themselves, which carry their entries and sizes. @internal
 */
export const mutateRowsRequest = <A, EH, R>(st: State<A, EH, R>, items: Request): MutateRowsRequest =>
  new heap.SizedMutateRows((items[0] as Item).table.tableName, st.settings.appProfileId, items)

/**
 * The MutateRows request of `items` (one table) for a call on a fiber, whose client may be the
 * application's: the public shape, its entries and sizes copied into fields of its own. @internal
 */
export const publicRequest = <A, EH, R>(st: State<A, EH, R>, items: Request): MutateRowsRequest => {
  const entries = emptyArray<RowMutationEntry>()
  const sizes = emptyArray<number>()
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as Item
    entries.push(item.entry)
    sizes.push(item.bytes)
  }
  return new heap.MutateRows((items[0] as Item).table.tableName, st.settings.appProfileId, entries, sizes)
}

/** The span of a MutateRows call. @internal */
export const callSpan = "BigtableSink.mutateRows"

/** The attributes of a call's span. @internal */
export const callAttributes = (items: Request): Record<string, unknown> => ({
  "bigtable.table": (items[0] as Item).key,
  "bigtable.entries": items.length
})

/** Starts one MutateRows call for `items` (one table). @internal */
export const send = <A, EH, R>(st: State<A, EH, R>, items: Request): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (items.length === 0) return Effect.void
    const key = (items[0] as Item).key
    const epoch = st.core.repairs.epoch(key)
    for (const item of items) {
      // its first attempt; a retry is charged by its verdict (`verdict.ts`), not by every send
      if (item.attempts === 0) item.attempts = 1
      item.epoch = epoch
    }
    const dest = st.dests.get(key)
    if (dest !== undefined) dest.requests++
    return st.core.send(items)
  })

/**
 * Sends a table's open batch when none of its requests is out: entries go at once to an idle table
 * and are batched only while a request is out, whose answer sends them (the Go and Java writers'
 * rule), so no entry waits for the batch delay at a low rate. @internal
 */
export const sendIfIdle = <A, EH, R>(st: State<A, EH, R>, dest: Dest): Effect.Effect<void> =>
  dest.requests === 0 && dest.batch.items.length > 0 ? dispatch(st, dest, batcher.cut(dest.batch)) : Effect.void

/**
 * A request of `items` (one table) was answered: the table's batch goes if it has nothing else out,
 * unless the answer failed the writer (`sendNext` false). @internal
 */
export const answered = <A, EH, R>(st: State<A, EH, R>, items: Request, sendNext: boolean): Effect.Effect<void> =>
  Effect.suspend(() => {
    const first = items[0]
    const dest = first === undefined ? undefined : st.dests.get(first.key)
    if (dest === undefined) return Effect.void
    dest.requests--
    return sendNext && !st.core.failed() ? sendIfIdle(st, dest) : Effect.void
  })

/**
 * Sends a table's entries, or holds them while the table is being repaired (or behind entries held
 * before them, until `repair.settled` sends those). @internal
 */
export const dispatch = Effect.fnUntraced(
  function*<A, EH, R>(st: State<A, EH, R>, dest: Dest, items: ReadonlyArray<Item>) {
    if (items.length === 0) return
    if (dest.held.length > 0 || st.core.repairs.active((items[0] as Item).key)) {
      dest.held.push(...items)
      return
    }
    const requests = batcher.requests(items, st.thresholds)
    for (let i = 0; i < requests.length; i++) yield* send(st, requests[i] as Request)
  }
)

/** Sends every open batch. @internal */
export const cutAll = Effect.fnUntraced(function*<A, EH, R>(st: State<A, EH, R>) {
  for (const dest of st.dests.values()) {
    if (dest.batch.items.length > 0) yield* dispatch(st, dest, batcher.cut(dest.batch))
  }
})

/** An admitted slice: its entries join their tables' batches (each holds its permit). @internal */
export const admit = Effect.fnUntraced(
  function*<A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Item>, now: number, generation: number) {
    // the tables of this slice (usually one): each idle one sends what the slice left in its batch
    const touched: Array<Dest> = []
    let last: Dest | undefined
    let lastKey: string | undefined
    // index loops: a `for...of` in a generator allocates its iterator (it may outlive a suspension)
    for (let i = 0; i < items.length; i++) {
      if (st.core.failed()) return
      const item = items[i] as Item
      item.generation = generation
      // consecutive entries of one table (the usual slice) look it up once
      const dest = (item.key === lastKey ? last : st.dests.get(item.key)) ?? (yield* open(st, item))
      if (dest !== last && !touched.includes(dest)) touched.push(dest)
      last = dest
      lastKey = item.key
      dest.inFlight++
      dest.lastUsed = now
      if (dest.batch.items.length === 0) dest.openedAt = now
      const ready = batcher.add(dest.batch, item, st.thresholds)
      for (let r = 0; r < ready.length; r++) yield* dispatch(st, dest, ready[r] as Array<Item>)
    }
    for (let d = 0; d < touched.length; d++) yield* sendIfIdle(st, touched[d] as Dest)
  }
)

/** The tick: sends the batches open for `batchDelay`. @internal */
export const tick = Effect.fnUntraced(function*<A, EH, R>(st: State<A, EH, R>, now: number) {
  const due = Duration.toMillis(batchDelay)
  for (const dest of st.dests.values()) {
    if (dest.batch.items.length > 0 && now - dest.openedAt >= due) {
      yield* dispatch(st, dest, batcher.cut(dest.batch))
    }
  }
})

/** Re-sends entries (after a retry wait, or isolated): isolated ones alone, the rest batched per table. @internal */
export const resend = Effect.fnUntraced(function*<A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Item>) {
  const byTable = new Map<string, Array<Item>>()
  let unparked = 0
  for (const item of items) {
    if (item.parked) {
      item.parked = false
      unparked++
    }
    if (item.isolated) {
      yield* send(st, [item])
      continue
    }
    const list = byTable.get(item.key) ?? []
    list.push(item)
    byTable.set(item.key, list)
  }
  for (const [key, list] of byTable) {
    const dest = st.dests.get(key)
    // a table is forgotten only once nothing of it is outstanding: dropping its entries here
    // would leave them outstanding for ever (every later flush hanging), so this is a defect
    if (dest === undefined) {
      return yield* Effect.die(
        new Error(`BigtableSink: ${list.length} entries to re-send to ${key}, a table the writer no longer tracks`)
      )
    }
    yield* dispatch(st, dest, list)
  }
  if (unparked > 0) yield* st.core.gauge(metrics.parkedEntries, -unparked)
})
