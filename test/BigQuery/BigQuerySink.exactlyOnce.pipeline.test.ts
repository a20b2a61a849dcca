/**
 * Pipelined exactly-once appends (ADR 0026) against the fake, which answers a connection's requests
 * in order after `latencyMillis`: the appends of one destination overlap, and a row-level rejection
 * with batches in flight behind it ends with every surviving row visible once, at contiguous offsets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, Sink } from "effect"
import { type BigQueryFailure, BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import type * as Fake from "../support/fakeBigQueryWrite.ts"
import { idOf, range, resume, visibleIds, withEo } from "./exactlyOnceFixtures.ts"
import { destination, fastRetries, rows, serializer } from "./sinkFixtures.ts"

/** Batches of about 8 rows (each ~15 bytes framed), 16 of them admitted at once. */
const small = WriteMethod.exactlyOnce({ ...fastRetries, maxAppendRequestBytes: 120, maxInFlightBytes: 16 * 120 })

const buffered = (c: Fake.AppendContext) => c.offset !== undefined

/** Writes `n` rows through an exactly-once writer on `d.t` and checkpoints; the rows routed. */
const writeAll = (fake: Fake.FakeBigQuery, n: number) =>
  Effect.gen(function*() {
    const routed: Array<BigQueryFailure.BigQueryFailure> = []
    const writer = yield* BigQuerySink.writer({
      table: yield* destination(fake),
      serializer: yield* serializer,
      writeMethod: small,
      failureHandler: FailureHandler.deadLetter(
        Sink.forEach((f: BigQueryFailure.BigQueryFailure) => Effect.sync(() => void routed.push(f)))
      ),
      checkpoint: { resume: yield* resume() }
    })
    yield* writer.write(rows(n))
    yield* writer.checkpoint(n)
    return { routed, summary: yield* writer.summary }
  })

/** The rows of the destination's stream, in offset order, as ids. */
const streamIds = (fake: Fake.FakeBigQuery): Array<number> => {
  const [stream] = fake.buffered.streams.values()
  return (stream?.rows ?? []).map(idOf)
}

/**
 * Row errors for the rows of `rejected`, wherever they come (bad rows stay bad); the fake answers a
 * request at a stale offset with the offset error first, as the service checks the offset first,
 * unless `uncheckedOffset` (a service that reads the rows first).
 */
const rejecting = (rejected: ReadonlySet<number>, uncheckedOffset = false) => (c: Fake.AppendContext): Fake.Answer => {
  if (!buffered(c)) return { _tag: "default" }
  const errors = c.rows.flatMap((row, index) => {
    const id = idOf(row)
    return rejected.has(id) ? [{ index, message: `row ${id} is bad` }] : []
  })
  return errors.length === 0 ? { _tag: "default" } : { _tag: "rowErrors", errors, uncheckedOffset }
}

/**
 * Row errors for the second buffered append, and `behind` for the third when it comes at another
 * offset (the batch behind the rejected one, at its stale stamp); the default for the rest.
 */
const behindRejection = (behind: Fake.Answer) => {
  let seen = 0
  let rejectedAt: number | undefined
  return (c: Fake.AppendContext): Fake.Answer => {
    if (!buffered(c)) return { _tag: "default" }
    const n = seen++
    if (n === 1) {
      rejectedAt = c.offset
      return { _tag: "rowErrors", errors: [{ index: 0, message: "bad" }] }
    }
    return n === 2 && c.offset !== rejectedAt ? behind : { _tag: "default" }
  }
}

