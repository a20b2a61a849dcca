/**
 * Checkpoint ids: `<sequence>-<random>`, the sequence one more than the previous id's (for people
 * reading a store), the random part so that two processes never produce the same id. Saves and
 * claims draw them alike; the random part comes from Effect's `Random`, so a seeded one replays it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"

/** The id after `previous` with random part `random` (a non-negative integer). @internal */
export const idAfter = (previous: string | undefined, random: number): string => {
  const sequence = previous === undefined ? 0 : Number.parseInt(previous, 10)
  const next = Number.isSafeInteger(sequence) && sequence >= 0 ? sequence + 1 : 1
  return `${next}-${random.toString(36).padStart(6, "0")}`
}

/** A random part for {@link idAfter}. @internal */
export const randomPart: Effect.Effect<number> = Random.nextIntBetween(0, 0x7fffffff)

/** The id of the checkpoint (or claim) after `previous`. @internal */
export const nextId = (previous: string | undefined): Effect.Effect<string> =>
  Effect.map(randomPart, (random) => idAfter(previous, random))

/**
 * How many times a claim reads the latest entry and tries to replace it before it gives up with
 * `CheckpointConflict`: each lost race means another writer saved or claimed in between, which a
 * live owner checkpointing every so often does at most a few times during one claim.
 *
 * @internal
 */
export const claimAttempts = 10
