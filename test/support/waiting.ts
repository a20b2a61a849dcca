/**
 * Waiting on real I/O from tests, also under a `TestClock`, and collecting warning logs.
 */
import { assert } from "@effect/vitest"
import { type Duration, Effect, Fiber, Logger } from "effect"
import { TestClock } from "effect/testing"

/** Waits in real time until `done` holds (fakes and emulators do real I/O), failing after about five seconds; for tests under a `TestClock`. */
export const eventually = (what: string, done: () => boolean): Effect.Effect<void> =>
  TestClock.withLive(Effect.gen(function*() {
    for (let i = 0; i < 250 && !done(); i++) yield* Effect.sleep("20 millis")
    assert.isTrue(done(), `timed out waiting for ${what}`)
  }))

/** Moves the TestClock `step` (default 10 ms) at a time until `done` holds; dies after `steps` steps (default 10,000). */
export const stepUntil = (
  done: () => boolean,
  options: { readonly step?: Duration.Input; readonly steps?: number } = {}
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const steps = options.steps ?? 10_000
    for (let i = 0; !done(); i++) {
      if (i === steps) return yield* Effect.die(new Error(`not done after ${steps} steps of the TestClock`))
      yield* TestClock.adjust(options.step ?? "10 millis")
    }
  })

/**
 * Runs `effect` on the TestClock, moving it while the effect runs (its retries, batch delays and
 * ticks fire as they fall due), as {@link stepUntil} does.
 */
export const onTestClock = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options?: { readonly step?: Duration.Input; readonly steps?: number }
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(effect)
    yield* stepUntil(() => fiber.pollUnsafe() !== undefined, options)
    return yield* Fiber.join(fiber)
  })

/** A logger layer keeping the text of every WARN line in `seen`. */
export const warnings = () => {
  const seen: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === "Warn") seen.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  return { seen, layer: Logger.layer([logger]) }
}
