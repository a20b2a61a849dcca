import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Logger, Option, Queue, Ref, Schema, Sink, Stream } from "effect"
import { Sharding, type SingletonAddress, TestRunner } from "effect/cluster"
import { TestClock } from "effect/testing"
import { Partitions } from "../../src/Cluster.ts"
import { CheckpointConflict, CheckpointRecord, CheckpointStore } from "../../src/Sink/CheckpointStore.ts"
import { virtually } from "../support/virtualTime.ts"

/**
 * The depth of the current fiber's continuation stack. Effect keeps it in the fiber's `_stack` (not part of
 * the typed API); a restart nested in the previous run's error handler leaves one more frame on it per restart.
 */
const stackDepth = (): number => {
  const fiber: unknown = Fiber.getCurrent()
  return typeof fiber === "object" && fiber !== null && "_stack" in fiber && Array.isArray(fiber._stack)
    ? fiber._stack.length
    : -1
}

describe("Partitions.layer", () => {
  it("writer ids are name-partition", () => {
    assert.strictEqual(Partitions.writerId("orders", 2), "orders-2")
  })

  it.effect("fails with a SinkConfigError naming the option, before registering anything", () =>
    Effect.gen(function*() {
      const layer = Partitions.layer({
        name: "orders",
        partitions: 0,
        positionSchema: Schema.Number,
        source: () => Stream.empty,
        sink: () => Sink.drain
      })
      const error = yield* Effect.flip(Layer.build(layer).pipe(Effect.scoped))
      assert.strictEqual(error._tag, "SinkConfigError")
      assert.strictEqual(error.path, "partitions")
    }).pipe(Effect.provide(Layer.merge(TestRunner.layer, CheckpointStore.memory))))

  it.effect("on a one-runner cluster, runs every partition's writer with its writer id, from its checkpoint", () =>
    Effect.gen(function*() {
      const store = yield* CheckpointStore
      // partition 1 resumes at index 3
      yield* store.save("orders-1", new CheckpointRecord({ id: "c", position: 3, commits: [] }), undefined)
      const written = yield* Ref.make<ReadonlyArray<string>>([])
      const done = yield* Effect.forEach([0, 1, 2], () => Deferred.make<void>())
      const layer = Partitions.layer({
        name: "orders",
        partitions: 3,
        positionSchema: Schema.Number,
        source: (partition, from) =>
          Stream.range(Option.getOrElse(from, () => 0), 4).pipe(Stream.map((i) => ({ partition, i }))),
        sink: ({ partition, writerId }) =>
          Sink.forEach((row: { readonly i: number }) => Ref.update(written, (all) => [...all, `${writerId}:${row.i}`]))
            .pipe(Sink.mapEffect(() => {
              const finished = done[partition]
              return finished === undefined
                ? Effect.die(`no partition ${partition}`)
                : Deferred.succeed(finished, undefined)
            }))
      })
      // the cluster's own timers (shard assignment, lock refresh) run on the TestClock, moved in steps
      const exit = yield* virtually(
        Layer.build(layer).pipe(Effect.andThen(Effect.forEach(done, Deferred.await)), Effect.scoped),
        { step: "100 millis", steps: 200 }
      )
      assert.isTrue(Exit.isSuccess(exit), `every partition's writer ended: ${String(exit)}`)
      const all = (yield* Ref.get(written)).toSorted()
      assert.deepStrictEqual(all, [
        "orders-0:0",
        "orders-0:1",
        "orders-0:2",
        "orders-0:3",
        "orders-0:4",
        "orders-1:3",
        "orders-1:4",
        "orders-2:0",
        "orders-2:1",
        "orders-2:2",
        "orders-2:3",
        "orders-2:4"
      ])
    }).pipe(Effect.provide(Layer.merge(TestRunner.layer, CheckpointStore.memory))))

  for (const ending of ["failed", "fenced"] as const) {
    it.effect(`a partition whose writer is ${ending} over and over restarts in constant space (same depth after 50 and 200 restarts)`, () =>
      Effect.gen(function*() {
        const inner = yield* CheckpointStore
        // the partition's fiber claims its writer (resume) at each (re)start: the depth is read there
        const depths: Array<number> = []
        const enough = yield* Deferred.make<void>()
        const store = CheckpointStore.of({
          load: inner.load,
          claim: (writerId) =>
            Effect.suspend(() => {
              depths.push(stackDepth())
              return depths.length > 200
                ? Effect.andThen(Deferred.succeed(enough, undefined), inner.claim(writerId))
                : inner.claim(writerId)
            }),
          save: inner.save
        })
        const layer = Partitions.layer({
          name: "loop",
          partitions: 1,
          positionSchema: Schema.Number,
          restartDelay: "1 second",
          source: () => Stream.make(1),
          sink: ({ writerId }): Sink.Sink<void, number, never, string | CheckpointConflict> =>
            ending === "failed"
              ? Sink.fail("the destination refused")
              : Sink.fail(new CheckpointConflict({ writerId, expectedPreviousId: "a", actualId: "b" }))
        }).pipe(Layer.provide(Layer.succeed(CheckpointStore, store)))
        const fiber = yield* Layer.build(layer).pipe(
          Effect.andThen(Deferred.await(enough)),
          Effect.scoped,
          Effect.forkChild
        )
        // a fenced writer also waits one lock refresh (Sharding's default, 10 seconds) before each restart
        const step = ending === "fenced" ? "11 seconds" : "1 second"
        for (let i = 0; i < 400 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust(step)
        yield* Fiber.join(fiber)
        assert.isAbove(depths[0] ?? -1, 0, "the fiber's stack is readable")
        assert.strictEqual(
          depths[200],
          depths[50],
          `depth at restarts 0, 50, 100, 150, 200: ${[0, 50, 100, 150, 200].map((i) => depths[i]).join(", ")}`
        )
      }).pipe(
        Effect.provide(Layer.mergeAll(TestRunner.layer, CheckpointStore.memory, Logger.layer([])))
      ))
  }

  it.effect("with shardsPerGroup, names the singletons so the partitions fill distinct shards; writer ids unchanged", () =>
    Effect.gen(function*() {
      const sharding = yield* Sharding.Sharding
      const registered = yield* Queue.unbounded<SingletonAddress.SingletonAddress>()
      yield* sharding.getRegistrationEvents.pipe(
        Stream.runForEach((e) => e._tag === "SingletonRegistered" ? Queue.offer(registered, e.address) : Effect.void),
        Effect.forkScoped
      )
      yield* Effect.yieldNow
      const layer = Partitions.layer({
        name: "spread",
        partitions: 40,
        shardsPerGroup: 300, // TestRunner's ShardingConfig
        positionSchema: Schema.Number,
        source: () => Stream.never,
        sink: () => Sink.drain
      })
      yield* Layer.build(layer)
      const addresses = yield* Queue.takeN(registered, 40)
      // 40 names hashed at random onto 300 shards share one with probability 1 - (299/300)...(261/300) = 93%
      assert.strictEqual(new Set(addresses.map((a) => a.shardId.id)).size, 40)
      for (const a of addresses) assert.match(a.name, /^spread-\d+(~\d+)?$/)
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(TestRunner.layer, CheckpointStore.memory))))

  it.effect("a shardsPerGroup that is not the cluster's fails the layer with a SinkConfigError naming it", () =>
    Effect.gen(function*() {
      const layer = Partitions.layer({
        name: "spread",
        partitions: 4,
        shardsPerGroup: 7,
        positionSchema: Schema.Number,
        source: () => Stream.never,
        sink: () => Sink.drain
      })
      const error = yield* Effect.flip(Layer.build(layer).pipe(Effect.scoped))
      assert.strictEqual(error._tag, "SinkConfigError")
      assert.strictEqual(error.path, "shardsPerGroup")
    }).pipe(Effect.provide(Layer.mergeAll(TestRunner.layer, CheckpointStore.memory))))
})
