/**
 * Stall reporting (reference 3.4), for every backend: once a minute passes with requests in flight
 * and none answered, the writer logs a warning naming what it waits on, at most once a minute. A
 * call ends by its own deadline (`responseTimeout`) or the channel's keepalive; the warning makes a
 * stalled service visible before that.
 *
 * **Details**
 *
 * The reference warns from its two waits (admission and flush); here the owner checks on each tick
 * instead, so a stall is reported whether or not a caller is waiting on it.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** How long requests may stay unanswered before a warning, and the least time between two. @internal */
export const stallWarningAfter = Duration.minutes(1)

/** @internal */
export interface StallState {
  /** When a request was last answered, or the first of a run was sent. */
  lastProgressAt: number
  /** When the last warning was logged. */
  lastWarningAt: number
}

/** @internal */
export const makeState = (): StallState => ({ lastProgressAt: 0, lastWarningAt: Number.NEGATIVE_INFINITY })

/** Progress: a request was answered, or the first of a run of requests was sent. @internal */
export const progressed = (st: StallState, now: number): void => {
  st.lastProgressAt = now
}

/**
 * The tick's check: warns when requests have been in flight `stallWarningAfter` since the last
 * answer (or since the first of them was sent) and no warning was given for as long.
 *
 * @internal
 */
export const check = (
  st: StallState,
  now: number,
  requestsInFlight: number,
  report: {
    readonly stallMessage: (waitedMillis: number) => { readonly message: string; readonly destinations: string }
  }
): Effect.Effect<void> => {
  if (requestsInFlight === 0) return Effect.void
  const after = Duration.toMillis(stallWarningAfter)
  const waited = now - st.lastProgressAt
  if (waited < after || now - st.lastWarningAt < after) return Effect.void
  st.lastWarningAt = now
  const { destinations, message } = report.stallMessage(waited)
  return Effect.logWarning(message).pipe(Effect.annotateLogs({ requestsInFlight, tables: destinations }))
}
