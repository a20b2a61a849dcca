/**
 * The BigQuery sink's latency contract under the TestClock, against the in-process fake with a real
 * round trip: a record written at a low rate is sent in under a second with default options (a
 * destination with nothing in flight sends at once), and within `flushInterval` (plus the round
 * trip) when one is set, for the whole of a long run; sink and writer forms, plain rows and CDC.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, type Sink, Stream } from "effect"
import { type BigQueryClient, BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import type { WriteSummary } from "../../src/Sink.ts"
import * as LowRate from "../support/lowRate.ts"
import { cdc, type Change, primaryKey, serializer as cdcSerializer } from "./cdcFixtures.ts"
import * as F from "./sinkFixtures.ts"

/** A real round trip of the fake, so a second record can come while the first is in flight. */
const fakeOptions = { latencyMillis: 20 } as const
const records = 100

/** A new key per record, so the CDC table grows by one row each. */
const change = (i: number): Change => ({ op: "UPSERT", id: BigInt(i), name: `c${i}`, seq: i.toString(16) })

const table = (fake: { readonly projectId: string }) => `${fake.projectId}.d.t`

/** Streams a queue through `sink`, runs the low-rate source into it, then ends the input. */
const throughSink = <A>(
  sink: Sink.Sink<WriteSummary, A, never, unknown, BigQueryClient.BigQueryClient>,
  record: (i: number) => A,
  landed: () => number,
  within: Duration.Input
) =>
  Effect.gen(function*() {
    const input = yield* LowRate.sinkInput<A>()
    const fiber = yield* input.stream.pipe(Stream.run(sink), Effect.forkChild)
    yield* LowRate.run({
      records,
      write: (i) => input.offer(record(i)),
      landed,
      within,
      gap: LowRate.defaultGap
    })
    yield* input.end
    const summary = yield* Fiber.join(fiber)
    assert.strictEqual(summary.recordsWritten, records)
  })

describe("BigQuerySink latency (TestClock)", () => {
  it.effect(
    "sink, default options: each record of a slow stream is sent in under a second",
    () =>
      F.withFake(fakeOptions, (fake) =>
        Effect.gen(function*() {
          fake.createTable(table(fake), F.columns)
          const sink = BigQuerySink.make({ table: yield* F.destination(fake), serializer: yield* F.serializer })
          yield* throughSink(sink, (i) => F.rows(1, i)[0] as F.Row, () => fake.rows(table(fake)).length, "999 millis")
        })),
    60_000
  )

  it.effect(
    "sink, flushInterval: each record is sent within the interval, a flush never blocks the next",
    () =>
      F.withFake(fakeOptions, (fake) =>
        Effect.gen(function*() {
          fake.createTable(table(fake), F.columns)
          const sink = BigQuerySink.make({
            table: yield* F.destination(fake),
            serializer: yield* F.serializer,
            writeMethod: WriteMethod.atLeastOnce({ flushInterval: "50 millis" })
          })
          yield* throughSink(sink, (i) => F.rows(1, i)[0] as F.Row, () => fake.rows(table(fake)).length, "50 millis")
        })),
    60_000
  )

  it.effect(
    "sink, CDC: each change of a slow stream is sent in under a second",
    () =>
      F.withFake(fakeOptions, (fake) =>
        Effect.gen(function*() {
          fake.createTable(table(fake), F.columns, primaryKey)
          const sink = BigQuerySink.make({
            table: yield* F.destination(fake),
            serializer: yield* cdcSerializer,
            writeMethod: WriteMethod.atLeastOnce({ cdc })
          })
          yield* throughSink(sink, change, () => fake.rows(table(fake)).length, "999 millis")
          assert.strictEqual(fake.cdc.rows(table(fake)).length, records)
        })),
    60_000
  )

  it.effect(
    "writer, default options: each record written at a low rate is sent in under a second",
    () =>
      F.withFake(fakeOptions, (fake) =>
        Effect.gen(function*() {
          fake.createTable(table(fake), F.columns)
          const w = yield* BigQuerySink.writer({ table: yield* F.destination(fake), serializer: yield* F.serializer })
          yield* LowRate.run({
            records,
            write: (i) => w.write(F.rows(1, i)),
            landed: () => fake.rows(table(fake)).length,
            within: "999 millis",
            gap: LowRate.defaultGap
          })
          yield* w.flush
          assert.strictEqual((yield* w.summary).recordsWritten, records)
        })),
    60_000
  )
})
