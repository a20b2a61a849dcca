/**
 * The BigQuery sink's timers under the TestClock, through the public sink and writer against the
 * in-process fake: rows go at once (a destination with nothing in flight sends), `flushInterval` adds
 * a barrier (the handler's flush) at every interval, `destinationIdleTimeout` evicts an
 * idle clean destination (reopened on demand), and the handler's flush runs at every barrier,
 * after the writer drained.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Cause, Effect, Fiber, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { type BigQueryFailure, BigQuerySink, TableDestination, WriteMethod } from "../../src/BigQuery/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import { eventually } from "../support/waiting.ts"
import * as F from "./sinkFixtures.ts"

/** Real time for the fake's network round trips while the TestClock stands still. */
const settle = TestClock.withLive(Effect.sleep("150 millis"))

const tableName = (fake: { readonly projectId: string }) => `${fake.projectId}.d.t`

/** A handler recording its calls; `flush` notes how many rows the fake holds at that moment. */
const recording = (rowsAtFake: () => number) => {
  const events: Array<string> = []
  const handler = FailureHandler.make({
    handle: (f: BigQueryFailure.BigQueryFailure) => Effect.sync(() => void events.push(`handle:${f.message}`)),
    flush: Effect.sync(() => void events.push(`flush@${rowsAtFake()}`))
  })
  return { events, handler }
}

/** Even ids to the table, odd ones unroutable (routed to the handler). */
const evenOnly = (table: TableDestination.TableDestination) => (row: F.Row) =>
  row.id % 2n === 0n
    ? table
    : TableDestination.unroutable({ payload: new Uint8Array([1]), reason: `odd ${row.id}` })

