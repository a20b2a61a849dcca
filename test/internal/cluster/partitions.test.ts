import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Option, Queue, Ref, Schema, Sink, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as internal from "../../../src/internal/cluster/partitions.ts"
import { CheckpointConflict, CheckpointRecord, CheckpointStore } from "../../../src/Sink/CheckpointStore.ts"

/** One turn of the event loop (not a timer): merged streams run their fibers on the scheduler. */
const turn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Moves the TestClock by `millis` in 100 ms steps, with event-loop turns around each. */
const advance = (millis: number) =>
  Effect.gen(function*() {
    yield* turn
    for (let t = 0; t < millis; t += 100) {
      yield* TestClock.adjust(Math.min(100, millis - t))
      yield* turn
      yield* turn
    }
  })

const settings = (overrides: Partial<internal.Settings> = {}): internal.Settings => ({
  name: "job",
  partitions: 2,
  restartDelay: Duration.seconds(5),
  stopTimeout: Duration.seconds(10),
  shardGroup: undefined,
  shardsPerGroup: undefined,
  ...overrides
})

/** A runner that holds every shard, its view refreshed every 3 seconds. */
const held: internal.ShardView = { held: () => true, refreshInterval: Duration.seconds(3) }

describe("cluster partitions: settings", () => {
  it("writer ids are name-partition", () => {
    assert.strictEqual(internal.writerId("orders", 0), "orders-0")
    assert.strictEqual(internal.writerId("orders", 11), "orders-11")
    assert.deepStrictEqual(internal.indices(3), [0, 1, 2])
  })

  it.effect("decodes with defaults", () =>
    Effect.gen(function*() {
      const decoded = yield* internal.decodeSettings({ name: "orders", partitions: 12 })
      assert.strictEqual(decoded.partitions, 12)
      assert.isTrue(Duration.equals(decoded.restartDelay, Duration.seconds(5)))
      assert.isTrue(Duration.equals(decoded.stopTimeout, Duration.seconds(5)))
      assert.isUndefined(decoded.shardGroup)
      const custom = yield* internal.decodeSettings({
        name: "o",
        partitions: 1,
        restartDelay: "2 seconds",
        stopTimeout: 500,
        shardGroup: "writers"
      })
      assert.isTrue(Duration.equals(custom.restartDelay, Duration.seconds(2)))
      assert.isTrue(Duration.equals(custom.stopTimeout, Duration.millis(500)))
      assert.strictEqual(custom.shardGroup, "writers")
    }))

  it.effect("rejects bad settings with the option's path", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<[Record<string, unknown>, string]> = [
        [{ name: "orders", partitions: 0 }, "partitions"],
        [{ name: "orders", partitions: 1.5 }, "partitions"],
        [{ name: "orders", partitions: 10_001 }, "partitions"],
        [{ name: "or ders", partitions: 1 }, "name"],
        [{ name: "", partitions: 1 }, "name"],
        [{ name: "a/b", partitions: 1 }, "name"],
        [{ partitions: 1 }, "name"],
        [{ name: "o", partitions: 1, restartDelay: "0 seconds" }, "restartDelay"],
        [{ name: "o", partitions: 1, stopTimeout: -1 }, "stopTimeout"]
      ]
      for (const [input, path] of cases) {
        const error = yield* Effect.flip(
          internal.decodeSettings({ name: input.name, partitions: input.partitions, ...input })
        )
        assert.strictEqual(error.path, path, JSON.stringify(input))
      }
    }))
})

