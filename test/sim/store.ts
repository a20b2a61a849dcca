/**
 * A simulated durable checkpoint store: the library's own compare-and-set store
 * (`checkpointMemory.ts`, the code of `CheckpointStore.memory`) kept by the world, so it outlives
 * the processes that use it, behind a network with faults: a round trip of latency, a save or claim
 * that fails before it lands, and one that landed but whose answer was lost (the writer sees an `Io`
 * error; the record, or the claim, is in force).
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as memory from "../../src/internal/checkpoint/memoryStore.ts"
import {
  type CheckpointClaim,
  CheckpointConflict,
  CheckpointRecord,
  CheckpointStore,
  CheckpointStoreError,
  CheckpointStoreIo
} from "../../src/Sink.ts"
import type { Process, World } from "./kernel.ts"

export interface StoreFaults {
  readonly latency: readonly [number, number]
  readonly failBeforeSave: number
  readonly lostAfterSave: number
}

export const noStoreFaults: StoreFaults = { latency: [1, 5], failBeforeSave: 0, lostAfterSave: 0 }

export interface SimStore {
  readonly layer: (proc: Process) => Layer.Layer<CheckpointStore>
  /** Saves that landed, in order: (writer, record id, process). */
  readonly saves: Array<{ readonly writerId: string; readonly id: string; readonly proc: string }>
  /** Claims that landed, in order: (writer, claim id, process). */
  readonly claims: Array<{ readonly writerId: string; readonly id: string; readonly proc: string }>
  /** Turns the faults off (the end of a storm). */
  readonly calm: () => void
}

const io = (writerId: string, detail: string) =>
  new CheckpointStoreError({ writerId, reason: new CheckpointStoreIo({ detail }) })

export const make = (world: World, faults: StoreFaults): SimStore => {
  const rng = world.rng.fork()
  const durable = memory.make<CheckpointRecord, CheckpointConflict>({
    conflict: (f) => new CheckpointConflict(f),
    withId: (record, id) => new CheckpointRecord({ ...record, id })
  })
  const saves: SimStore["saves"] = []
  const claims: SimStore["claims"] = []
  let calm = false
  const latency = () => rng.between(faults.latency[0], faults.latency[1])
  const random: Random.Random = { nextDoubleUnsafe: rng.next, nextIntUnsafe: () => rng.int(Number.MAX_SAFE_INTEGER) }

  const roundTrip = <A, E>(proc: Process, apply: () => Exit.Exit<A, E>, lost?: () => E): Effect.Effect<A, E> =>
    Effect.callback<A, E>((resume) => {
      world.at(latency(), undefined, () => {
        const exit = apply()
        const answer = lost !== undefined && Exit.isSuccess(exit) && !calm && rng.chance(faults.lostAfterSave)
          ? Exit.fail(lost())
          : exit
        world.at(latency(), undefined, () => world.deliver(proc, () => resume(answer)))
      })
    })

  const layer = (proc: Process) =>
    Layer.succeed(CheckpointStore, {
      load: (writerId: string): Effect.Effect<Option.Option<CheckpointRecord>, CheckpointStoreError> =>
        roundTrip(proc, () => Effect.runSyncExit(durable.load(writerId))),
      claim: (writerId: string) =>
        roundTrip<CheckpointClaim, CheckpointConflict | CheckpointStoreError>(
          proc,
          () => {
            if (!calm && rng.chance(faults.failBeforeSave)) {
              world.trace(() => `${proc.name}: checkpoint claim fails before landing`)
              return Exit.fail(io(writerId, "claim failed (simulated)"))
            }
            // the claim's id drawn from the seed (the store runs outside any process's fiber)
            const exit = Effect.runSyncExit(durable.claim(writerId).pipe(Effect.provideService(Random.Random, random)))
            if (Exit.isSuccess(exit)) claims.push({ writerId, id: exit.value.id, proc: proc.name })
            world.trace(() => `${proc.name}: checkpoint claim ${Exit.isSuccess(exit) ? exit.value.id : "failed"}`)
            return exit
          },
          () => {
            world.trace(() => `${proc.name}: checkpoint claim landed, answer lost`)
            return io(writerId, "answer lost (simulated)")
          }
        ),
      save: (writerId: string, record: CheckpointRecord, expectedPreviousId: string | undefined) =>
        roundTrip<void, CheckpointConflict | CheckpointStoreError>(
          proc,
          () => {
            if (!calm && rng.chance(faults.failBeforeSave)) {
              world.trace(() => `${proc.name}: checkpoint save ${record.id} fails before landing`)
              return Exit.fail(io(writerId, "save failed (simulated)"))
            }
            const exit = Effect.runSyncExit(durable.save(writerId, record, expectedPreviousId))
            if (Exit.isSuccess(exit)) saves.push({ writerId, id: record.id, proc: proc.name })
            world.trace(() =>
              `${proc.name}: checkpoint save ${record.id} after ${expectedPreviousId ?? "none"}: ${
                Exit.isSuccess(exit) ? "landed" : "conflict"
              }`
            )
            return exit
          },
          () => {
            world.trace(() => `${proc.name}: checkpoint save ${record.id} landed, answer lost`)
            return io(writerId, "answer lost (simulated)")
          }
        )
    })

  return { layer, saves, claims, calm: () => void (calm = true) }
}
