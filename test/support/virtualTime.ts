/**
 * Running an effect under the TestClock when it both sleeps and waits on real I/O (a loopback fake):
 * the clock is moved in small steps, and between steps the event loop gets a turn, so a socket's
 * answer arrives before virtual time runs far ahead of it (a deadline cannot fire while a real
 * round trip is pending unless thousands of turns pass).
 */
import { type Duration, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"

/** One turn of the event loop (not a timer: it does not wait on the real clock). */
const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/**
 * Runs `effect` forked, moving the TestClock by `step` and yielding one event-loop turn at a time
 * until it ends; after `steps` steps it is interrupted and the result is a defect saying so.
 */
export const virtually = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: { readonly step?: Duration.Input; readonly steps?: number } = {}
): Effect.Effect<Exit.Exit<A, E>, never, R> =>
  Effect.gen(function*() {
    const step = options.step ?? "10 millis"
    const steps = options.steps ?? 60_000
    const fiber = yield* Effect.forkChild(effect)
    for (let i = 0; i < steps && fiber.pollUnsafe() === undefined; i++) {
      yield* TestClock.adjust(step)
      yield* turn
    }
    if (fiber.pollUnsafe() === undefined) {
      yield* Fiber.interrupt(fiber)
      return Exit.die(`still running after ${steps} steps of ${String(step)}`)
    }
    return yield* Effect.exit(Fiber.join(fiber))
  })
