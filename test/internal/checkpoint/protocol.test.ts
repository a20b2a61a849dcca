/**
 * The shared checkpoint protocol (DESIGN 6) on the toy backend: drain, prepare, compare-and-set save,
 * commit; restore from the resumed record; the conflict and failure latch; `write` and `checkpoint`
 * never overlapping.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as checkpoint from "../../../src/internal/checkpoint/protocol.ts"
import {
  Checkpoint,
  CheckpointConflict,
  CheckpointRecord,
  CheckpointStore,
  CheckpointStoreError,
  CheckpointStoreIo
} from "../../../src/Sink.ts"
import { FailureHandler } from "../../../src/Sink/FailureHandler.ts"
import { collectUntilGone } from "../../support/collectGarbage.ts"
import * as toy from "../core/toyBackend.ts"

/** A toy "stream": committing `{ upTo }` makes the first `upTo` accepted names visible (idempotent). */
const Commit = Schema.Struct({ upTo: Schema.Int })
type Commit = typeof Commit.Type

interface Log {
  readonly events: Array<string>
  visible: number
  restored: ReadonlyArray<Commit> | undefined
  failCommit: boolean
}

const participant = (service: toy.Service, log: Log): checkpoint.Participant<Commit, unknown> => ({
  commitSchema: Commit,
  prepare: Effect.sync(() => {
    log.events.push(`prepare ${service.accepted.length}`)
    return [{ upTo: service.accepted.length }]
  }),
  commit: (commits) =>
    Effect.suspend(() => {
      if (log.failCommit) return Effect.fail(new toy.ToyError({ reason: "commit failed" }))
      for (const c of commits) log.visible = Math.max(log.visible, c.upTo)
      log.events.push(`commit ${commits.map((c) => c.upTo).join(",")}`)
      return Effect.void
    }),
  restore: (commits) => Effect.sync(() => void (log.restored = commits))
})

const makeLog = (): Log => ({ events: [], visible: 0, restored: undefined, failCommit: false })

/** A store that logs its saves (and delegates to the memory store). */
const loggingStore = (log: Log) =>
  Layer.effect(
    CheckpointStore,
    Effect.gen(function*() {
      const inner = yield* CheckpointStore
      return CheckpointStore.of({
        load: inner.load,
        claim: inner.claim,
        save: (writerId, record, expected) =>
          Effect.tap(
            inner.save(writerId, record, expected),
            () => Effect.sync(() => void log.events.push(`save ${JSON.stringify(record.position)}`))
          )
      })
    })
  ).pipe(Layer.provide(CheckpointStore.memory))

const build = (service: toy.Service, log: Log, resume: Checkpoint.Resume<number>) =>
  Effect.gen(function*() {
    const base = yield* toy.make({ service, handler: FailureHandler.failJob })
    return yield* checkpoint.make({ name: "ToySink", writer: base, resume, participant: participant(service, log) })
  })

const resumeW = Checkpoint.resume({ writerId: "w", positionSchema: Schema.Int })

/** Moves the test clock in steps of 5 ms until `condition` holds (the owner got to it), for two seconds at most. */
const eventually = Effect.fnUntraced(function*(condition: () => boolean) {
  for (let step = 0; step < 400 && !condition(); step++) yield* TestClock.adjust("5 millis")
  if (!condition()) return yield* Effect.die("not yet after two seconds")
})

/** The toy participant with a `discard` that records what it was given. */
const discarding = (service: toy.Service, log: Log, discarded: Array<ReadonlyArray<Commit>>) => ({
  ...participant(service, log),
  discard: (commits: ReadonlyArray<Commit>) => Effect.sync(() => void discarded.push(commits))
})

