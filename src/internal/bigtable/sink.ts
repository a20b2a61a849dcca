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
import type { BigtableSinkOptions, Handler } from "../../Bigtable/BigtableSink.ts"
import type { HandlerContext, HandlerError, WithFailureHandler } from "../../Sink/SinkOptions.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as options from "./options.ts"
import type { WriterError } from "./owner.ts"
import * as writer from "./writer.ts"

/** @internal */
export const make = <A, H extends Handler | undefined>(
  sinkOptions: WithFailureHandler<BigtableSinkOptions<A>, H>
): Sink.Sink<WriteSummary, A, never, WriterError<HandlerError<H>>, BigtableClient | HandlerContext<H>> =>
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
