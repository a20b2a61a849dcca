/**
 * Writer-global in-flight bounds: units (entries, rows or requests) and bytes taken together, like the
 * weighted semaphores of Go's `flow_controller.go`. Shared by both backends; the writer's staging bound
 * is one too (units only).
 *
 * **Details**
 *
 * - Admission waits (backpressure) until both bounds have room; nothing is buffered without bound.
 * - A permit over a bound would wait forever: the writer refuses one (a backend bug) before it
 *   asks (`core/writer.ts`).
 * - Both bounds are taken at once, so a waiter never holds one while it waits for the other, and the
 *   waiters are served in order: a large permit is not passed over by smaller ones forever.
 * - Taking, releasing and waking are synchronous (`tryAcquireUnsafe`, `releaseUnsafe`): a write with
 *   room admits a run of slices in one step, and the owner gives permits back in its own. A woken
 *   waiter's permit is taken for it before it runs (it resumes as a task of the releasing fiber's
 *   dispatcher, never inside the releaser's stack); one interrupted before it ran gives that permit back.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scheduler from "effect/Scheduler"

/** What one acquisition took, each within its bound; hand exactly this back to `release`. @internal */
export interface Permit {
  readonly units: number
  readonly bytes: number
}

/** @internal */
export interface FlowController {
  readonly maxUnits: number
  readonly maxBytes: number
  /** Takes a permit when both bounds have room now and no one waits before it. */
  readonly tryAcquireUnsafe: (permit: Permit) => boolean
  /** {@link FlowController.tryAcquireUnsafe} as an Effect. */
  readonly tryAcquire: (permit: Permit) => Effect.Effect<boolean>
  /** Takes a permit, waiting for room; runs `onWait` once first when it would have to wait. */
  readonly acquire: (permit: Permit, onWait?: Effect.Effect<void>) => Effect.Effect<void>
  /** Gives a permit back and wakes the waiters it lets through. */
  readonly releaseUnsafe: (permit: Permit) => void
  readonly release: (permit: Permit) => Effect.Effect<void>
  /**
   * Lets every waiter through, now and later (the bounds become unlimited): once the writer has failed,
   * a waiting write wakes and finds the failure, with no race per wait (`writer.ts`).
   */
  readonly openAll: Effect.Effect<void>
}

/** A waiting acquisition: `granted` once its permit was taken for it, before it resumes. */
interface Waiter {
  readonly permit: Permit
  readonly scheduler: Scheduler.Scheduler
  readonly resume: (effect: Effect.Effect<void>) => void
  granted: boolean
}

/**
 * A bound of `maxUnits` and `maxBytes`. With `resumeAtUnits`, a release wakes the waiters only once the
 * units taken are down to it (a low-water mark): a producer that outruns its consumer then waits once
 * per several items instead of once per item.
 *
 * @internal
 */
export const makeUnsafe = (bounds: {
  readonly maxUnits: number
  readonly maxBytes: number
  readonly resumeAtUnits?: number
}): FlowController => {
  const resumeAt = bounds.resumeAtUnits ?? Number.POSITIVE_INFINITY
  const maxUnits = Math.max(1, Math.floor(bounds.maxUnits))
  const maxBytes = Math.max(1, Math.floor(bounds.maxBytes))
  let unitsLimit = maxUnits
  let bytesLimit = maxBytes
  let units = 0
  let bytes = 0
  const waiters: Array<Waiter> = []

  const fits = (p: Permit): boolean => units + p.units <= unitsLimit && bytes + p.bytes <= bytesLimit
  const take = (p: Permit): void => {
    units += p.units
    bytes += p.bytes
  }
  // serves the waiters in order while the first fits; each resumes later, never in the releaser's stack
  const wake = (): void => {
    while (waiters.length > 0) {
      const first = waiters[0] as Waiter
      if (!fits(first.permit)) return
      waiters.shift()
      take(first.permit)
      first.granted = true
      // on the releasing fiber's dispatcher, as Effect's semaphore wakes (the owner's: a microtask)
      const dispatcher = Fiber.getCurrent()?.currentDispatcher ?? first.scheduler.makeDispatcher()
      dispatcher.scheduleTask(() => first.resume(Effect.void), 0)
    }
  }
  const releaseUnsafe = (p: Permit): void => {
    units -= p.units
    bytes -= p.bytes
    if (waiters.length > 0 && units <= resumeAt) wake()
  }
  // an interrupted wait: its place in line, or the permit taken for it, goes back
  const cancel = (w: Waiter): void => {
    if (w.granted) {
      w.granted = false
      releaseUnsafe(w.permit)
      return
    }
    const at = waiters.indexOf(w)
    if (at < 0) return
    waiters.splice(at, 1)
    // the first waiter may have been holding back the ones behind it
    if (at === 0) wake()
  }
  const tryAcquireUnsafe = (p: Permit): boolean => {
    if (waiters.length > 0 || !fits(p)) return false
    take(p)
    return true
  }
  const wait = (p: Permit): Effect.Effect<void> =>
    Effect.suspend(() => {
      let waiter: Waiter | undefined
      return Effect.callback<void>(function(resume) {
        const w: Waiter = { permit: p, scheduler: this, resume, granted: false }
        waiter = w
        waiters.push(w)
        wake()
        return Effect.sync(() => cancel(w))
      }).pipe(
        // also between the wake and the resumption's end
        Effect.onInterrupt(() => Effect.sync(() => waiter !== undefined && cancel(waiter)))
      )
    })
  const acquire = (p: Permit, onWait?: Effect.Effect<void>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (tryAcquireUnsafe(p)) return Effect.void
      return onWait === undefined ? wait(p) : Effect.andThen(onWait, wait(p))
    })
  return {
    maxUnits,
    maxBytes,
    tryAcquireUnsafe,
    tryAcquire: (p) => Effect.sync(() => tryAcquireUnsafe(p)),
    acquire,
    releaseUnsafe,
    release: (p) => Effect.sync(() => releaseUnsafe(p)),
    openAll: Effect.sync(() => {
      unitsLimit = Number.POSITIVE_INFINITY
      bytesLimit = Number.POSITIVE_INFINITY
      wake()
    })
  }
}

/** @internal */
export const make = (bounds: { readonly maxUnits: number; readonly maxBytes: number }): Effect.Effect<FlowController> =>
  Effect.sync(() => makeUnsafe(bounds))
