/**
 * The ownership rule of the checkpoint stores (ADR 0040), watched from the processes' side of any
 * store: a claim (`Checkpoint.resume`) passes the writer to its claimant, so once a claim has been
 * answered, no save of a process that claimed before it may succeed. Exactly: a save of process P
 * that succeeded breaks the rule when another process Q's claim was answered before P's save was
 * issued, and P's own claim was answered before Q's was issued (so P's claim landed first, and Q's
 * fenced it). Answers lost to faults are not counted, which can only hide a break, never invent one.
 *
 * The same watch tells the run's progress (the life's liveness bound): the saves answered.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { CheckpointStore } from "../../src/Sink.ts"
import type { Process, World } from "./kernel.ts"
import type { Watch } from "./life.ts"

interface Claim {
  readonly proc: string
  readonly issued: number
  readonly answered: number
  readonly id: string
}

export interface Ownership extends Watch {
  /** `layer`'s store, its claims and saves as `proc` sees them recorded. */
  readonly watched: (proc: Process, layer: Layer.Layer<CheckpointStore>) => Layer.Layer<CheckpointStore>
}

export const make = (world: World): Ownership => {
  const claims: Array<Claim> = []
  const broken: Array<string> = []
  let saved = 0

  const checkSave = (proc: string, issued: number, id: string) => {
    const own = claims.filter((c) => c.proc === proc)
    for (const other of claims) {
      if (other.proc === proc || other.answered >= issued) continue
      const fencedBy = own.find((c) => c.answered < other.issued)
      if (fencedBy !== undefined && broken.length < 5) {
        broken.push(
          `ownership: ${proc} saved ${id} at ${world.now} ms though ${other.proc} claimed the writer (${other.id}, ` +
            `answered at ${other.answered} ms) after ${proc}'s claim ${fencedBy.id}`
        )
      }
    }
  }

  const watched = (proc: Process, layer: Layer.Layer<CheckpointStore>) =>
    Layer.effect(
      CheckpointStore,
      Effect.gen(function*() {
        const store = yield* CheckpointStore
        return CheckpointStore.of({
          load: store.load,
          claim: (writerId) =>
            Effect.suspend(() => {
              const issued = world.now
              return Effect.tap(store.claim(writerId), (claimed) =>
                Effect.sync(() => void claims.push({ proc: proc.name, issued, answered: world.now, id: claimed.id })))
            }),
          save: (writerId, record, expected) =>
            Effect.suspend(() => {
              const issued = world.now
              return Effect.tap(store.save(writerId, record, expected), () =>
                Effect.sync(() => {
                  saved++
                  checkSave(proc.name, issued, record.id)
                }))
            })
        })
      })
    ).pipe(Layer.provide(layer))

  return { watched, progress: () => saved, violations: () => broken }
}