describe("cluster partitions: classify", () => {
  const conflict = new CheckpointConflict({ writerId: "w", expectedPreviousId: "a", actualId: "b" })

  it("a CheckpointConflict anywhere in the cause is a fence", () => {
    assert.strictEqual(internal.classify(Cause.fail(conflict))?._tag, "Fenced")
    assert.strictEqual(
      internal.classify(Cause.combine(Cause.fail(new Error("other")), Cause.fail(conflict)))?._tag,
      "Fenced"
    )
    assert.strictEqual(internal.classify(Cause.combine(Cause.interrupt(), Cause.fail(conflict)))?._tag, "Fenced")
  })

  it("a fence the destination noticed (BigQuery meeting a successor's rows) is the same CheckpointConflict", () => {
    const noticed = new CheckpointConflict({ writerId: "w", expectedPreviousId: "a", detail: "p.d.t: offset 7" })
    const outcome = internal.classify(Cause.fail(noticed))
    assert.strictEqual(outcome?._tag, "Fenced")
    assert.include(outcome?._tag === "Fenced" ? outcome.message : "", "taken over by another writer: p.d.t: offset 7")
  })

  it("other failures are failures; an interruption alone is neither", () => {
    assert.strictEqual(internal.classify(Cause.fail({ _tag: "BigQueryError" }))?._tag, "Failed")
    assert.strictEqual(internal.classify(Cause.die("boom"))?._tag, "Failed")
    assert.isUndefined(internal.classify(Cause.interrupt()))
  })
})

interface Run {
  readonly partition: number
  readonly writerId: string
  readonly from: Option.Option<number>
}

/** A sink that records its records, and its end of input (a graceful end only: not on interruption). */
const recordingSink = (seen: Ref.Ref<Array<number>>, ended: Ref.Ref<number>) =>
  Sink.forEach((n: number) => Ref.update(seen, (all) => [...all, n])).pipe(
    Sink.mapEffect(() => Ref.update(ended, (k) => k + 1))
  )

/** A sink fenced on its first run: meanwhile another owner claimed the writer and checkpointed position 42. */
const fencedOnce = (store: CheckpointStore["Service"], attempt: Ref.Ref<number>, onFence = () => {}) =>
  Sink.drain.pipe(Sink.mapEffect(() =>
    Effect.gen(function*() {
      const n = yield* Ref.getAndUpdate(attempt, (k) => k + 1)
      if (n === 0) {
        onFence()
        const claim = yield* store.claim("job-0")
        yield* store.save("job-0", new CheckpointRecord({ id: "other", position: 42, commits: [] }), claim.id)
        return yield* new CheckpointConflict({ writerId: "job-0", actualId: "other" })
      }
    })
  ))

