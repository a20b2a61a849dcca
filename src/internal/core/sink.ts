/**
 * The `Sink` every backend builds on its writer: a writer per run, `write` per chunk, an optional
 * timer flush, a final flush at the end of input, and the summary as the result.
 *
 * **Details**
 *
 * The timer races the input: a timer flush that fails (the writer latched a failure) ends the run
 * with that failure at once, even while the input is idle. It ticks at a fixed rate: a flush that
 * outlasts the interval (its barrier waits for answers) is followed at once by the next, so what a
 * record left with the failure handler is flushed within an interval of the last tick, not a whole
 * flush plus an interval.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
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
      else yield* Effect.raceFirst(consume, everyInterval(flushInterval, writer.flush))
      yield* writer.flush
      return yield* writer.summary
    })
  )

/**
 * Runs `flush` every `interval`, on ticks a fixed interval apart from the first; a tick that falls
 * due while a flush runs flushes as soon as it ends (missed ticks are not made up).
 *
 * @internal
 */
export const everyInterval: <E>(interval: Duration.Duration, flush: Effect.Effect<void, E>) => Effect.Effect<never, E> =
  Effect.fnUntraced(function*<E>(interval: Duration.Duration, flush: Effect.Effect<void, E>) {
    const millis = Duration.toMillis(interval)
    let now = yield* Clock.currentTimeMillis
    let due = now + millis
    while (true) {
      yield* Effect.sleep(due - now)
      yield* flush
      // the next tick, or now when the flush ran past it (`due` is never behind `now`: one reading a tick)
      now = yield* Clock.currentTimeMillis
      due = Math.max(due + millis, now)
    }
  })
