/**
 * The deadlines of many calls kept by one fiber (issue 38). A call arms its deadline when it starts
 * and clears it when it ends, with no fiber, timer or race of its own; the keeper sleeps until the
 * earliest pending deadline, on the clock of the fiber that made it, and runs the expiries that are
 * due. Racing each call against a sleep (`Effect.timeoutOrElse`) forks two fibers and interrupts the
 * loser per call: measured at ~30 us of a `CheckAndMutateRow`'s ~110 us of client CPU, and 30-50 us
 * of a 100-entry `MutateRows` (bench/bigtableCallCpu.bench.ts).
 *
 * **Details**
 *
 * - Time is the clock's monotonic reading: a stepped wall clock moves no deadline. A deadline within
 *   a microsecond of the reading is due: float rounding can leave the reading a hair below a due time
 *   the clock has reached, and a sleep that short would end at once (a TestClock would never move).
 * - The keeper is woken only when a deadline is armed that is due before the time it sleeps until
 *   (or it sleeps on nothing). A cleared deadline does not wake it: it wakes at the time it chose and
 *   sleeps again until what is then earliest.
 * - It sleeps at most {@link maxSleep} at a time, and on nothing (no timer) once nothing is pending:
 *   after the last call the process keeps no timer of the keeper's for longer than that, whatever the
 *   calls' timeout, so a client never closed (and its connection idle, which keeps nothing alive)
 *   does not hold the process up. With calls in flight the keeper so wakes once a second, however
 *   many calls run.
 * - An expiry runs on the keeper's fiber and must not block; one that throws is logged and the
 *   keeper goes on (the other deadlines still expire).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as Heap from "./deadlineHeap.ts"

/** @internal */
export interface DeadlineKeeper {
  /** Runs `expire` once `limit` has passed, unless the returned function (which clears it) runs first. */
  readonly arm: (limit: Duration.Duration, expire: () => void) => () => void
  /** Deadlines armed and neither cleared nor expired. */
  readonly pending: () => number
  /** Whether the keeper waits with no timer (nothing was pending when it last woke). */
  readonly idle: () => boolean
}

/** The longest the keeper sleeps at a time. @internal */
export const maxSleep: Duration.Duration = Duration.seconds(1)

/** How close to the clock's reading a deadline counts as due (milliseconds). */
const dueSlack = 0.001

/**
 * A keeper on the current fiber's clock, its fiber running in the scope.
 *
 * @internal
 */
export const make: Effect.Effect<DeadlineKeeper, never, Scope.Scope> = Effect.gen(function*() {
  const clock = yield* Clock.Clock
  const heap = Heap.make()
  const now = (): number => Number(clock.monotonicTimeNanosUnsafe()) / 1_000_000
  // what the keeper sleeps until (Infinity: on nothing) and the signal that wakes it earlier
  let target = Infinity
  let wake = Deferred.makeUnsafe<void>()

  const arm = (limit: Duration.Duration, expire: () => void): () => void => {
    const timer = Heap.add(heap, now() + Duration.toMillis(limit), expire)
    if (timer.due < target) Deferred.doneUnsafe(wake, Exit.void)
    return () => void Heap.remove(heap, timer)
  }

  const longest = Duration.toMillis(maxSleep)
  const cycle = Effect.suspend(() => {
    const at = now()
    const failures: Array<unknown> = []
    const due = at + dueSlack
    for (let timer = Heap.takeDue(heap, due); timer !== undefined; timer = Heap.takeDue(heap, due)) {
      try {
        timer.expire()
      } catch (cause) {
        failures.push(cause)
      }
    }
    const next = Heap.earliest(heap)
    target = next === undefined ? Infinity : Math.min(next, at + longest)
    wake = Deferred.makeUnsafe<void>()
    const wait = next === undefined
      ? Deferred.await(wake)
      : Effect.raceFirst(clock.sleep(Duration.millis(target - at)), Deferred.await(wake))
    return failures.length === 0
      ? wait
      : Effect.andThen(Effect.logError("a call's deadline expiry threw", ...failures), wait)
  })

  yield* Effect.forkScoped(Effect.forever(cycle))
  return { arm, pending: () => heap.items.length, idle: () => target === Infinity }
})
