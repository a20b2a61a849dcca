/**
 * Waiting on real I/O from tests, also under a `TestClock`, and collecting warning logs.
 */
import { assert } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { TestClock } from "effect/testing"

/** Waits in real time until `done` holds (fakes and emulators do real I/O), failing after about five seconds; for tests under a `TestClock`. */
export const eventually = (what: string, done: () => boolean): Effect.Effect<void> =>
  TestClock.withLive(Effect.gen(function*() {
    for (let i = 0; i < 250 && !done(); i++) yield* Effect.sleep("20 millis")
    assert.isTrue(done(), `timed out waiting for ${what}`)
  }))

/** A logger layer keeping the text of every WARN line in `seen`. */
export const warnings = () => {
  const seen: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === "Warn") seen.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  return { seen, layer: Logger.layer([logger]) }
}
