/**
 * The `Sink` on top of the writer: a writer per run, `write` per chunk, an optional timer flush,
 * a final flush at the end of input, and the summary as the result.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schedule from "effect/Schedule"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import type { BigQueryClient } from "../../BigQuery/BigQueryClient.ts"
import type { BigQueryError } from "../../BigQuery/BigQueryError.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import type { Settings } from "./options.ts"
import * as writer from "./writer.ts"

/**
 * A timer flush failing is not lost: the writer keeps the error and the next write or the final
 * flush fails with it, so the timer loop only stops.
 *
 * @internal
 */
export const make = <A, E, R>(
  settings: Settings<A, E, R>
): Sink.Sink<WriteSummary, A, never, BigQueryError | E, BigQueryClient | R> =>
  Sink.make<A>()((input) =>
    Effect.gen(function*() {
      const w = yield* writer.make(settings)
      const interval = settings.stream.flushInterval
      if (interval !== undefined) {
        yield* Effect.forkScoped(
          Effect.exit(Effect.repeat(Effect.delay(w.flush, interval), Schedule.forever)).pipe(
            Effect.tap((exit) =>
              Exit.isFailure(exit) ? Effect.logDebug("timer flush stopped by a failure") : Effect.void
            )
          )
        )
      }
      yield* Stream.runForEachArray(input, (chunk) => w.write(chunk))
      yield* w.flush
      return yield* w.summary
    })
  )
