/**
 * The Bigtable sink's latency contract under the TestClock, against the in-process fake with a real
 * round trip: a record written at a low rate is sent in under a second with default options (a
 * table with no request in flight sends at once), and within `flushInterval` (plus the round trip)
 * when one is set, for the whole of a long run; sink and writer forms.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Stream } from "effect"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } from "../../src/Bigtable/index.ts"
import * as LowRate from "../support/lowRate.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const serializer = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))
const records = 100

/** Streams a queue through the sink while the low-rate source writes into it. */
const throughSink = (within: Duration.Input, writeMethod?: WriteMethod.AtLeastOnce) =>
  Effect.gen(function*() {
    const fake = makeFake({ latencyMs: 20 })
    const input = yield* LowRate.sinkInput<string>()
    const fiber = yield* input.stream.pipe(
      Stream.run(BigtableSink.make({ table, serializer, writeMethod })),
      Effect.provide(fake.layer),
      Effect.forkChild
    )
    yield* LowRate.run({
      records,
      write: (i) => input.offer(`r${i}`),
      landed: () => fake.applied.size,
      within,
      gap: LowRate.defaultGap
    })
    yield* input.end
    assert.strictEqual((yield* Fiber.join(fiber)).recordsWritten, records)
  })

describe("BigtableSink latency (TestClock)", () => {
  it.effect(
    "sink, default options: each record of a slow stream is sent in under a second",
    () => throughSink("999 millis"),
    60_000
  )

  it.effect(
    "sink, flushInterval: each record is sent within the interval, a flush never blocks the next",
    () => throughSink("50 millis", WriteMethod.atLeastOnce({ flushInterval: "50 millis" })),
    60_000
  )

  it.effect(
    "writer, default options: each record written at a low rate is sent in under a second",
    () =>
      Effect.gen(function*() {
        const fake = makeFake({ latencyMs: 20 })
        const w = yield* BigtableSink.writer({ table, serializer }).pipe(Effect.provide(fake.layer))
        yield* LowRate.run({
          records,
          write: (i) => w.write([`r${i}`]),
          landed: () => fake.applied.size,
          within: "999 millis",
          gap: LowRate.defaultGap
        })
        yield* w.flush
        assert.strictEqual((yield* w.summary).recordsWritten, records)
      }),
    60_000
  )
})
