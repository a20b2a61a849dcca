/**
 * The exactly-once Bigtable writer against the fake CheckAndMutateRow: once restored, nothing the
 * writer keeps for its life reaches the restored record (every envelope of the last checkpoint).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../../../../src/Sink.ts"
import { collectUntilGone } from "../../../support/collectGarbage.ts"
import { makeFakeCheckAndMutate } from "../../../support/fakeCheckAndMutate.ts"

interface Click {
  readonly offset: number
}
const serializer = (c: Click) =>
  RowMutationEntry.make(
    `page${c.offset % 3}`,
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: 1n })
  )
const clicks = (from: number, to: number): Array<Click> =>
  Array.from({ length: to - from }, (_, i) => ({ offset: from + i }))
const table = TableDestination.make({ projectId: "p", instanceId: "i", tableId: "clicks" })
const method = WriteMethod.exactlyOnce({ markerFamily: "m" })

/** A writer on `w`, resumed from the store; the caller gets a weak reference to the restored record only. */
const resumedWriter = Effect.gen(function*() {
  const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Number })
  const writer = yield* BigtableSink.writer({
    table: yield* table,
    writeMethod: method,
    checkpoint: { resume, position: (c: Click) => c.offset + 1 },
    serializer
  })
  return { writer, record: Option.map(resume.record, (r) => new WeakRef(r)) }
})

describe("exactly-once Bigtable writer", () => {
  it.effect("once restored, the writer does not keep the restored record reachable", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bigtable-restored-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const fake = makeFakeCheckAndMutate()
      const layer = Layer.merge(Layer.orDie(fake.layer), CheckpointStore.file(dir))
      // a first run saves a checkpoint of 200 envelopes: the restore decodes them and commits them again
      yield* Effect.scoped(Effect.gen(function*() {
        const { writer } = yield* resumedWriter
        yield* writer.write(clicks(0, 200))
        yield* writer.checkpoint(200)
      })).pipe(Effect.provide(layer))
      yield* Effect.scoped(Effect.gen(function*() {
        const { record, writer } = yield* resumedWriter
        assert.isTrue(Option.isSome(record))
        yield* Option.match(record, { onNone: () => Effect.void, onSome: (ref) => collectUntilGone(ref) })
        assert.isUndefined(Option.getOrThrow(record).deref(), "the restored record is still reachable")
        yield* writer.write(clicks(200, 210))
        yield* writer.checkpoint(210)
      })).pipe(Effect.provide(layer))
      assert.strictEqual(fake.applied(), 210)
    }).pipe(Effect.scoped))
})
