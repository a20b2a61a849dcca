/**
 * The dead-letter handler: buffer failures, run the user's sink over them at each barrier.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"

/** @internal */
export const defaultMaxBuffered = 1000

/** @internal */
export interface Handler<F, E, R> {
  readonly open: Effect.Effect<void, E, R>
  readonly handle: (failure: F) => Effect.Effect<void, E, R>
  readonly flush: Effect.Effect<void, E, R>
  readonly close: Effect.Effect<void, never, R>
}

/** @internal */
export const deadLetter = <F, E, R>(
  sink: Sink.Sink<unknown, F, F, E, R>,
  options?: { readonly maxBuffered?: number | undefined }
): Handler<F, E, R> => {
  // Every number has a meaning: at most 1 forwards each failure at once, Infinity only at barriers.
  const maxBuffered = Math.max(1, Math.ceil(options?.maxBuffered ?? defaultMaxBuffered))
  // The writer calls a handler from one fiber at a time; splice hands the whole buffer to one drain.
  const buffer: Array<F> = []
  const drain = Effect.suspend(() => {
    if (buffer.length === 0) return Effect.void
    const batch = buffer.splice(0, buffer.length)
    // transduce re-runs the sink until the batch is consumed, so an early-ending sink drops nothing.
    return Stream.fromIterable(batch).pipe(Stream.transduce(sink), Stream.runDrain)
  })
  return {
    open: Effect.void,
    handle: (failure) =>
      Effect.suspend(() => {
        buffer.push(failure)
        return buffer.length >= maxBuffered ? drain : Effect.void
      }),
    flush: drain,
    close: Effect.void
  }
}
