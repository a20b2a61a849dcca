/**
 * The BigQuery backend on the writer core, against the in-process fake: what it keeps per
 * destination on the caller's side (`prepare`'s size hints and projections) goes with the
 * destination when it is evicted, so a dynamic resolver over ever new tables keeps it bounded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Metric, Tracer } from "effect"
import { TestClock } from "effect/testing"
import {
  BigQueryClient,
  BigQueryMetrics,
  BigQuerySink,
  type TableDestination,
  WriteMethod
} from "../../../../src/BigQuery/index.ts"
import * as Options from "../../../../src/internal/bigquery/options.ts"
import * as Backend from "../../../../src/internal/bigquery/storageWrite/backend.ts"
import type * as Prepare from "../../../../src/internal/bigquery/storageWrite/prepare.ts"
import { limitsOf } from "../../../../src/internal/bigquery/storageWrite/writer.ts"
import * as core from "../../../../src/internal/core/writer.ts"
import { Code } from "../../../../src/internal/wire/grpcStatus.ts"
import { FailureHandler, type RecordFailed } from "../../../../src/Sink.ts"
import { idOf } from "../../../BigQuery/exactlyOnceFixtures.ts"
import { columns, destination, type Row, rows, serializer, ticking, withFake } from "../../../BigQuery/sinkFixtures.ts"
import type * as Fake from "../../../support/fakeBigQueryWrite.ts"

/** A writer on the BigQuery backend of `settings`, and what its caller's side keeps (`prepare`'s state). */
const writerOf = Effect.fnUntraced(function*(settings: Options.Settings<Row, RecordFailed, never>) {
  const client = yield* BigQueryClient.BigQueryClient
  let env: Prepare.Env<Row> | undefined
  const writer = yield* core.make<Backend.StorageWriteMethod<Row, RecordFailed, never>>({
    handler: settings.failureHandler,
    limits: limitsOf(settings.stream),
    retry: settings.stream.retry,
    recovery: settings.stream.recovery,
    metrics: { perDestination: false },
    backend: (c) => Effect.tap(Backend.make(settings, client)(c), (b) => Effect.sync(() => void (env = b.prepareEnv)))
  })
  return { writer, env: () => env }
})

/** The rows of each append the fake received, in order. */
const sent: Array<number> = []