/** The memory store, its saves refused and its first `failedReads` loads (or all) failing. */
const refusing = (failedReads: number) =>
  Layer.effect(
    CheckpointStore,
    Effect.gen(function*() {
      const inner = yield* CheckpointStore
      let reads = 0
      return CheckpointStore.of({
        ...inner,
        // the read that would tell what the stored record names fails, `failedReads` times
        load: (writerId) =>
          Effect.suspend(() =>
            reads++ < failedReads
              ? Effect.fail(
                new CheckpointStoreError({ writerId, reason: new CheckpointStoreIo({ detail: "unreachable" }) })
              )
              : inner.load(writerId)
          ),
        save: (writerId, _record, expected) =>
          Effect.fail(new CheckpointConflict({ writerId, expectedPreviousId: expected, actualId: "other" }))
      })
    })
  ).pipe(Layer.provide(CheckpointStore.memory))

/** A writer fenced at its first checkpoint, the refused save's fate read on the TestClock. */
const fencedOnce = (store: Layer.Layer<CheckpointStore>, discarded: Array<ReadonlyArray<Commit>>) =>
  Effect.gen(function*() {
    const service = toy.makeService()
    const w = yield* checkpoint.make({
      name: "ToySink",
      writer: yield* toy.make({ service, handler: FailureHandler.failJob }),
      resume: yield* resumeW,
      participant: discarding(service, makeLog(), discarded)
    })
    yield* w.write(["t:a"])
    const fiber = yield* Effect.forkChild(Effect.flip(w.checkpoint(1)))
    // the reads' waits, each registered only once the read before it failed
    for (let i = 0; i < 10; i++) yield* Effect.andThen(Effect.yieldNow, TestClock.adjust("1 second"))
    assert.instanceOf(yield* Fiber.join(fiber), CheckpointConflict)
  }).pipe(Effect.provide(store), Effect.scoped)

