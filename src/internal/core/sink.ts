/**
 * The `Sink` every backend builds on its writer: a writer per run, `write` per chunk, an optional
 * timer flush, a final flush at the end of input, and the summary as the result.
 *
 * **Details**
 *
 * The timer races the input: a timer flush that fails (the writer latched a failure) ends the run
 * with that failure at once, even while the input is idle.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import type { Writer } from "../../Sink/Writer.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"

/** @internal */
export const make = <A, E, E0, R>(
  build: Effect.Effect<
    { readonly writer: Writer<A, E>; readonly flushInterval: Duration.Duration | undefined },
    E0,
    R | Scope.Scope
  >
): Sink.Sink<WriteSummary, A, never, E | E0, Exclude<R, Scope.Scope>> =>
  Sink.make<A>()(
    Effect.fnUntraced(function*(input: Stream.Stream<A>) {
      const { flushInterval, writer } = yield* build
      const consume = input.pipe(Stream.runForEachArray((chunk) => writer.write(chunk)))
      if (flushInterval === undefined) yield* consume
      else {
        const timer = Effect.forever(Effect.sleep(flushInterval).pipe(Effect.andThen(writer.flush)))
        yield* Effect.raceFirst(consume, timer)
      }
      yield* writer.flush
      return yield* writer.summary
    })
  )
