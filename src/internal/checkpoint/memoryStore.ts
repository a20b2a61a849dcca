/**
 * The in-memory `CheckpointStore`: a map whose compare-and-set runs in one synchronous step.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** @internal */
export interface Fields {
  readonly writerId: string
  readonly expectedPreviousId?: string | undefined
  readonly actualId?: string | undefined
}

/** @internal */
export const make = <R extends { readonly id: string }, C>(options: { readonly conflict: (fields: Fields) => C }) => {
  const latest = new Map<string, R>()
  return {
    load: (writerId: string) => Effect.sync(() => Option.fromUndefinedOr(latest.get(writerId))),
    save: (writerId: string, record: R, expectedPreviousId: string | undefined): Effect.Effect<void, C> =>
      Effect.suspend(() => {
        const actualId = latest.get(writerId)?.id
        if (actualId !== expectedPreviousId) {
          return Effect.fail(options.conflict({ writerId, expectedPreviousId, actualId }))
        }
        latest.set(writerId, record)
        return Effect.void
      })
  }
}
