/**
 * The in-memory `CheckpointStore`: a map whose compare-and-set and claim run in one synchronous step.
 *
 * Each writer's entry is its latest record, or a bare claim (an id with no record: a writer claimed
 * before its first checkpoint). The id of the entry is what the next save must expect.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ids from "./ids.ts"

/** @internal */
export interface Fields {
  readonly writerId: string
  readonly expectedPreviousId?: string | undefined
  readonly actualId?: string | undefined
}

/** What a claim returns: the id the next save expects, and the latest record under that id. @internal */
export interface Claimed<R> {
  readonly id: string
  readonly record: Option.Option<R>
}

/** A writer's latest entry: a record, or a bare claim. */
interface Entry<R> {
  readonly id: string
  readonly record: R | undefined
}

/** @internal */
export const make = <R extends { readonly id: string }, C>(options: {
  readonly conflict: (fields: Fields) => C
  /** The record with another id (a claim keeps the record under the claim's id). */
  readonly withId: (record: R, id: string) => R
}) => {
  const latest = new Map<string, Entry<R>>()
  return {
    load: (writerId: string) => Effect.sync(() => Option.fromUndefinedOr(latest.get(writerId)?.record)),
    save: (writerId: string, record: R, expectedPreviousId: string | undefined): Effect.Effect<void, C> =>
      Effect.suspend(() => {
        const actualId = latest.get(writerId)?.id
        if (actualId !== expectedPreviousId) {
          return Effect.fail(options.conflict({ writerId, expectedPreviousId, actualId }))
        }
        latest.set(writerId, { id: record.id, record })
        return Effect.void
      }),
    // the random part is drawn first, so that reading and replacing the entry is one step
    claim: (writerId: string): Effect.Effect<Claimed<R>> =>
      Effect.map(ids.randomPart, (random) => {
        const current = latest.get(writerId)
        const id = ids.idAfter(current?.id, random)
        const record = current?.record === undefined ? undefined : options.withId(current.record, id)
        latest.set(writerId, { id, record })
        return { id, record: Option.fromUndefinedOr(record) }
      })
  }
}
