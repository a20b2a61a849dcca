/**
 * The checkpoints one run of a partition's writer saved, so that its stop can tell whether the stored record is
 * still its own. When another owner has checkpointed the partition since (this runner lost the shard's lock:
 * frozen past its expiry, or its lock session ended), the writer's final checkpoint is bound to be refused, and
 * waiting `stopTimeout` for it only keeps the partition from its new owner (a runner that gets the shard back
 * cannot restart it while this stop lasts).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { CheckpointRecord, CheckpointStore } from "../../Sink/CheckpointStore.ts"

/** A run's view of its store. @internal */
export interface OwnSaves {
  /** The store to hand the sink: every save is remembered (before it is sent) as this run's own. */
  readonly store: CheckpointStore["Service"]
  /** Whether the stored record is the one the run restored or one it saved. */
  readonly isOwn: (stored: Option.Option<CheckpointRecord>) => boolean
}

/**
 * Tracks the saves made through `store` by a run that resumed under `claimId` (its claim stored the
 * restored record, if any, again under that id).
 *
 * @internal
 */
export const track = (store: CheckpointStore["Service"], claimId: string): OwnSaves => {
  const own = new Set<string>([claimId])
  let saved = false
  return {
    store: {
      load: store.load,
      claim: store.claim,
      save: (writerId, record, expected) =>
        Effect.suspend(() => {
          // remembered before the save: a record of this run that lands before its answer is still its own
          own.add(record.id)
          saved = true
          return store.save(writerId, record, expected)
        })
    },
    // none stored: nobody has saved since a bare claim (this run's or a later one's, which the
    // load cannot tell apart), so the stop waits for the final checkpoint as usual
    isOwn: (stored) => Option.isNone(stored) ? !saved : own.has(stored.value.id)
  }
}

/**
 * Succeeds once the stored record of `writerId` is found not to be the run's own (another owner checkpointed);
 * never otherwise, nor when the store cannot be read (the stop then waits for the final checkpoint as usual).
 *
 * @internal
 */
export const superseded = (saves: OwnSaves, writerId: string): Effect.Effect<void> =>
  saves.store.load(writerId).pipe(
    Effect.flatMap((stored) => saves.isOwn(stored) ? Effect.never : Effect.void),
    Effect.catch(() => Effect.never)
  )
