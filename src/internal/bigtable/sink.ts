/**
 * The Bigtable `Sink`: a scoped writer per run, `write` per chunk, an optional flush timer, and a
 * final flush before the summary.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import type { BigtableClient } from "../../Bigtable/BigtableClient.ts"
import type { BigtableSinkOptions } from "../../Bigtable/BigtableSink.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as options from "./options.ts"
import type { WriterError } from "./owner.ts"
import * as writer from "./writer.ts"

/** @internal */
export const make = <A, EH = never, R = never>(
  sinkOptions: BigtableSinkOptions<A, EH, R>
): Sink.Sink<WriteSummary, A, never, WriterError<EH>, BigtableClient | R> =>
  Sink.make<A>()((input) =>
    Effect.gen(function*() {
      const settings = yield* options.settings(sinkOptions)
      const flushInterval = settings.flushInterval
      const w = yield* writer.fromSettings(settings)
      const consume = input.pipe(Stream.runForEachArray((chunk) => w.write(chunk)))
      if (flushInterval === undefined) yield* consume
      else {
        const timer = Effect.forever(Effect.sleep(flushInterval).pipe(Effect.andThen(w.flush)))
        yield* Effect.raceFirst(consume, timer)
      }
      yield* w.flush
      return yield* w.summary
    })
  )
