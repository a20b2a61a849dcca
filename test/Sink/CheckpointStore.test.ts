import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { CheckpointConflict, CheckpointRecord, CheckpointStore, GcsClient } from "../../src/Sink.ts"
import { checkClaims, checkLaws } from "../support/checkpointStoreLaws.ts"
import * as MemoryGcs from "../support/memoryGcs.ts"
import * as MemorySqlTable from "../support/memorySqlTable.ts"

const record = (id: string, offset = 0) =>
  new CheckpointRecord({ id, position: { offset }, commits: [{ stream: `s-${id}`, rows: offset }] })

const tempDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "checkpoints-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const stores: ReadonlyArray<
  [string, Effect.Effect<Layer.Layer<CheckpointStore>, never, Scope.Scope>, number]
> = [
  ["memory", Effect.succeed(CheckpointStore.memory), 200],
  ["file", Effect.map(tempDirectory, (dir) => CheckpointStore.file(dir)), 40],
  // the GCS store's own code on an in-memory bucket (fake-gcs-server: test/integration/checkpoint)
  [
    "gcs",
    Effect.sync(() =>
      CheckpointStore.gcs({ bucket: "laws" }).pipe(
        Layer.provide(GcsClient.fromStorage({ projectId: "p", storage: MemoryGcs.make().storage })),
        Layer.orDie
      )
    ),
    100
  ],
  // the SQL store's own code on an in-memory table (PostgreSQL: test/internal/checkpoint/sqlStore.test.ts)
  ["sql", Effect.sync(() => MemorySqlTable.layer(MemorySqlTable.make())), 100]
]