describe("BigQuerySink timers (TestClock)", () => {
  it.effect("flushInterval: rows go at once, not at the timer; the timer's barrier runs at every interval", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const { events, handler } = recording(() => fake.rows(tableName(fake)).length)
        const input = yield* Queue.unbounded<F.Row, Cause.Done>()
        const sink = BigQuerySink.make({
          table: yield* F.destination(fake),
          serializer: yield* F.serializer,
          failureHandler: handler,
          writeMethod: WriteMethod.atLeastOnce({ flushInterval: "1 second" })
        })
        const fiber = yield* Stream.fromQueue(input).pipe(Stream.run(sink), Effect.forkChild)
        yield* Queue.offerAll(input, F.rows(10))
        // an idle destination sends at once (ADR 0029): the timer is no longer what sends rows
        yield* eventually("the rows, before any interval", () => fake.rows(tableName(fake)).length === 10)
        assert.deepStrictEqual(events, [], "no barrier before the first interval")
        yield* TestClock.adjust("999 millis")
        yield* settle
        assert.deepStrictEqual(events, [], "no barrier 1 ms before the interval")
        yield* TestClock.adjust("1 millis")
        yield* eventually("the first timer barrier", () => events.length === 1)
        assert.deepStrictEqual(events, ["flush@10"])

        yield* Queue.offerAll(input, F.rows(5, 10))
        yield* eventually("new rows, before the next interval", () => fake.rows(tableName(fake)).length === 15)
        yield* TestClock.adjust("1 second")
        yield* eventually("the second timer barrier", () => events.length === 2)
        assert.deepStrictEqual(events, ["flush@10", "flush@15"])

        // the end of input flushes without waiting for the timer
        yield* Queue.offerAll(input, F.rows(3, 15))
        yield* Queue.end(input)
        const summary = yield* Fiber.join(fiber)
        assert.strictEqual(summary.recordsWritten, 18)
        assert.strictEqual(fake.rows(tableName(fake)).length, 18)
        assert.deepStrictEqual(events, ["flush@10", "flush@15", "flush@18"])
      })))

  it.effect("without flushInterval no timer flushes: rows go at once, the handler flushes at the end of input", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const { events, handler } = recording(() => fake.rows(tableName(fake)).length)
        const input = yield* Queue.unbounded<F.Row, Cause.Done>()
        const sink = BigQuerySink.make({
          table: yield* F.destination(fake),
          serializer: yield* F.serializer,
          failureHandler: handler
        })
        const fiber = yield* Stream.fromQueue(input).pipe(Stream.run(sink), Effect.forkChild)
        yield* Queue.offerAll(input, F.rows(10))
        yield* eventually("the rows, with the clock standing still", () => fake.rows(tableName(fake)).length === 10)
        yield* TestClock.adjust("1 hour")
        yield* settle
        assert.deepStrictEqual(events, [], "no timer barrier in an hour")
        yield* Queue.end(input)
        assert.strictEqual((yield* Fiber.join(fiber)).recordsWritten, 10)
        assert.strictEqual(fake.rows(tableName(fake)).length, 10)
        assert.deepStrictEqual(events, ["flush@10"])
      })))

  it.effect("destinationIdleTimeout: an idle clean destination is evicted at a flush and reopened on demand", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const w = yield* BigQuerySink.writer({
          table: yield* F.destination(fake),
          serializer: yield* F.serializer,
          writeMethod: WriteMethod.atLeastOnce({ destinationIdleTimeout: "1 minute" })
        })
        yield* w.write(F.rows(10))
        yield* w.flush
        assert.strictEqual(fake.stats.connections, 1)
        assert.strictEqual(fake.stats.schemasSent, 1)

        // used again within the timeout: kept, the same connection carries the rows
        yield* TestClock.adjust("59 seconds")
        yield* w.flush
        yield* w.write(F.rows(10, 10))
        yield* w.flush
        assert.strictEqual(fake.stats.connections, 1, "not evicted while in use")
        assert.strictEqual(fake.stats.schemasSent, 1)

        // exactly the timeout since the last use is not yet idle
        yield* TestClock.adjust("1 minute")
        yield* w.flush
        yield* w.write(F.rows(10, 20))
        yield* w.flush
        assert.strictEqual(fake.stats.connections, 1, "not evicted at exactly the timeout")

        // idle for longer: this flush evicts it; the next record reopens it on a new connection
        yield* TestClock.adjust("61 seconds")
        yield* w.flush
        yield* settle
        assert.strictEqual(fake.stats.connections, 1, "an evicted destination opens nothing by itself")
        yield* w.write(F.rows(10, 30))
        yield* w.flush
        assert.strictEqual(fake.stats.connections, 2, "reopened on a new connection")
        assert.strictEqual(fake.stats.schemasSent, 2, "the new connection sends the writer schema again")
        assert.strictEqual(fake.rows(tableName(fake)).length, 40)
        const summary = yield* w.summary
        assert.strictEqual(summary.recordsWritten, 40)
      })))

  it.effect("the handler's flush runs at every writer.flush, after the writer drained", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const { events, handler } = recording(() => fake.rows(tableName(fake)).length)
        const table = yield* F.destination(fake)
        const w = yield* BigQuerySink.writer({
          destinationResolver: evenOnly(table),
          serializer: yield* F.serializer,
          failureHandler: handler
        })
        yield* w.write(F.rows(6))
        yield* w.flush
        assert.deepStrictEqual(events, ["handle:odd 1", "handle:odd 3", "handle:odd 5", "flush@3"])
        yield* w.flush
        assert.deepStrictEqual(events.slice(4), ["flush@3"], "an empty barrier still flushes the handler")
        yield* w.write(F.rows(4, 6))
        yield* w.flush
        assert.deepStrictEqual(events.slice(5), ["handle:odd 7", "handle:odd 9", "flush@5"])
      })))

  it.effect("the handler's flush runs at each timer flush and at the end of input, after the rows landed", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const { events, handler } = recording(() => fake.rows(tableName(fake)).length)
        const input = yield* Queue.unbounded<F.Row, Cause.Done>()
        const sink = BigQuerySink.make({
          destinationResolver: evenOnly(yield* F.destination(fake)),
          serializer: yield* F.serializer,
          failureHandler: handler,
          writeMethod: WriteMethod.atLeastOnce({ flushInterval: "10 seconds" })
        })
        const fiber = yield* Stream.fromQueue(input).pipe(Stream.run(sink), Effect.forkChild)
        yield* Queue.offerAll(input, F.rows(4))
        // the odd rows reach the handler as they are admitted; the test clock stands, so no timer barrier
        // can come (a fixed real-time wait here failed on a loaded machine: the rows had not arrived yet)
        yield* eventually("the odd rows routed", () => events.length >= 2)
        assert.deepStrictEqual(events, ["handle:odd 1", "handle:odd 3"], "no handler flush before a barrier")
        yield* TestClock.adjust("10 seconds")
        yield* eventually("the timer barrier", () => events.length === 3)
        assert.strictEqual(events[2], "flush@2")
        yield* Queue.offerAll(input, F.rows(2, 4))
        yield* Queue.end(input)
        const summary = yield* Fiber.join(fiber)
        // the end of input is one barrier: the sink's final flush; the scope's closing adds none
        assert.deepStrictEqual(events.slice(3), ["handle:odd 5", "flush@3"])
        assert.strictEqual(summary.recordsWritten, 3)
        assert.strictEqual(summary.recordsFailed, 3)
      })))

  it.effect("closing the writer's scope after success is a barrier: drain, then the handler's flush", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const { events, handler } = recording(() => fake.rows(tableName(fake)).length)
        const table = yield* F.destination(fake)
        const serializer = yield* F.serializer
        yield* Effect.scoped(Effect.gen(function*() {
          const w = yield* BigQuerySink.writer({
            destinationResolver: evenOnly(table),
            serializer,
            failureHandler: handler
          })
          yield* w.write(F.rows(8))
        }))
        assert.deepStrictEqual(events, ["handle:odd 1", "handle:odd 3", "handle:odd 5", "handle:odd 7", "flush@4"])
      })))

  it.effect("the end of input flushes the handler exactly once (the scope's closing does not flush again)", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const { events, handler } = recording(() => fake.rows(tableName(fake)).length)
        const summary = yield* Stream.fromIterable(F.rows(6)).pipe(
          Stream.run(BigQuerySink.make({
            destinationResolver: evenOnly(yield* F.destination(fake)),
            serializer: yield* F.serializer,
            failureHandler: handler
          }))
        )
        assert.strictEqual(summary.recordsWritten, 3)
        assert.deepStrictEqual(events, ["handle:odd 1", "handle:odd 3", "handle:odd 5", "flush@3"])
      })))

  it.effect("closing the writer's scope right after a flush does not flush the handler again", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(tableName(fake), F.columns)
        const { events, handler } = recording(() => fake.rows(tableName(fake)).length)
        const table = yield* F.destination(fake)
        const serializer = yield* F.serializer
        yield* Effect.scoped(Effect.gen(function*() {
          const w = yield* BigQuerySink.writer({
            destinationResolver: evenOnly(table),
            serializer,
            failureHandler: handler
          })
          yield* w.write(F.rows(4))
          yield* w.flush
        }))
        assert.deepStrictEqual(events, ["handle:odd 1", "handle:odd 3", "flush@2"])
      })))
})
