/**
 * Stall reporting (reference 3.4): once a minute passes with MutateRows calls in flight and none
 * answered, the writer logs a warning naming the tables waited on, at most once a minute. There
 * is no sink-side timeout: a call ends by the channel's own deadline or keepalive; the warning
 * makes a stalled service visible before that.
 *
 * **Details**
 *
 * The reference warns from its two waits (admission and flush); here the owner checks on each tick
 * instead, so a stall is reported whether or not a caller is waiting on it.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { State } from "./ownerState.ts"

/** How long calls may stay unanswered before a warning, and the least time between two. @internal */
export const stallWarningAfter = Duration.minutes(1)

/** Progress: a call was answered, or the first of a run of calls was sent. @internal */
export const progressed = <A, EH, R>(st: State<A, EH, R>, now: number): void => {
  st.lastProgressAt = now
}

/**
 * The tick's check: warns when calls have been in flight `stallWarningAfter` since the last answer
 * (or since the first of them was sent) and no warning was given for as long.
 *
 * @internal
 */
export const check = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (st.requestsInFlight === 0) return Effect.void
    const after = Duration.toMillis(stallWarningAfter)
    const waited = now - st.lastProgressAt
    if (waited < after || now - st.lastStallWarningAt < after) return Effect.void
    st.lastStallWarningAt = now
    const tables = [...st.dests].filter(([, d]) => d.inFlight > 0).map(([key]) => key).toSorted()
    return Effect.logWarning(
      `Bigtable has answered no MutateRows call for ${Math.floor(waited / 1000)} s: ` +
        `${st.requestsInFlight} calls (${st.outstanding} entries) in flight, to ${tables.join(", ")}`
    ).pipe(Effect.annotateLogs({ requestsInFlight: st.requestsInFlight, tables: tables.join(",") }))
  })
