/**
 * The exactly-once BigQuery writer over a long run against the fake's BUFFERED streams: its
 * per-stream state stays flat while destinations are evicted and reopened, and a restored
 * destination reopened after its eviction does not go back to the stale restored offset.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { WriteMethod } from "../../../../src/BigQuery/index.ts"
import { sizesOf } from "../../../../src/internal/bigquery/exactlyOnce/writer.ts"
import { eoWriter, range, visibleIds, withEo } from "../../../BigQuery/exactlyOnceFixtures.ts"
import { fastRetries, rows, ticking } from "../../../BigQuery/sinkFixtures.ts"
import type * as Fake from "../../../support/fakeBigQueryWrite.ts"

const evicting = WriteMethod.exactlyOnce({ ...fastRetries, destinationIdleTimeout: "1 minute" })

/** Records every buffered append (stream and offset), answering the default. */
const recording = (appends: Array<string>) => (c: Fake.AppendContext): Fake.Answer => {
  if (c.offset !== undefined) appends.push(`${c.writeStream}@${c.offset}`)
  return { _tag: "default" }
}

describe("exactly-once writer", () => {
  it.effect("a restored destination reopened after its eviction does not probe the stale restored offset", () => {
    const appends: Array<string> = []
    return withEo({ answer: recording(appends) }, (fake) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const { writer } = yield* eoWriter(fake, "w", evicting)
          yield* writer.write(rows(10))
          yield* writer.checkpoint(10)
        }))
        const [stream] = fake.buffered.streams.keys()
        const { writer } = yield* eoWriter(fake, "w", evicting)
        yield* writer.write(rows(10, 10)) // the probe at 10 adopts the restored stream
        yield* writer.checkpoint(20)
        yield* TestClock.adjust("2 minutes")
        yield* writer.checkpoint(20) // clean and idle: evicted
        yield* writer.write(rows(10, 20))
        yield* writer.checkpoint(30)
        assert.deepStrictEqual(visibleIds(fake), range(0, 30))
        assert.deepStrictEqual(
          appends.filter((a) => a === `${stream}@10`),
          [`${stream}@10`],
          "the restored offset is probed once, by the first open only"
        )
      }))
  })

  it.effect("24 hours of destinations evicted and reopened keep the per-stream state flat", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const { writer } = yield* eoWriter(fake, "w", evicting)
          yield* writer.write(rows(1))
          yield* writer.checkpoint(1)
        }))
        const { writer } = yield* eoWriter(fake, "w", evicting)
        let written = 1
        const sizes: Array<number> = [] // flushed, restored after each cycle
        // every 30 minutes: a record, a checkpoint, then idle past the timeout and evicted by the next one
        for (let cycle = 0; cycle < 48; cycle++) {
          yield* ticking(writer.write(rows(1, written)))
          written++
          yield* ticking(writer.checkpoint(written))
          yield* TestClock.adjust("30 minutes")
          yield* ticking(writer.checkpoint(written))
          const s = sizesOf(writer)
          assert.isDefined(s)
          sizes.push(s?.flushed ?? -1, s?.restored ?? -1)
        }
        assert.deepStrictEqual(visibleIds(fake), range(0, written))
        assert.isAbove(fake.buffered.stats.creates, 40, "the destination was reopened on fresh streams")
        // at most the one live stream flushed, and nothing restored left once the destination opened
        assert.isAtMost(Math.max(...sizes), 1, `flushed, restored over the run: ${sizes.join(" ")}`)
        assert.strictEqual(sizes.at(-1), 0, "nothing restored is kept once its destination opened")
      })))
})
