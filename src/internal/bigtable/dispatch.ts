/**
 * The owner's sending: requests cut from a table's batch (split under the request limits), held
 * while the table is repaired, each MutateRows call on its own fiber reporting `Completed` back,
 * and the re-sending of retried entries.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as batcher from "./batcher.ts"
import { type Dest, fork, offer, type State } from "./ownerState.ts"
import type { Item } from "./prepare.ts"
import { progressed } from "./stall.ts"

/** Starts one MutateRows call for `items` (one table) on a fiber of its own. @internal */
export const send = <A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Item>): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (items.length === 0) return
    const first = items[0] as Item
    for (const item of items) item.attempts++
    // the first call in flight starts the wait a stall is measured from
    if (st.requestsInFlight === 0) progressed(st, yield* Clock.currentTimeMillis)
    st.requestsInFlight++
    yield* fork(
      st,
      st.client.mutateRows({
        tableName: first.table.tableName,
        appProfileId: st.settings.appProfileId,
        entries: items.map((item) => item.entry),
        entryByteSizes: items.map((item) => item.bytes)
      }).pipe(
        // Captured per request, the call-site stack would cost more than the span itself.
        Effect.withSpan("BigtableSink.mutateRows", {
          attributes: { "bigtable.table": first.key, "bigtable.entries": items.length }
        }, { captureStackTrace: false }),
        Effect.flatMap((statuses) => offer(st, { _tag: "Completed", items, statuses }))
      )
    )
  })

/** Sends a table's entries, or holds them while the table is being repaired. @internal */
export const dispatch = <A, EH, R>(st: State<A, EH, R>, dest: Dest, items: ReadonlyArray<Item>): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (items.length === 0) return
    if (!dest.ready) {
      dest.held.push(...items)
      return
    }
    for (const request of batcher.split(items)) yield* send(st, request)
  })

/** Sends every open batch. @internal */
export const cutAll = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (const dest of st.dests.values()) {
      if (dest.batch.items.length > 0) yield* dispatch(st, dest, batcher.cut(dest.batch))
    }
  })

/** Re-sends entries after their retry backoff: isolated ones alone, the rest batched per table. @internal */
export const onResend = <A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Item>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const byTable = new Map<string, Array<Item>>()
    for (const item of items) {
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
      if (dest !== undefined) yield* dispatch(st, dest, list)
    }
  })
