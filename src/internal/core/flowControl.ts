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
export class Permit {
  readonly units: number
  readonly bytes: number
  constructor(units: number, bytes: number) {
    this.units = units
    this.bytes = bytes
  }
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

/** The counts and the line of waiters of one bound; every operation synchronous. */
class Ledger {
  units = 0
  bytes = 0
  readonly waiters: Array<Waiter> = []
  unitsLimit: number
  bytesLimit: number
  readonly resumeAt: number
  constructor(unitsLimit: number, bytesLimit: number, resumeAt: number) {
    this.unitsLimit = unitsLimit
    this.bytesLimit = bytesLimit
    this.resumeAt = resumeAt
  }

  fits(p: Permit): boolean {
    return this.units + p.units <= this.unitsLimit && this.bytes + p.bytes <= this.bytesLimit
  }

  take(p: Permit): void {
    this.units += p.units
    this.bytes += p.bytes
  }

  /** Takes `p` when it fits and no one waits before it. */
  tryTake(p: Permit): boolean {
    if (this.waiters.length > 0 || !this.fits(p)) return false
    this.take(p)
    return true
  }

  /** Serves the waiters in order while the first fits; each resumes later, never in the releaser's stack. */
  wake(): void {
    // on the releasing fiber's dispatcher, as Effect's semaphore wakes (the owner's: a microtask)
    const current = Fiber.getCurrent()?.currentDispatcher
    while (this.waiters.length > 0) {
      const first = this.waiters[0] as Waiter
      if (!this.fits(first.permit)) return
      this.waiters.shift()
      this.take(first.permit)
      first.granted = true
      const dispatcher = current ?? first.scheduler.makeDispatcher()
      dispatcher.scheduleTask(() => first.resume(Effect.void), 0)
    }
  }

  release(p: Permit): void {
    this.units -= p.units
    this.bytes -= p.bytes
    if (this.waiters.length > 0 && this.units <= this.resumeAt) this.wake()
  }

  /** An interrupted wait: its place in line, or the permit taken for it, goes back. */
  cancel(w: Waiter): void {
    if (w.granted) {
      w.granted = false
      this.release(w.permit)
      return
    }
    const at = this.waiters.indexOf(w)
    if (at < 0) return
    this.waiters.splice(at, 1)
    // the first waiter may have been holding back the ones behind it
    if (at === 0) this.wake()
  }
}

/** Waits in line for `p`, which is taken for the waiter before it resumes. */
const waitFor = (ledger: Ledger, p: Permit): Effect.Effect<void> =>
  Effect.suspend(() => {
    let waiter: Waiter | undefined
    return Effect.callback<void>(function(resume) {
      waiter = { permit: p, scheduler: this, resume, granted: false }
      ledger.waiters.push(waiter)
      ledger.wake()
    }).pipe(
      // while it waits, and between the wake and the resumption's end: one clean-up for both
      Effect.onInterrupt(() => Effect.sync(() => waiter !== undefined && ledger.cancel(waiter)))
    )
  })

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
  const maxUnits = Math.max(1, Math.floor(bounds.maxUnits))
  const maxBytes = Math.max(1, Math.floor(bounds.maxBytes))
  const ledger = new Ledger(maxUnits, maxBytes, bounds.resumeAtUnits ?? Number.POSITIVE_INFINITY)
  const tryAcquireUnsafe = (p: Permit): boolean => ledger.tryTake(p)
  const releaseUnsafe = (p: Permit): void => ledger.release(p)
  return {
    maxUnits,
    maxBytes,
    tryAcquireUnsafe,
    tryAcquire: (p) => Effect.sync(() => ledger.tryTake(p)),
    acquire: (p, onWait) =>
      Effect.suspend(() => {
        if (ledger.tryTake(p)) return Effect.void
        return onWait === undefined ? waitFor(ledger, p) : Effect.andThen(onWait, waitFor(ledger, p))
      }),
    releaseUnsafe,
    release: (p) => Effect.sync(() => ledger.release(p)),
    openAll: Effect.sync(() => {
      ledger.unitsLimit = Number.POSITIVE_INFINITY
      ledger.bytesLimit = Number.POSITIVE_INFINITY
      ledger.wake()
    })
  }
}

/** @internal */
export const make = (bounds: { readonly maxUnits: number; readonly maxBytes: number }): Effect.Effect<FlowController> =>
  Effect.sync(() => makeUnsafe(bounds))