for (const [name, makeLayer, lawRuns] of stores) {
  describe(`CheckpointStore.${name}`, () => {
    it.effect(
      "property: exactly one of concurrent savers wins, conflicts name both ids, load gives the last winner",
      () =>
        Effect.gen(function*() {
          const layer = yield* makeLayer
          const store = yield* CheckpointStore.pipe(Effect.provide(layer))
          for (const seed of [20261130, 7, 424242]) {
            const figures = yield* checkLaws(store, { runs: Math.ceil(lawRuns / 3), seed, prefix: `laws-${seed}` })
            assert.isAbove(figures.conflicts, 0, "the histories include races and stale expectations")
            assert.isAbove(figures.claims, 0, "the histories include claims")
          }
        }),
      120_000
    )

    it.effect("ownership passes to the claimant: the previous owner's next save is refused", () =>
      Effect.gen(function*() {
        const layer = yield* makeLayer
        yield* Effect.gen(function*() {
          const store = yield* CheckpointStore
          // a claim before any checkpoint: no record, and the next save must expect the claim
          const first = yield* store.claim("w")
          assert.isTrue(Option.isNone(first.record))
          assert.isTrue(Option.isNone(yield* store.load("w")))
          assert.instanceOf(yield* Effect.flip(store.save("w", record("x"), undefined)), CheckpointConflict)
          yield* store.save("w", record("a", 1), first.id)
          // the successor claims: the record again, under the claim's id
          const second = yield* store.claim("w")
          assert.deepStrictEqual(
            Option.map(second.record, (r) => [r.id, r.position, r.commits]),
            Option.some([second.id, { offset: 1 }, [{ stream: "s-a", rows: 1 }]])
          )
          assert.strictEqual(Option.getOrThrow(yield* store.load("w")).id, second.id)
          // the old owner saves on: refused, naming the claim
          const fenced = yield* Effect.flip(store.save("w", record("b", 2), "a"))
          assert.instanceOf(fenced, CheckpointConflict)
          if (fenced instanceof CheckpointConflict) {
            assert.deepStrictEqual([fenced.expectedPreviousId, fenced.actualId], ["a", second.id])
          }
          yield* store.save("w", record("c", 3), second.id)
          assert.strictEqual(Option.getOrThrow(yield* store.load("w")).id, "c")
        }).pipe(Effect.provide(layer))
      }))

    it.effect("of concurrent claimants exactly one owns the writer", () =>
      Effect.gen(function*() {
        const layer = yield* makeLayer
        yield* Effect.gen(function*() {
          const store = yield* CheckpointStore
          for (let round = 0; round < 6; round++) {
            yield* checkClaims(store, {
              writerId: `claims-${round}`,
              claimants: 2 + (round % 3),
              withRecord: round % 2 === 0
            })
          }
        }).pipe(Effect.provide(layer))
      }))

    it.effect("a new writer has no record; saves chain by id", () =>
      Effect.gen(function*() {
        const layer = yield* makeLayer
        yield* Effect.gen(function*() {
          const store = yield* CheckpointStore
          assert.isTrue(Option.isNone(yield* store.load("w")))
          yield* store.save("w", record("a", 1), undefined)
          yield* store.save("w", record("b", 2), "a")
          yield* store.save("w", record("c", 3), "b")
          const latest = yield* store.load("w")
          assert.deepStrictEqual(
            Option.map(latest, (r) => [r.id, r.position, r.commits]),
            Option.some(["c", { offset: 3 }, [{ stream: "s-c", rows: 3 }]])
          )
          assert.isTrue(Option.isNone(yield* store.load("other")))
        }).pipe(Effect.provide(layer))
      }))

    it.effect("a save with a stale expectation is a CheckpointConflict and changes nothing", () =>
      Effect.gen(function*() {
        const layer = yield* makeLayer
        yield* Effect.gen(function*() {
          const store = yield* CheckpointStore
          yield* store.save("w", record("a"), undefined)
          yield* store.save("w", record("b"), "a")
          for (const expected of ["a", undefined, "zzz"]) {
            const error = yield* Effect.flip(store.save("w", record("x"), expected))
            assert.instanceOf(error, CheckpointConflict)
            if (error instanceof CheckpointConflict) {
              assert.strictEqual(error.writerId, "w")
              assert.strictEqual(error.expectedPreviousId, expected)
              assert.strictEqual(error.actualId, "b")
            }
          }
          assert.strictEqual(Option.getOrThrow(yield* store.load("w")).id, "b")
        }).pipe(Effect.provide(layer))
      }))

    it.effect("of concurrent savers with the same expectation exactly one wins", () =>
      Effect.gen(function*() {
        const layer = yield* makeLayer
        yield* Effect.gen(function*() {
          const store = yield* CheckpointStore
          for (let round = 0; round < 10; round++) {
            const writer = `race-${round}`
            yield* store.save(writer, record("base"), undefined)
            const contenders = Array.from({ length: 2 + (round % 4) }, (_, i) => `next-${i}`)
            const exits = yield* Effect.forEach(
              contenders,
              (id) => Effect.exit(store.save(writer, record(id), "base")),
              { concurrency: "unbounded" }
            )
            const winners = contenders.filter((_, i) => Exit.isSuccess(exits[i] ?? Exit.void))
            assert.strictEqual(winners.length, 1, `round ${round}`)
            for (const exit of exits) {
              if (Exit.isFailure(exit)) {
                const reason = exit.cause.reasons[0]
                assert.isTrue(reason?._tag === "Fail" && reason.error instanceof CheckpointConflict)
              }
            }
            assert.strictEqual(Option.getOrThrow(yield* store.load(writer)).id, winners[0])
          }
        }).pipe(Effect.provide(layer))
      }))

    it.effect("writers are independent, whatever characters their ids hold", () =>
      Effect.gen(function*() {
        const layer = yield* makeLayer
        yield* Effect.gen(function*() {
          const store = yield* CheckpointStore
          const ids = ["a", "A", "..", "../x", "a/b", "é", "%41", "x y", "subtask-0"]
          yield* Effect.forEach(ids, (id, i) => store.save(id, record(`r${i}`, i), undefined), { discard: true })
          for (const [i, id] of ids.entries()) {
            assert.strictEqual(Option.getOrThrow(yield* store.load(id)).id, `r${i}`)
          }
        }).pipe(Effect.provide(layer))
      }))
  })
}

describe("CheckpointStore.file across instances", () => {
  it.effect("two stores on one directory fence each other", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      const save = (id: string, expected: string | undefined) =>
        CheckpointStore.use((s) => s.save("w", record(id), expected)).pipe(Effect.provide(CheckpointStore.file(dir)))
      yield* save("a", undefined)
      const exits = yield* Effect.all([Effect.exit(save("b1", "a")), Effect.exit(save("b2", "a"))], {
        concurrency: "unbounded"
      })
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
      const zombie = yield* Effect.flip(save("c", "a"))
      assert.instanceOf(zombie, CheckpointConflict)
      const latest = yield* CheckpointStore.use((s) => s.load("w")).pipe(Effect.provide(CheckpointStore.file(dir)))
      assert.include(["b1", "b2"], Option.getOrThrow(latest).id)
    }))
})