describe("cluster partitions: a partition's writer", () => {
  it.effect("resumes its source at the stored position, with its writer id, then idles when the source ends", () =>
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      yield* store.save("job-1", new CheckpointRecord({ id: "c1", position: 7, commits: [] }), undefined)
      const runs = yield* Ref.make<Array<Run>>([])
      const seen = yield* Ref.make<Array<number>>([])
      const ended = yield* Ref.make(0)
      const fiber = yield* internal.runPartition(
        settings(),
        {
          positionSchema: Schema.Number,
          source: (partition, from) =>
            Stream.fromEffect(Ref.update(runs, (all) => [...all, { partition, writerId: "", from }])).pipe(
              Stream.flatMap(() => Stream.range(Option.getOrElse(from, () => 0), 9))
            ),
          sink: (p) =>
            recordingSink(seen, ended).pipe(
              Sink.mapEffect(() =>
                Ref.update(
                  runs,
                  (all) => [...all, { partition: p.partition, writerId: p.writerId, from: p.resume.position }]
                )
              )
            )
        },
        1,
        held
      ).pipe(Effect.forkChild)
      yield* advance(60000)
      assert.deepStrictEqual(yield* Ref.get(seen), [7, 8, 9])
      assert.strictEqual(yield* Ref.get(ended), 1)
      const all = yield* Ref.get(runs)
      assert.deepStrictEqual(all.map((r) => r.from), [Option.some(7), Option.some(7)])
      assert.strictEqual(all[1]?.writerId, "job-1")
      assert.isUndefined(fiber.pollUnsafe(), "a complete partition idles until its shard moves")
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("when interrupted (shard moved), ends its input so the sink completes (final checkpoint)", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<Array<number>>([])
      const ended = yield* Ref.make(0)
      const pulled = yield* Queue.unbounded<number>()
      const fiber = yield* internal.runPartition(
        settings(),
        {
          positionSchema: Schema.Number,
          // an endless source, one record per second
          source: () =>
            Stream.iterate(0, (n) => n + 1).pipe(
              Stream.tap((n) => Effect.andThen(Effect.sleep("1 second"), Queue.offer(pulled, n)))
            ),
          sink: () => recordingSink(seen, ended)
        },
        0,
        held
      ).pipe(Effect.forkChild)
      yield* advance(3500)
      assert.strictEqual(yield* Queue.size(pulled), 3)
      const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.strictEqual(yield* Ref.get(ended), 1, "the sink saw the end of its input")
      assert.deepStrictEqual(yield* Ref.get(seen), [0, 1, 2])
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a sink that does not end within stopTimeout is interrupted", () =>
    Effect.gen(function*() {
      const ended = yield* Ref.make(0)
      const stopped = yield* Deferred.make<void>()
      const fiber = yield* internal.runPartition(
        settings({ stopTimeout: Duration.seconds(2) }),
        {
          positionSchema: Schema.Number,
          source: () => Stream.make(1),
          // a final checkpoint that never finishes
          sink: () =>
            Sink.drain.pipe(
              Sink.mapEffect(() => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(stopped, undefined)))),
              Sink.mapEffect(() => Ref.update(ended, (k) => k + 1))
            )
        },
        0,
        held
      ).pipe(Effect.forkChild)
      yield* advance(1000)
      const interrupting = yield* Fiber.interrupt(fiber).pipe(Effect.forkChild)
      yield* advance(1000)
      assert.isFalse(yield* Deferred.isDone(stopped), "still within stopTimeout")
      yield* advance(1500)
      yield* Fiber.join(interrupting)
      assert.isTrue(yield* Deferred.isDone(stopped), "interrupted after stopTimeout")
      assert.strictEqual(yield* Ref.get(ended), 0)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a stop whose partition another owner checkpointed since does not wait for the final checkpoint", () =>
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      const stopped = yield* Deferred.make<void>()
      const fiber = yield* internal.runPartition(
        settings({ stopTimeout: Duration.seconds(10) }),
        {
          positionSchema: Schema.Number,
          source: () => Stream.make(1),
          // a final checkpoint that never finishes (a zombie's connections are gone)
          sink: () =>
            Sink.drain.pipe(
              Sink.mapEffect(() => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(stopped, undefined))))
            )
        },
        0,
        held
      ).pipe(Effect.forkChild)
      yield* advance(1000)
      // this runner lost the shard's lock: the partition's new owner resumed (claimed) and checkpointed
      const claim = yield* store.claim("job-0")
      yield* store.save("job-0", new CheckpointRecord({ id: "new-owner", position: 5, commits: [] }), claim.id)
      const interrupting = yield* Fiber.interrupt(fiber).pipe(Effect.forkChild)
      yield* advance(300)
      assert.isTrue(yield* Deferred.isDone(stopped), "interrupted at once, not after stopTimeout")
      yield* Fiber.join(interrupting)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a stop whose writer's own saves are the stored record waits for its final checkpoint", () =>
    Effect.gen(function*() {
      const saved = yield* Ref.make<Array<unknown>>([])
      const fiber = yield* internal.runPartition(
        settings({ stopTimeout: Duration.seconds(10) }),
        {
          positionSchema: Schema.Number,
          source: () => Stream.iterate(0, (n) => n + 1).pipe(Stream.tap(() => Effect.sleep("1 second"))),
          // a checkpoint per record through the run's store, and a slow final one at the end of input
          sink: ({ resume, writerId }) => {
            // the first save expects the id the run claimed at resume
            let previous: string | undefined = resume.claimId
            const save = (position: number) =>
              Effect.gen(function*() {
                const id = `own-${position}`
                yield* resume.store.save(writerId, new CheckpointRecord({ id, position, commits: [] }), previous)
                previous = id
                yield* Ref.update(saved, (all) => [...all, position])
              })
            return Sink.forEach((n: number) => save(n)).pipe(
              Sink.mapEffect(() => Effect.andThen(Effect.sleep("2 seconds"), save(-1)))
            )
          }
        },
        0,
        held
      ).pipe(Effect.forkChild)
      yield* advance(3500)
      yield* Fiber.interrupt(fiber).pipe(Effect.forkChild)
      yield* advance(2500)
      assert.deepStrictEqual(yield* Ref.get(saved), [0, 1, 2, -1], "the final checkpoint was taken")
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("fenced (CheckpointConflict): stops, waits one lock refresh, then resumes from the store after restartDelay", () =>
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      const starts = yield* Ref.make<Array<Option.Option<number>>>([])
      const attempt = yield* Ref.make(0)
      const fiber = yield* internal.runPartition(
        settings(),
        {
          positionSchema: Schema.Number,
          source: (_, from) => Stream.fromEffect(Ref.update(starts, (all) => [...all, from])).pipe(Stream.as(1)),
          sink: () => fencedOnce(store, attempt)
        },
        0,
        held
      ).pipe(Effect.forkChild)
      // the refresh (3 s) and restartDelay (5 s)
      yield* advance(7500)
      assert.deepStrictEqual(yield* Ref.get(starts), [Option.none()])
      yield* advance(1000)
      assert.deepStrictEqual(yield* Ref.get(starts), [Option.none(), Option.some(42)])
      assert.strictEqual(yield* Ref.get(attempt), 2)
      assert.isUndefined(fiber.pollUnsafe())
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("a fenced zombie that has lost its shard never claims the writer back; it resumes once it holds the shard again", () =>
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      const starts = yield* Ref.make<Array<Option.Option<number>>>([])
      const attempt = yield* Ref.make(0)
      const claims = yield* Ref.make(0)
      let holds = true
      const counting = CheckpointStore.of({
        ...store,
        claim: (writerId) => Effect.andThen(Ref.update(claims, (k) => k + 1), store.claim(writerId))
      })
      const fiber = yield* internal.runPartition(
        settings(),
        {
          positionSchema: Schema.Number,
          source: (_, from) => Stream.fromEffect(Ref.update(starts, (all) => [...all, from])).pipe(Stream.as(1)),
          // the new owner's checkpoint, and the lock refresh that follows, take the shard away
          sink: () =>
            fencedOnce(store, attempt, () => {
              holds = false
            })
        },
        0,
        { held: () => holds, refreshInterval: Duration.seconds(3) }
      ).pipe(Effect.provideService(CheckpointStore, counting), Effect.forkChild)
      yield* advance(60_000)
      assert.deepStrictEqual(yield* Ref.get(starts), [Option.none()], "no restart without the shard")
      assert.strictEqual(yield* Ref.get(claims), 1, "its first resume only")
      holds = true
      yield* advance(8500)
      assert.deepStrictEqual(yield* Ref.get(starts), [Option.none(), Option.some(42)])
      assert.isUndefined(fiber.pollUnsafe())
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(CheckpointStore.memory)))

  it.effect("any other failure restarts from the checkpoint after restartDelay; the writer never fails", () =>
    Effect.gen(function*() {
      const starts = yield* Ref.make(0)
      const fiber = yield* internal.runPartition(
        settings({ restartDelay: Duration.seconds(1) }),
        {
          positionSchema: Schema.Number,
          source: () => Stream.fromEffect(Ref.update(starts, (k) => k + 1)).pipe(Stream.as(1)),
          sink: () => Sink.drain.pipe(Sink.mapEffect(() => Effect.fail("boom")))
        },
        0,
        held
      ).pipe(Effect.forkChild)
      yield* advance(3500)
      assert.strictEqual(yield* Ref.get(starts), 4)
      assert.isUndefined(fiber.pollUnsafe())
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(CheckpointStore.memory)))
})
