/**
 * A MutateRows call started at once on the owner's fiber, with no fiber of its own (`Delivery.start`):
 * a fiber a call cost ~3 KB, two fiber runs and a share of ~90 Effect steps. Taken when the client is
 * one the library built (`connect.mutateRowsNowOf`) and its transport can start the call now; else
 * the core runs `dispatch.call` on a fiber, which gives the same statuses, span and deadline log.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { EntryStatus } from "../../../Bigtable/BigtableClient.ts"
import * as CallNow from "../../core/callNow.ts"
import * as deadline from "../../wire/deadline.ts"
import type { MutateRowsNow } from "../transport/client.ts"
import { callAttributes, callSpan, mutateRowsRequest, notApplied } from "./dispatch.ts"
import type { Item } from "./prepare.ts"
import type { Request, State } from "./state.ts"

/**
 * Starts `items`' call with `now`; `deliver` takes its statuses. The span is made once the call
 * started (a call that cannot start now makes none: the fiber's call makes its own), and ends when
 * it answers, or interrupted when the writer closes first; a call past its deadline is logged by
 * the verdict ({@link logExceeded}), on the owner.
 *
 * @internal
 */
export const start = <A, EH, R>(
  st: State<A, EH, R>,
  now: MutateRowsNow,
  items: Request,
  deliver: (statuses: ReadonlyArray<EntryStatus>) => void
): Effect.Effect<(() => void) | undefined> =>
  Effect.flatMap(deadline.responseTimeout(undefined), (limit) => {
    let expired = false
    return CallNow.start<Array<EntryStatus>>(
      callSpan,
      callAttributes(items),
      (call, statuses, span) => {
        try {
          span.attribute("bigtable.failedEntries", notApplied(statuses))
        } finally {
          call.finish(Exit.void, () => {
            if (expired) st.exceeded.set(items, limit)
            deliver(statuses)
          })
        }
      },
      (call) =>
        now(mutateRowsRequest(st, items), limit, call.clock.currentTimeMillisUnsafe(), (statuses, past) => {
          expired = past
          call.answer(statuses)
        })
    )
  })

/**
 * Logs `items`' call if it ended past its deadline (as `client.mutateRows` logs it on a fiber).
 *
 * @internal
 */
export const logExceeded = <A, EH, R>(st: State<A, EH, R>, items: Request): Effect.Effect<void> => {
  const limit: Duration.Duration | undefined = st.exceeded.get(items)
  if (limit === undefined) return Effect.void
  st.exceeded.delete(items)
  return deadline.logExceeded("MutateRows", (items[0] as Item).table.tableName, limit)
}
