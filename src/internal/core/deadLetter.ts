/**
 * The dead-letter handler: buffer failures, run the user's sink over them at each barrier (and
 * early once the buffer holds `maxBuffered` failures or `maxBufferedBytes` of payloads).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as O from "../options/schema.ts"

/** @internal */
export const defaultMaxBuffered = 1000

/** @internal */
export const defaultMaxBufferedBytes = 8 * 1024 * 1024

/** @internal */
export interface Handler<F, E, R> {
  readonly open: Effect.Effect<void, E, R>
  readonly handle: (failure: F) => Effect.Effect<void, E, R>
  readonly flush: Effect.Effect<void, E, R>
  readonly close: Effect.Effect<void, never, R>
}

const bytesExpected = "a positive number of bytes (or Infinity)"

const Options = Schema.Struct({
  // any number is a meaning for maxBuffered (at most 1: each failure at once), kept as it was
  maxBuffered: Schema.optionalKey(Schema.Unknown),
  maxBufferedBytes: Schema.Number.annotate({ expected: bytesExpected }).check(
    Schema.isGreaterThanOrEqualTo(1, { expected: bytesExpected })
  ).pipe(O.withDefault(defaultMaxBufferedBytes))
})

/** The payload bytes a failure holds (a `FailedElement`'s `payload`; 0 for anything else). */
const bytesOf = (failure: unknown): number =>
  Predicate.hasProperty(failure, "payload") && failure.payload instanceof Uint8Array ? failure.payload.length : 0

/** `sink`, ending with how many of the elements it pulled it consumed (pulled less leftovers). */
const consumedBy = <F, E, R>(sink: Sink.Sink<unknown, F, F, E, R>): Sink.Sink<number, F, never, E, R> =>
  Sink.fromTransform((upstream, scope) => {
    let pulled = 0
    const counted = Effect.map(upstream, (chunk) => {
      pulled += chunk.length
      return chunk
    })
    return Effect.map(sink.transform(counted, scope), ([, leftover]) => [pulled - (leftover?.length ?? 0)] as const)
  })

/** @internal */
export const deadLetter = <F, E, R, S>(
  sink: Sink.Sink<unknown, F, F, E, R>,
  options: { readonly maxBuffered?: number | undefined; readonly maxBufferedBytes?: number | undefined } | undefined,
  stalled: (remaining: number) => S
): Handler<F, E | S | SinkConfigError, R> => {
  // Every number has a meaning: at most 1 forwards each failure at once, Infinity only at barriers.
  const maxBuffered = Math.max(1, Math.ceil(options?.maxBuffered ?? defaultMaxBuffered))
  // decoded once, now; an invalid option fails `open`, before any failure is handled
  const decoded = Schema.decodeUnknownResult(Options)(options ?? {}, O.parseOptions)
  const maxBytes = Result.isSuccess(decoded) ? decoded.success.maxBufferedBytes : defaultMaxBufferedBytes
  // The writer calls a handler from one fiber at a time; splice hands the whole buffer to one drain.
  const buffer: Array<F> = []
  let bytes = 0
  const counting = consumedBy(sink)
  // The sink runs once per pass over what is left: a sink that ends early (`Sink.take`) is run
  // again on the rest, and one that consumes nothing fails instead of being re-run for ever.
  const drain: Effect.Effect<void, E | S, R> = Effect.gen(function*() {
    let rest: ReadonlyArray<F> = buffer.splice(0, buffer.length)
    bytes = 0
    while (rest.length > 0) {
      const consumed = yield* Stream.run(Stream.fromIterable(rest), counting)
      if (consumed <= 0) return yield* Effect.fail(stalled(rest.length))
      rest = rest.slice(consumed)
    }
  })
  return {
    open: Result.isSuccess(decoded) ? Effect.void : Effect.fail(O.toConfigError("deadLetter")(decoded.failure.issue)),
    handle: (failure) =>
      Effect.suspend(() => {
        buffer.push(failure)
        bytes += bytesOf(failure)
        return buffer.length >= maxBuffered || bytes >= maxBytes ? drain : Effect.void
      }),
    flush: Effect.suspend(() => (buffer.length === 0 ? Effect.void : drain)),
    close: Effect.void
  }
}