describe("checkpoint protocol", () => {
  it.effect("the restored record is not kept reachable by the writer once restored", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "checkpoint-restored-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const run = Effect.gen(function*() {
        const store = yield* CheckpointStore
        const commits = Array.from({ length: 1000 }, (_, i) => ({ upTo: i }))
        yield* store.save("w", new CheckpointRecord({ id: "1-x", position: 1, commits }), undefined)
        // the caller keeps nothing of the resume: only the writer, and a weak reference to the record
        const { record, w } = yield* Effect.gen(function*() {
          const resume = yield* resumeW
          const base = yield* toy.make({ service: toy.makeService(), handler: FailureHandler.failJob })
          const restored = yield* checkpoint.make({
            name: "ToySink",
            writer: base,
            resume,
            participant: { ...participant(toy.makeService(), makeLog()), restore: () => Effect.void }
          })
          return { w: restored, record: new WeakRef(Option.getOrThrow(resume.record)) }
        })
        yield* collectUntilGone(record)
        assert.isUndefined(record.deref(), "the restored record is still reachable")
        yield* w.write(["t:a"])
        yield* w.checkpoint(2)
      })
      yield* run.pipe(Effect.provide(CheckpointStore.file(dir)))
    }).pipe(Effect.scoped))

  it.effect("a checkpoint drains, prepares, saves the record, then commits", () => {
    const log = makeLog()
    return Effect.gen(function*() {
      const service = toy.makeService()
      const resume = yield* resumeW
      assert.isTrue(Option.isNone(resume.position))
      const w = yield* build(service, log, resume)
      yield* w.write(["t:a", "t:b", "t:c"])
      yield* w.checkpoint(3)
      assert.deepStrictEqual(log.events, ["prepare 3", "save 3", "commit 3"])
      assert.strictEqual(log.visible, 3)
      const stored = yield* resume.store.load("w")
      assert.isTrue(Option.isSome(stored))
      if (Option.isSome(stored)) {
        assert.strictEqual(stored.value.position, 3)
        assert.deepStrictEqual(stored.value.commits, [{ upTo: 3 }])
        // the resume's claim was 1
        assert.match(stored.value.id, /^2-/)
      }
      yield* w.write(["t:d"])
      yield* w.checkpoint(4)
      const next = yield* resume.store.load("w")
      if (Option.isSome(next)) assert.match(next.value.id, /^3-/)
      assert.deepStrictEqual(log.events.slice(3), ["prepare 4", "save 4", "commit 4"])
    }).pipe(Effect.scoped, Effect.provide(loggingStore(log)))
  })

  it.effect("a restart resumes at the stored position, re-runs the stored commits, then adopts them", () =>
    Effect.gen(function*() {
      const first = makeLog()
      yield* Effect.scoped(Effect.gen(function*() {
        const w = yield* build(toy.makeService(), first, yield* resumeW)
        yield* w.write(["t:a", "t:b"])
        yield* w.checkpoint(2)
      }))
      const resume = yield* resumeW
      assert.deepStrictEqual(resume.position, Option.some(2))
      const second = makeLog()
      yield* Effect.scoped(build(toy.makeService(), second, resume))
      assert.deepStrictEqual(second.events, ["commit 2"])
      assert.deepStrictEqual(second.restored, [{ upTo: 2 }])
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a stored position that does not decode is CheckpointStoreError CheckpointStoreCorrupt", () =>
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      yield* store.save("w", new CheckpointRecord({ id: "1-x", position: "three", commits: [] }), undefined)
      const error = yield* Effect.flip(resumeW)
      assert.instanceOf(error, CheckpointStoreError)
      assert.strictEqual(
        error._tag === "CheckpointStoreError" ? error.reason._tag : undefined,
        "CheckpointStoreCorrupt"
      )
      assert.include(error._tag === "CheckpointStoreError" ? error.reason.detail : "", "position does not decode")
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("stored commits that do not decode fail building the writer with CheckpointStoreCorrupt, before any commit", () =>
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      yield* store.save("w", new CheckpointRecord({ id: "1-x", position: 1, commits: [{ upTo: "x" }] }), undefined)
      const log = makeLog()
      const error = yield* Effect.flip(build(toy.makeService(), log, yield* resumeW))
      assert.instanceOf(error, CheckpointStoreError)
      assert.strictEqual(
        error instanceof CheckpointStoreError ? error.reason._tag : undefined,
        "CheckpointStoreCorrupt"
      )
      assert.deepStrictEqual(log.events, [])
    }).pipe(Effect.scoped, Effect.provide(CheckpointStore.memory)))

  it.effect("a zombie is fenced: CheckpointConflict, nothing committed, and every later call fails with it", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const zombieResume = yield* resumeW
      const zombie = yield* build(toy.makeService(), log, zombieResume)
      // its replacement starts from the same record and checkpoints first
      const replacement = yield* build(toy.makeService(), makeLog(), yield* resumeW)
      yield* replacement.write(["t:x"])
      yield* replacement.checkpoint(1)
      yield* zombie.write(["t:a", "t:b"])
      const conflict = yield* Effect.flip(zombie.checkpoint(2))
      assert.instanceOf(conflict, CheckpointConflict)
      assert.deepStrictEqual(log.events, ["prepare 2"])
      assert.strictEqual(log.visible, 0)
      assert.strictEqual(yield* Effect.flip(zombie.write(["t:c"])), conflict)
      assert.strictEqual(yield* Effect.flip(zombie.flush), conflict)
      assert.strictEqual(yield* Effect.flip(zombie.checkpoint(3)), conflict)
    }).pipe(Effect.scoped, Effect.provide(CheckpointStore.memory)))

  it.effect("a failed commit stops the writer (the saved record is re-committed by the restart)", () =>
    Effect.gen(function*() {
      const log = makeLog()
      log.failCommit = true
      const w = yield* build(toy.makeService(), log, yield* resumeW)
      yield* w.write(["t:a"])
      const error = yield* Effect.flip(w.checkpoint(1))
      assert.deepStrictEqual(error, new toy.ToyError({ reason: "commit failed" }))
      assert.strictEqual(yield* Effect.flip(w.write(["t:b"])), error)
      const resume = yield* resumeW
      assert.deepStrictEqual(resume.position, Option.some(1))
      const again = makeLog()
      yield* build(toy.makeService(), again, resume)
      assert.strictEqual(again.visible, 1)
    }).pipe(Effect.scoped, Effect.provide(CheckpointStore.memory)))

  it.effect("a write waits for a checkpoint under way: the position names exactly what was drained", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      const log = makeLog()
      const w = yield* build(service, log, yield* resumeW)
      yield* w.write(["t:a", "t:b"])
      const checkpointing = yield* Effect.forkChild(w.checkpoint(2))
      yield* eventually(() => service.calls === 1)
      const writing = yield* Effect.forkChild(w.write(["t:c", "t:d"]))
      yield* TestClock.adjust("20 millis")
      assert.isUndefined(writing.pollUnsafe(), "the write waits for the checkpoint")
      yield* Deferred.succeed(service.hold, undefined)
      yield* Fiber.join(checkpointing)
      yield* Fiber.join(writing)
      assert.deepStrictEqual(log.events, ["prepare 2", "commit 2"])
      yield* w.checkpoint(4)
      assert.strictEqual(log.visible, 4)
    }).pipe(Effect.scoped, Effect.provide(CheckpointStore.memory)))

  it.effect("checkpoint ids count up from the previous one and are never equal", () =>
    Effect.gen(function*() {
      const a = yield* checkpoint.nextId(undefined)
      const b = yield* checkpoint.nextId(a)
      assert.match(a, /^1-/)
      assert.match(b, /^2-/)
      assert.match(yield* checkpoint.nextId("foreign"), /^1-/)
    }))

  describe("a refused checkpoint's commits (issue 36, defect 5)", () => {
    it.effect("are discarded when no stored record names them: no writer will ever commit them", () =>
      Effect.gen(function*() {
        const discarded: Array<ReadonlyArray<Commit>> = []
        const service = toy.makeService()
        const resume = yield* resumeW
        const w = yield* checkpoint.make({
          name: "ToySink",
          writer: yield* toy.make({ service, handler: FailureHandler.failJob }),
          resume,
          participant: discarding(service, makeLog(), discarded)
        })
        // another process claims the writer: this one is fenced at its next save
        const store = yield* CheckpointStore
        yield* store.claim("w")
        yield* w.write(["t:a", "t:b"])
        assert.instanceOf(yield* Effect.flip(w.checkpoint(2)), CheckpointConflict)
        assert.deepStrictEqual(discarded, [[{ upTo: 2 }]])
      }).pipe(Effect.scoped, Effect.provide(CheckpointStore.memory)))

    it.effect("are kept when the stored record names them (a save that landed, its answer refused)", () =>
      Effect.gen(function*() {
        const discarded: Array<ReadonlyArray<Commit>> = []
        // the save lands, then the store answers as if another writer had been first
        const landedThenRefused = Layer.effect(
          CheckpointStore,
          Effect.gen(function*() {
            const inner = yield* CheckpointStore
            return CheckpointStore.of({
              ...inner,
              save: (writerId, record, expected) =>
                Effect.andThen(
                  inner.save(writerId, record, expected),
                  Effect.fail(new CheckpointConflict({ writerId, expectedPreviousId: expected, actualId: record.id }))
                )
            })
          })
        ).pipe(Layer.provide(CheckpointStore.memory))
        yield* Effect.gen(function*() {
          const service = toy.makeService()
          const w = yield* checkpoint.make({
            name: "ToySink",
            writer: yield* toy.make({ service, handler: FailureHandler.failJob }),
            resume: yield* resumeW,
            participant: discarding(service, makeLog(), discarded)
          })
          yield* w.write(["t:a"])
          assert.instanceOf(yield* Effect.flip(w.checkpoint(1)), CheckpointConflict)
          assert.deepStrictEqual(discarded, [])
        }).pipe(Effect.provide(landedThenRefused))
      }).pipe(Effect.scoped))

    it.effect("are discarded when the stored record is read on a later try (a store failing now and then)", () =>
      Effect.gen(function*() {
        const discarded: Array<ReadonlyArray<Commit>> = []
        yield* fencedOnce(refusing(3), discarded)
        assert.deepStrictEqual(discarded, [[{ upTo: 1 }]])
      }))

    it.effect("are kept when the stored record cannot be read at all", () =>
      Effect.gen(function*() {
        const discarded: Array<ReadonlyArray<Commit>> = []
        yield* fencedOnce(refusing(Number.POSITIVE_INFINITY), discarded)
        assert.deepStrictEqual(discarded, [])
      }))
  })
})
