import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Option, Ref, Schema, Sink, Stream } from "effect"
import { TestRunner } from "effect/cluster"
import { Partitions } from "../../src/Cluster.ts"
import { CheckpointRecord, CheckpointStore } from "../../src/Sink/CheckpointStore.ts"
import { virtually } from "../support/virtualTime.ts"

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
})