describe("BigQuerySink.exactlyOnce: pipelined appends", () => {
  it.live("the appends of one destination overlap: several are sent before the first is answered", () => {
    const arrivals: Array<{ readonly at: number; readonly offset: number | undefined }> = []
    return withEo({
      answer: (c) => {
        if (!buffered(c)) return { _tag: "default" }
        arrivals.push({ at: Date.now(), offset: c.offset })
        // the first answer is held: a connection answers in order, so everything behind it waits too
        // (2 s: what is asserted is what arrives while it is held, not how fast a loaded machine sends)
        return arrivals.length === 1 ? { _tag: "delay", millis: 2000, next: { _tag: "default" } } : { _tag: "default" }
      }
    }, (fake) =>
      Effect.gen(function*() {
        const { summary } = yield* writeAll(fake, 200)
        assert.deepStrictEqual(visibleIds(fake), range(0, 200))
        assert.deepStrictEqual(streamIds(fake), range(0, 200), "each row once, in order")
        assert.strictEqual(summary.recordsWritten, 200)
        const first = arrivals[0]!.at
        const early = arrivals.filter((a) => a.at < first + 1900)
        assert.isAtLeast(early.length, 4, "appends sent while the first was unanswered")
        const offsets = early.map((a) => a.offset ?? -1)
        assert.deepStrictEqual(offsets, offsets.toSorted((a, b) => a - b), "stamped in order")
        assert.strictEqual(new Set(offsets).size, offsets.length, "each at its own offset")
      }))
  })

  it.live("a rejection with batches in flight behind it: survivors at the rejected offset, the rest restamped", () => {
    return withEo({ answer: rejecting(new Set([50])), latencyMillis: 20 }, (fake) =>
      Effect.gen(function*() {
        const { routed, summary } = yield* writeAll(fake, 200)
        const expected = range(0, 200).filter((id) => id !== 50)
        assert.deepStrictEqual(visibleIds(fake), expected)
        assert.deepStrictEqual(streamIds(fake), expected, "contiguous offsets, nothing twice")
        assert.strictEqual(routed.length, 1)
        assert.strictEqual(summary.recordsWritten, 199)
        assert.strictEqual(summary.recordsFailed, 1)
        // the survivors' replay, and at least one batch behind it restamped at the replay's end
        assert.isAtLeast(summary.retries, 2, "batches behind the rejected one were in flight at stale offsets")
      }))
  })

  it.live("an append acknowledged at an offset other than its predecessor's end is terminal", () =>
    // the batch behind the rejected one is acknowledged at its stale offset: a server that lies
    withEo({ answer: behindRejection({ _tag: "ack" }), latencyMillis: 5 }, (fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(writeAll(fake, 40))
        assert.include(String(error), "inconsistent")
        assert.deepStrictEqual(visibleIds(fake), [], "nothing flushed")
      })))

  it.live("survivors of a batch behind a rejected one go at the predecessor's end (row errors before the offset check)", () =>
    // a service that reports row errors before it looks at the offset: rows 50 and 90 are bad
    withEo({ answer: rejecting(new Set([50, 90]), true), latencyMillis: 5 }, (fake) =>
      Effect.gen(function*() {
        const { routed, summary } = yield* writeAll(fake, 200)
        const expected = range(0, 200).filter((id) => id !== 50 && id !== 90)
        assert.deepStrictEqual(visibleIds(fake), expected)
        assert.deepStrictEqual(streamIds(fake), expected)
        assert.strictEqual(routed.length, 2)
        assert.strictEqual(summary.recordsWritten, 198)
      })))

  it.live("a batch whose attempt at a stale offset went unanswered is not moved: terminal, nothing flushed", () =>
    // the batch behind the rejected one, at its stale offset: the connection breaks before it is answered
    withEo({ answer: behindRejection({ _tag: "streamError", code: 14, message: "reset" }), latencyMillis: 5 }, (fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(writeAll(fake, 40))
        assert.include(String(error), "got no answer")
        assert.deepStrictEqual(visibleIds(fake), [], "nothing flushed: the restore is the repair")
      })))

  it.live.prop(
    "property: any rejections and transient failures leave every surviving row visible exactly once",
    {
      rejectedIds: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 119 }))).check(
        Schema.isMaxLength(6)
      ),
      transientAt: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 30 }))).check(
        Schema.isMaxLength(4)
      ),
      latencyMillis: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4 }))
    },
    ({ latencyMillis, rejectedIds, transientAt }) => {
      const rejected = new Set(rejectedIds)
      const faults = rejecting(rejected)
      const transient = new Set(transientAt)
      let n = 0
      const answer = (c: Fake.AppendContext): Fake.Answer =>
        buffered(c) && transient.has(n++)
          ? { _tag: "error", code: 14, message: "try again" }
          : faults(c)
      return Effect.scoped(withEo({ answer, latencyMillis }, (fake) =>
        Effect.gen(function*() {
          const { summary } = yield* writeAll(fake, 120)
          const expected = range(0, 120).filter((id) => !rejected.has(id))
          assert.deepStrictEqual(visibleIds(fake), expected)
          assert.deepStrictEqual(streamIds(fake), expected)
          assert.strictEqual(summary.recordsWritten, expected.length)
          assert.strictEqual(summary.recordsFailed, rejected.size)
        })))
    },
    { timeout: 60_000, arbitrary: { runs: 15, seed: 20261201 } }
  )
})
