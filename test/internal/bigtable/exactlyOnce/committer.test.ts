import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Metric } from "effect"
import { BigtableClient, BigtableMetrics, Mutation } from "../../../../src/Bigtable/index.ts"
import { commit } from "../../../../src/internal/bigtable/exactlyOnce/committer.ts"
import type { Envelope } from "../../../../src/internal/bigtable/exactlyOnce/envelope.ts"
import * as identity from "../../../../src/internal/bigtable/exactlyOnce/identity.ts"
import { makeFakeCheckAndMutate } from "../../../support/fakeCheckAndMutate.ts"

const envelopes = (table: string, n: number, rows = 4): Array<Envelope> =>
  Array.from({ length: n }, (_, i) => ({
    tableName: `projects/p/instances/i/tables/${table}`,
    appProfileId: "eo",
    rowKey: new TextEncoder().encode(`row${i % rows}`),
    identity: identity.derive("w", String(i), 0),
    markerFamily: "m",
    mutations: [Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: BigInt(i + 1) })]
  }))

const settings = { maxInFlightRequests: 4, responseTimeout: Duration.seconds(5), perDestinationMetrics: true }

const counter = (metric: Metric.Counter<number>, table: string) =>
  Effect.map(Metric.value(Metric.withAttributes(metric, { destination: `p.i.${table}` })), (s) => s.count)

const run = <A, E>(
  fake: ReturnType<typeof makeFakeCheckAndMutate>,
  f: (client: BigtableClient.BigtableClient["Service"]) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    return yield* f(yield* BigtableClient.BigtableClient)
  }).pipe(Effect.provide(Layer.orDie(fake.layer)))

describe("committer", () => {
  it.effect("applies each envelope once; a re-commit is absorbed by the markers", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate({ latencyMs: 1 })
      const batch = envelopes("t1", 40)
      const first = yield* run(fake, (c) => commit(c, batch, settings))
      assert.deepStrictEqual(first, { completed: 40, deduplicated: 0 })
      const again = yield* run(fake, (c) => commit(c, batch, settings))
      assert.deepStrictEqual(again, { completed: 0, deduplicated: 40 })
      const expected = [0, 1, 2, 3].map((r) =>
        batch.filter((_, i) => i % 4 === r).reduce((s, _, k) => s + BigInt(r + 4 * k + 1), 0n)
      )
      for (let r = 0; r < 4; r++) assert.strictEqual(fake.sum(batch[0]!.tableName, `row${r}`, "c", "n"), expected[r])
      assert.strictEqual(fake.applied(), 40)
      assert.isAtMost(fake.peakInFlight(), 4)
      assert.strictEqual(fake.peakInFlight(), 4)
      assert.strictEqual(yield* counter(BigtableMetrics.requestsCompleted, "t1"), 40)
      assert.strictEqual(yield* counter(BigtableMetrics.requestsDeduplicated, "t1"), 40)
      assert.deepStrictEqual(fake.calls[0]?.requestParams, [
        "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft1&app_profile_id=eo"
      ])
      assert.strictEqual(fake.calls[0]?.appProfileId, "eo")
    }))

  it.effect("a failure cancels the rest and fails with CommitFailed telling to restore and retry", () =>
    Effect.gen(function*() {
      const fake = makeFakeCheckAndMutate({
        latencyMs: 5,
        fail: (call) => (call.n === 3 ? { code: 4, message: "deadline", applied: true } : undefined)
      })
      const batch = envelopes("t2", 30)
      const error = yield* run(fake, (c) => commit(c, batch, { ...settings, maxInFlightRequests: 3 })).pipe(Effect.flip)
      assert.strictEqual(error.reason._tag, "BigtableCommitFailed")
      if (error.reason._tag !== "BigtableCommitFailed") return
      assert.strictEqual(error.reason.code, 4)
      assert.strictEqual(error.reason.requests, 30)
      assert.isTrue(error.isRetryable)
      assert.match(error.message, /Restore the writer from its checkpoint store and retry/)
      // the rest were not sent, the ones in flight were cancelled
      assert.isBelow(fake.calls.length, 30)
      assert.isAtLeast(fake.cancelled(), 1)
      assert.strictEqual(yield* counter(BigtableMetrics.requestsFailed, "t2"), 1)
    }))

  it.effect("re-running after a failure applies every effect exactly once", () =>
    Effect.gen(function*() {
      let failing = true
      const fake = makeFakeCheckAndMutate({
        latencyMs: 1,
        fail: (call) => (failing && call.n === 7 ? { code: 14, message: "lost response", applied: true } : undefined)
      })
      const batch = envelopes("t3", 20, 2)
      yield* run(fake, (c) => commit(c, batch, settings)).pipe(Effect.flip)
      failing = false
      const retried = yield* run(fake, (c) => commit(c, batch, settings))
      assert.strictEqual(retried.completed + retried.deduplicated, 20)
      assert.isAtLeast(retried.deduplicated, 1)
      assert.strictEqual(fake.applied(), 20)
      const total = fake.sum(batch[0]!.tableName, "row0", "c", "n") + fake.sum(batch[0]!.tableName, "row1", "c", "n")
      assert.strictEqual(total, BigInt((20 * 21) / 2))
    }))
})
