import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { TestClock } from "effect/testing"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination } from "../../src/Bigtable/index.ts"
import { line } from "../../src/internal/core/progressLog.ts"
import { ProgressLog, WriteSummary } from "../../src/Sink.ts"
import { makeFake } from "../Bigtable/fakeBigtable.ts"
import { eventually } from "../support/waiting.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "iot", tableId: "t" })
const serializer = (k: string) => RowMutationEntry.make(k, Mutation.setCell({ family: "cf", qualifier: "q", value: k }))

/** A logger layer keeping every INFO line. */
const infoLines = () => {
  const seen: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === "Info") seen.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  return { seen, layer: Logger.layer([logger]) }
}

const writeFive = Effect.gen(function*() {
  const fake = makeFake()
  yield* Effect.gen(function*() {
    const writer = yield* BigtableSink.writer({ table, serializer })
    yield* writer.write(["a", "b", "c", "d", "e"])
    yield* writer.flush
    yield* eventually("the five records", () => fake.requests.length > 0)
    yield* TestClock.adjust("10 seconds")
  }).pipe(Effect.scoped, Effect.provide(fake.layer))
})

describe("ProgressLog", () => {
  it("one line: records, rate, in flight, retries, failures, skips", () => {
    const summary = { ...WriteSummary.empty, recordsWritten: 1200, retries: 3, recordsFailed: 1, recordsSkipped: 2 }
    assert.strictEqual(
      line("BigtableSink", summary, 40, 120.4),
      "BigtableSink: 1200 records written (120/s), 40 in flight, 3 retries, 1 failed, 2 skipped"
    )
  })

  it.effect("every(interval) logs each writer's progress on that interval; nothing without it", () =>
    Effect.gen(function*() {
      const on = infoLines()
      yield* writeFive.pipe(ProgressLog.every("5 seconds"), Effect.provide(on.layer))
      const progress = on.seen.filter((l) => l.startsWith("BigtableSink:"))
      assert.deepStrictEqual(progress, [
        "BigtableSink: 5 records written (1/s), 0 in flight, 0 retries, 0 failed, 0 skipped",
        "BigtableSink: 5 records written (0/s), 0 in flight, 0 retries, 0 failed, 0 skipped"
      ])
      const off = infoLines()
      yield* writeFive.pipe(Effect.provide(off.layer))
      assert.deepStrictEqual(off.seen.filter((l) => l.startsWith("BigtableSink:")), [])
    }))
})
