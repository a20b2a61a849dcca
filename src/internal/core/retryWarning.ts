/**
 * The warning of a long retry wait, for every backend: once a writer's retries have waited (or are
 * about to wait) `retryWarningAfter` since the first failure of an incident, it logs one warning
 * naming what failed and when it tries next. The incident ends when items leave the writer again
 * (written, routed or resolved); the next failure starts another, with a warning of its own.
 *
 * **Details**
 *
 * The stall warning (`stall.ts`) covers calls that get no answer; this one covers answers that keep
 * failing, which the stall warning counts as progress. The budget itself (`recovery`, `retry`) is
 * unchanged: the warning only makes the wait visible.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"

/** How long retries may wait in one incident before the warning. @internal */
export const retryWarningAfter = Duration.seconds(5)

/** @internal */
export interface RetryWarningState {
  /** When the incident's first retry was scheduled; `undefined` between incidents. */
  since: number | undefined
  warned: boolean
}

/** @internal */
export const makeState = (): RetryWarningState => ({ since: undefined, warned: false })

/** Items left the writer: the incident, if any, is over. @internal */
export const recovered = (st: RetryWarningState): void => {
  st.since = undefined
  st.warned = false
}

/** A failure in a few words: its message (with its status code when it has one), else its text. */
const describe = (failure: unknown): string => {
  if (failure === undefined) return "a failure"
  const message = Predicate.hasProperty(failure, "message") && typeof failure.message === "string"
    ? failure.message
    : String(failure)
  const code = Predicate.hasProperty(failure, "code") && typeof failure.code === "number"
    ? `code ${failure.code}: `
    : ""
  const text = `${code}${message}`
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}

/**
 * A retry of `budget` after `failure` is about to wait `wait`: logs the incident's warning when the
 * wait reaches {@link retryWarningAfter} since its first retry, once.
 *
 * @internal
 */
export const waiting = (
  st: RetryWarningState,
  budget: string,
  wait: Duration.Duration,
  failure: unknown
): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const since = st.since ?? now
    st.since = since
    const until = now + Duration.toMillis(wait)
    if (st.warned || until - since < Duration.toMillis(retryWarningAfter)) return Effect.void
    st.warned = true
    return Effect.logWarning(
      `retrying (${budget} budget) after ${describe(failure)}: ${Math.round((now - since) / 1000)} s since ` +
        `the first failure, next attempt in ${Duration.format(wait)}; the writer fails when the budget runs out`
    ).pipe(Effect.annotateLogs({ budget }))
  })
