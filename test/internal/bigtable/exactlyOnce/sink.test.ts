/**
 * The exactly-once Bigtable sink form against the fake CheckAndMutateRow: a backlog larger than the
 * stage's bounds (`maxStagedEntries`, `maxStagedBytes`) is checkpointed early, before the timer's
 * `every`, instead of failing with `StagingFull` (which would fail again on every restart).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema, Stream } from "effect"
import {
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../../../../src/Sink.ts"
import { makeFakeCheckAndMutate } from "../../../support/fakeCheckAndMutate.ts"

interface Click {
  readonly offset: number
  readonly n: number
}

const clicks = (n: number): Array<Click> => Array.from({ length: n }, (_, i) => ({ offset: i, n: i + 1 }))
const serializer = (c: Click) =>
  RowMutationEntry.make(
    `page${c.offset % 3}`,
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: BigInt(c.n) })
  )
const tableName = "projects/p/instances/i/tables/clicks"
const table = TableDestination.make({ projectId: "p", instanceId: "i", tableId: "clicks" })

/** Runs `n` records in chunks of `chunk` through the sink (a timer `every` far away), counting saves. */
const run = (n: number, chunk: number, method: WriteMethod.ExactlyOnce) =>
  Effect.gen(function*() {
    const fake = makeFakeCheckAndMutate()
    const saves: Array<unknown> = []
    const store = Layer.effect(
      CheckpointStore,
      Effect.map(CheckpointStore, (inner) =>
        CheckpointStore.of({
          load: inner.load,
          claim: inner.claim,
          save: (writerId, record, expected) =>
            Effect.tap(
              inner.save(writerId, record, expected),
              () => Effect.sync(() => void saves.push(record.position))
            )
        }))
    ).pipe(Layer.provide(CheckpointStore.memory))
    const summary = yield* Effect.gen(function*() {
      const resume = yield* Checkpoint.resume({ writerId: "s", positionSchema: Schema.Number })
      return yield* Stream.fromIterable(clicks(n)).pipe(
        Stream.rechunk(chunk),
        Stream.run(BigtableSink.make({
          table: yield* table,
          writeMethod: method,
          checkpoint: { resume, every: "1 hour", position: (c: Click) => c.offset + 1 },
          serializer
        }))
      )
    }).pipe(Effect.provide(Layer.merge(Layer.orDie(fake.layer), store)))
    const sum = [0, 1, 2].reduce((s, r) => s + fake.sum(tableName, `page${r}`, "c", "n"), 0n)
    return { summary, saves, sum }
  })

describe("exactly-once Bigtable sink", () => {
  it.effect("a backlog past maxStagedEntries before the timer is checkpointed early, never StagingFull", () =>
    Effect.gen(function*() {
      const { saves, sum, summary } = yield* run(
        35,
        16,
        WriteMethod.exactlyOnce({ markerFamily: "m", maxStagedEntries: 10 })
      )
      assert.strictEqual(summary.recordsWritten, 35)
      assert.strictEqual(sum, BigInt((35 * 36) / 2))
      assert.isAtLeast(saves.length, 4, "at most 10 records staged per checkpoint")
      assert.deepStrictEqual(saves.at(-1), 35)
    }))

  it.effect("a backlog past maxStagedBytes before the timer is checkpointed early, never StagingFull", () =>
    Effect.gen(function*() {
      // each entry is charged ~150 bytes of request + 256: 2,000 bytes hold a few entries, not 16
      const { saves, sum, summary } = yield* run(
        35,
        16,
        WriteMethod.exactlyOnce({ markerFamily: "m", maxStagedBytes: 2_000 })
      )
      assert.strictEqual(summary.recordsWritten, 35)
      assert.strictEqual(sum, BigInt((35 * 36) / 2))
      assert.isAtLeast(saves.length, 7)
      assert.deepStrictEqual(Option.fromUndefinedOr(saves.at(-1)), Option.some(35))
    }))
})
