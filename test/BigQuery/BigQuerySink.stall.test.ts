/**
 * Stall reporting: a warning once appends have gone a minute without an answer, naming the tables,
 * at most once a minute, and none while answers come back. Virtual time (TestClock) drives the
 * writer's ticker; the fake answers (or holds) over a real loopback connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { BigQuerySink } from "../../src/BigQuery/index.ts"
import { eventually, warnings } from "../support/waiting.ts"
import * as F from "./sinkFixtures.ts"

describe("BigQuerySink stall reporting", () => {
  it.effect("warns after a minute without answers, naming the table, at most once a minute", () => {
    const logs = warnings()
    return F.withFake({ answer: () => ({ _tag: "hang" }) }, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const table = yield* F.destination(fake)
        const serializer = yield* F.serializer
        // the held append is never answered: the scope ends with a failure, releasing the writer
        const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
          const w = yield* BigQuerySink.writer({ table, serializer })
          yield* w.write(F.rows(3))
          yield* Effect.forkChild(w.flush)
          yield* eventually("the append reached the fake", () => fake.stats.requests >= 1)
          yield* TestClock.adjust("59 seconds")
          assert.deepStrictEqual(logs.seen, [], "no warning within the first minute")
          yield* TestClock.adjust("2 seconds")
          assert.strictEqual(logs.seen.length, 1)
          assert.match(
            logs.seen[0] ?? "",
            new RegExp(`answered no AppendRows request for 6\\d s: 1 appends in flight, to ${fake.projectId}\\.d\\.t$`)
          )
          yield* TestClock.adjust("30 seconds")
          assert.strictEqual(logs.seen.length, 1, "rate-limited to one a minute")
          yield* TestClock.adjust("31 seconds")
          assert.strictEqual(logs.seen.length, 2)
          return yield* Effect.fail("released")
        })))
        // released by the test's own failure, not by a failed assertion
        assert.deepStrictEqual(exit, Exit.fail("released"))
      })).pipe(Effect.provide(logs.layer))
  })

  it.effect("answers within the minute keep it quiet however long the stream runs", () => {
    const logs = warnings()
    return F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const w = yield* BigQuerySink.writer({ table: yield* F.destination(fake), serializer: yield* F.serializer })
        for (let i = 0; i < 5; i++) {
          yield* w.write(F.rows(1, i))
          yield* w.flush
          yield* TestClock.adjust("50 seconds")
        }
        assert.deepStrictEqual(logs.seen, [])
        assert.strictEqual((yield* w.summary).recordsWritten, 5)
      })).pipe(Effect.provide(logs.layer))
  })
})
