/**
 * The periodic progress log of a long run, switched on by `ProgressLog.every(interval)` around the
 * program (an Effect reference the writer reads when it is built): every interval, one INFO line
 * per writer with the records written and their rate since the last line, the records in flight,
 * retries, routed failures and skipped records. Off by default.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"

/** The interval of the progress log; `undefined`: off. @internal */
export const Interval = Context.Reference<Duration.Duration | undefined>(
  "effect-gcp-sinks/Sink/ProgressLog",
  { defaultValue: () => undefined }
)

/** One progress line: the counts, and the rate of records written since the previous line. @internal */
export const line = (
  name: string,
  summary: WriteSummary,
  inFlight: number,
  rate: number
): string =>
  `${name}: ${summary.recordsWritten} records written (${Math.round(rate)}/s), ${inFlight} in flight, ` +
  `${summary.retries} retries, ${summary.recordsFailed} failed, ${summary.recordsSkipped} skipped`

/**
 * Logs the progress of the writer `name` every `Interval` while the scope is open, when the
 * reference is set.
 *
 * @internal
 */
export const start = Effect.fnUntraced(
  function*(name: string, summary: Effect.Effect<WriteSummary>, inFlight: () => number) {
    const every = yield* Interval
    if (every === undefined) return
    let last = { written: 0, at: yield* Clock.currentTimeMillis }
    const tick = Effect.gen(function*() {
      yield* Effect.sleep(every)
      const s = yield* summary
      const at = yield* Clock.currentTimeMillis
      const rate = at === last.at ? 0 : ((s.recordsWritten - last.written) * 1000) / (at - last.at)
      last = { written: s.recordsWritten, at }
      yield* Effect.logInfo(line(name, s, inFlight(), rate)).pipe(Effect.annotateLogs({ writer: name }))
    })
    yield* Effect.forkScoped(Effect.forever(tick))
  }
)
