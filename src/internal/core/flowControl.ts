/**
 * Writer-global in-flight bounds: a semaphore of units (entries, rows or requests) and a semaphore
 * of bytes, like the weighted semaphores of Go's `flow_controller.go`. Shared by both backends.
 *
 * **Details**
 *
 * - Admission waits (backpressure) until both bounds have room; nothing is buffered without bound.
 * - A permit over a bound would wait forever: the writer refuses one (a backend bug) before it
 *   asks (`core/writer.ts`).
 * - Units are always taken before bytes, so two admitting fibers never wait on each other in a
 *   cycle; an acquisition interrupted halfway gives back what it took.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"

/** What one acquisition took, each within its bound; hand exactly this back to `release`. @internal */
export interface Permit {
  readonly units: number
  readonly bytes: number
}

/** @internal */
export interface FlowController {
  readonly maxUnits: number
  readonly maxBytes: number
  /** Takes a permit, waiting for room; runs `onWait` once first when it would have to wait. */
  readonly acquire: (permit: Permit, onWait?: Effect.Effect<void>) => Effect.Effect<void>
  /** Takes a permit only when both bounds have room now. */
  readonly tryAcquire: (permit: Permit) => Effect.Effect<boolean>
  readonly release: (permit: Permit) => Effect.Effect<void>
  /**
   * Lets every waiter through, now and later (the bounds become unlimited): once the writer has failed,
   * a waiting write wakes and finds the failure, with no race per wait (`writer.ts`).
   */
  readonly openAll: Effect.Effect<void>
}

/** @internal */
export const make = Effect.fnUntraced(function*(bounds: { readonly maxUnits: number; readonly maxBytes: number }) {
  const maxUnits = Math.max(1, Math.floor(bounds.maxUnits))
  const maxBytes = Math.max(1, Math.floor(bounds.maxBytes))
  const units = yield* Semaphore.make(maxUnits)
  const bytes = yield* Semaphore.make(maxBytes)
  const tryAcquire = (p: Permit): Effect.Effect<boolean> =>
    Effect.uninterruptible(Effect.gen(function*() {
      if (!(yield* units.takeIfAvailable(p.units))) return false
      if (yield* bytes.takeIfAvailable(p.bytes)) return true
      yield* units.release(p.units)
      return false
    }))
  const acquireWaiting = (p: Permit): Effect.Effect<void> =>
    Effect.uninterruptibleMask((restore) =>
      restore(units.take(p.units)).pipe(
        Effect.andThen(restore(bytes.take(p.bytes)).pipe(Effect.onInterrupt(() => units.release(p.units)))),
        Effect.asVoid
      )
    )
  const acquire = (p: Permit, onWait?: Effect.Effect<void>): Effect.Effect<void> =>
    Effect.flatMap(tryAcquire(p), (ok) => {
      if (ok) return Effect.void
      return onWait === undefined ? acquireWaiting(p) : Effect.andThen(onWait, acquireWaiting(p))
    })
  const release = (p: Permit): Effect.Effect<void> =>
    Effect.andThen(units.release(p.units), bytes.release(p.bytes)).pipe(Effect.asVoid)
  const openAll = Effect.andThen(units.resize(Number.MAX_SAFE_INTEGER), bytes.resize(Number.MAX_SAFE_INTEGER))
  return { maxUnits, maxBytes, acquire, tryAcquire, release, openAll }
})