describe("BigQuery backend: per-destination state", () => {
  it.effect("destinations evicted one after another leave no prepare state behind", () =>
    Effect.scoped(withFake({}, (fake) =>
      Effect.gen(function*() {
        const n = 40
        const tables: Array<TableDestination.TableDestination> = []
        for (let i = 0; i < n; i++) {
          fake.createTable(`${fake.projectId}.d.t${i}`, columns)
          tables.push(yield* destination(fake, `t${i}`))
        }
        // row i goes to table t<i>: every table is new, used once, then idle
        const settings = yield* Options.decode({
          destinationResolver: (row: Row) => tables[Number(row.id)] ?? tables[0] as TableDestination.TableDestination,
          serializer: yield* serializer,
          failureHandler: FailureHandler.failJob,
          writeMethod: WriteMethod.atLeastOnce({ destinationIdleTimeout: "1 second" })
        })
        const { env, writer } = yield* writerOf(settings)
        const sizes = () => [env()?.projections.size ?? -1, env()?.sizeHints.size ?? -1]
        for (let i = 0; i < n; i++) {
          yield* writer.write(rows(1, i))
          // a barrier forgets the destinations idle past the timeout: all but this one
          yield* writer.flush
          const [projections = 0, hints = 0] = sizes()
          assert.isAtMost(projections, 1, `${projections} projections after ${i + 1} tables`)
          assert.isAtMost(hints, 1, `${hints} size hints after ${i + 1} tables`)
          yield* TestClock.adjust("2 seconds")
        }
        yield* writer.flush
        assert.deepStrictEqual(sizes(), [0, 0])
        assert.strictEqual((yield* writer.summary).recordsWritten, n)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t${n - 1}`).length, 1)
      }))))

  it.effect("a slice whose first row does not fit the open batch: the owner sends that batch first, the projection follows", () =>
    Effect.scoped(withFake({
      // the second append goes unanswered: it stays in flight while the next writes are batched, until
      // its response timeout re-sends it
      answer: (c) => {
        sent.push(c.rows.length)
        return c.request === 1 ? { _tag: "hang" } : { _tag: "default" }
      }
    }, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, columns)
        const table = yield* destination(fake, "t")
        // rows of ids 1000-1099: 15-byte frames, 10 of them in a 160-byte request
        const settings = yield* Options.decode({
          destinationResolver: () => table,
          serializer: yield* serializer,
          failureHandler: FailureHandler.failJob,
          writeMethod: WriteMethod.atLeastOnce({ maxAppendRequestBytes: 160, responseTimeout: "1 minute" })
        })
        const { env, writer } = yield* writerOf(settings)
        // until the fake has seen `n` requests (they cross a real socket)
        const seen = (n: number) =>
          Effect.gen(function*() {
            for (let k = 0; k < 400 && sent.length < n; k++) yield* TestClock.withLive(Effect.sleep("5 millis"))
          })
        // the table open and its connection up, so that the next append goes at once
        yield* writer.write(rows(1, 1099))
        yield* writer.flush
        yield* writer.write(rows(1, 1000)) // sent at once: the table is idle
        yield* seen(2)
        yield* writer.write(rows(10, 1001)) // batched behind it: 150 bytes, 10 left
        yield* writer.write(rows(3, 1011)) // starts the next batch
        yield* seen(3)
        assert.strictEqual(env()?.projections.get(table.toString())?.frames, 3 * 15)
        // the unanswered append times out, is abandoned with its connection and re-sent (each step on
        // the test clock, moved on while the flush waits)
        yield* ticking(writer.flush, "5 millis", "10 seconds")
        assert.deepStrictEqual(sent.slice(0, 4), [1, 1, 10, 3])
        assert.strictEqual(new Set(fake.rows(`${fake.projectId}.d.t`).map((r) => r.join())).size, 15)
      }))))

  it.live("closing after a failure leaves no AppendRows stream open, while appends reconnect", () =>
    Effect.scoped(withFake({
      // t's appends fail UNAVAILABLE (reconnecting on a 1 ms backoff); bad's first one fails the writer
      answer: (c): Fake.Answer =>
        c.table.endsWith(".bad")
          ? { _tag: "error", code: Code.INVALID_ARGUMENT, message: "refused" }
          : { _tag: "streamError", code: Code.UNAVAILABLE, message: "try again" }
    }, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, columns)
        fake.createTable(`${fake.projectId}.d.bad`, columns)
        const t = yield* destination(fake, "t")
        const bad = yield* destination(fake, "bad")
        const ser = yield* serializer
        for (let round = 0; round < 10; round++) {
          const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
            const writer = yield* BigQuerySink.writer({
              destinationResolver: (row: Row) => (row.id >= 1000n ? bad : t),
              serializer: ser,
              failureHandler: FailureHandler.logAndDrop,
              writeMethod: WriteMethod.atLeastOnce({
                maxAppendRequestBytes: 64,
                retry: { initialBackoff: "1 millis", maxBackoff: "1 millis", maxAttempts: 2 },
                recovery: { initialBackoff: "1 millis", maxBackoff: "1 millis", maxAttempts: 1000 }
              })
            })
            yield* writer.write(rows(20))
            yield* writer.flush.pipe(Effect.forkChild)
            // let t's appends get into their reconnect loops, then fail the writer through bad
            yield* Effect.sleep(`${1 + round} millis`)
            yield* writer.write(rows(1, 1000))
            yield* writer.flush
          })))
          assert.isTrue(Exit.isFailure(exit), "the writer failed")
          // the writer's scope is closed: every stream it opened is ended (the server sees it soon)
          for (let i = 0; i < 100 && fake.stats.openStreams > 0; i++) yield* Effect.sleep("10 millis")
          assert.strictEqual(fake.stats.openStreams, 0, `round ${round}: streams left open after close`)
        }
      }))))
})

/** Ids of a table's rows in the order the fake applied them. */
const idsOf = (fake: Fake.FakeBigQuery, table: string): Array<number> =>
  fake.rows(`${fake.projectId}.d.${table}`).map((r) => idOf(r as Uint8Array))

/** The spans a tracer saw end, by name. */
const endedSpans = (names: Array<string>): Tracer.Tracer =>
  Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      const end = span.end.bind(span)
      span.end = (endTime, exit) => {
        names.push(options.name)
        end(endTime, exit)
      }
      return span
    }
  })

/** Settings writing every row to a new table `t` of the fake, at least once with `options`. */
const oneTable = Effect.fnUntraced(function*(
  fake: Fake.FakeBigQuery,
  options: Parameters<typeof WriteMethod.atLeastOnce>[0]
) {
  fake.createTable(`${fake.projectId}.d.t`, columns)
  const table = yield* destination(fake, "t")
  return yield* Options.decode({
    destinationResolver: () => table,
    serializer: yield* serializer,
    failureHandler: FailureHandler.failJob,
    writeMethod: WriteMethod.atLeastOnce(options)
  })
})

describe("BigQuery backend: appends started on no fiber", () => {
  it.effect("appends leave in the order their rows came, across the first appends on fibers and those started at once", () =>
    Effect.scoped(withFake({}, (fake) =>
      Effect.gen(function*() {
        // one row an append: each write seals the append before it
        const { writer } = yield* writerOf(yield* oneTable(fake, { maxAppendRequestBytes: 20 }))
        // the first appends wait on fibers for the connection while the next ones come
        for (let i = 0; i < 200; i++) yield* writer.write(rows(1, 1000 + i))
        yield* writer.flush
        const expected = Array.from({ length: 200 }, (_, i) => 1000 + i)
        assert.deepStrictEqual(idsOf(fake, "t"), expected)
        assert.strictEqual((yield* writer.summary).recordsWritten, 200)
      }))))

  it.effect("each append has one span and one latency sample, started at once or on a fiber", () => {
    const names: Array<string> = []
    return Effect.scoped(withFake({}, (fake) =>
      Effect.gen(function*() {
        const { writer } = yield* writerOf(yield* oneTable(fake, { maxAppendRequestBytes: 20 }))
        // the first append opens the connection on a fiber; with no append on a fiber in flight, the
        // others start at once
        for (let i = 0; i < 50; i++) {
          yield* writer.write(rows(1, 1000 + i))
          yield* writer.flush
        }
        const appends = fake.stats.requests
        assert.strictEqual(names.filter((n) => n === "BigQuerySink.append").length, appends)
        assert.strictEqual((yield* Metric.value(BigQueryMetrics.appendLatency)).count, appends)
      }))).pipe(
        Effect.withTracer(endedSpans(names)),
        // the test's own metrics: the other tests of the file run at the same time
        Effect.provideService(Metric.MetricRegistry, new Map())
      )
  })

  it.effect("a writer closed with an append started at once and unanswered closes at once, its stream and span ended", () => {
    const names: Array<string> = []
    return Effect.scoped(
      withFake(
        { answer: (c) => (c.request === 0 ? { _tag: "default" } : { _tag: "hang" }) },
        (fake) =>
          Effect.gen(function*() {
            const settings = yield* oneTable(fake, { responseTimeout: "1 minute" })
            // closed by a failure (closing after success flushes first, which waits for the answer)
            const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
              const { writer } = yield* writerOf(settings)
              // the connection up, then an append that is never answered
              yield* writer.write(rows(1, 1000))
              yield* writer.flush
              yield* writer.write(rows(1, 1001))
              yield* writer.flush.pipe(Effect.forkChild)
              for (let k = 0; k < 2000 && fake.stats.requests < 2; k++) {
                yield* TestClock.withLive(Effect.sleep("5 millis"))
              }
              assert.strictEqual(fake.stats.requests, 2)
              return yield* Effect.fail("stop")
            })))
            assert.isTrue(Exit.isFailure(exit))
            // closed without the test clock moving: nothing waited for the answer or its timeout
            for (let k = 0; k < 2000 && fake.stats.openStreams > 0; k++) {
              yield* TestClock.withLive(Effect.sleep("5 millis"))
            }
            assert.strictEqual(fake.stats.openStreams, 0)
            assert.deepStrictEqual(idsOf(fake, "t"), [1000])
            // the unanswered append's span ended (interrupted) too, as a fiber's would
            assert.strictEqual(names.filter((n) => n === "BigQuerySink.append").length, 2)
          })
      )
    ).pipe(Effect.withTracer(endedSpans(names)))
  })
})
