/**
 * Destinations open on fibers of their own: a table whose control plane answers slowly (its
 * `GetWriteStream`, a `tables.insert`) holds up its own rows, not the other tables' rows.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Option, Stream } from "effect"
import { BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import { eventually } from "../support/waiting.ts"
import { columns, destination, type Row, rows, serializer, withFake } from "./sinkFixtures.ts"

/** How long the slow table's `GetWriteStream` takes to answer. */
const slowOpenMillis = 2500

describe("BigQuerySink opening destinations", () => {
  it.live("a slow table's open does not hold up the rows of the others; its own rows follow once it opens", () =>
    Effect.scoped(
      withFake(
        { getWriteStreamDelay: (table) => (table.endsWith(".slow") ? slowOpenMillis : 0) },
        (fake) =>
          Effect.gen(function*() {
            fake.createTable(`${fake.projectId}.d.slow`, columns)
            fake.createTable(`${fake.projectId}.d.fast`, columns)
            const slow = yield* destination(fake, "slow")
            const fast = yield* destination(fake, "fast")
            const writer = yield* BigQuerySink.writer({
              destinationResolver: (row: Row) => (row.id < 100n ? slow : fast),
              serializer: yield* serializer
            })
            const started = Date.now()
            yield* writer.write(rows(100)) // the slow table first: its open starts and waits
            yield* writer.write(rows(100, 100))
            const flushed = yield* Effect.forkChild(writer.flush)
            // the fast table's rows are committed while the slow table is still opening (the order is the
            // assertion: the time it takes on a loaded machine is not)
            while (
              fake.rows(`${fake.projectId}.d.fast`).length < 100 && fake.rows(`${fake.projectId}.d.slow`).length === 0
            ) {
              yield* Effect.sleep("10 millis")
            }
            const fastAfter = Date.now() - started
            assert.strictEqual(fake.rows(`${fake.projectId}.d.fast`).length, 100, `after ${fastAfter} ms`)
            assert.strictEqual(fake.rows(`${fake.projectId}.d.slow`).length, 0, "the slow table is still opening")
            // the barrier waits for the slow table's rows, which go once it has opened
            yield* Fiber.join(flushed)
            assert.strictEqual(fake.rows(`${fake.projectId}.d.slow`).length, 100)
            assert.isAtLeast(Date.now() - started, slowOpenMillis - 100)
            const summary = yield* writer.summary
            assert.strictEqual(summary.recordsWritten, 200)
          })
      )
    ))
})

describe("BigQuerySink admission while a table opens", () => {
  it.live("a table's first open does not let the caller encode the admission budget ahead of it", () =>
    Effect.scoped(
      withFake(
        { getWriteStreamDelay: () => 1500 },
        (fake) =>
          Effect.gen(function*() {
            fake.createTable(`${fake.projectId}.d.t`, columns)
            let pulled = 0
            // batches of ~10 rows, a budget of ~1,000 rows (100 appends of 1 KiB): without a bound on
            // the slices parked behind the open, the caller would encode all of that before it opens
            const written = yield* Stream.fromIterable(rows(3000)).pipe(
              Stream.tap(() => Effect.sync(() => void pulled++)),
              Stream.rechunk(10),
              Stream.run(BigQuerySink.make({
                table: yield* destination(fake),
                serializer: yield* serializer,
                writeMethod: WriteMethod.atLeastOnce({ maxAppendRequestBytes: 1024, maxInFlightRequests: 100 })
              })),
              Effect.forkChild
            )
            yield* Effect.sleep("1 second")
            assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 0, "the table is still opening")
            assert.isBelow(pulled, 250, `${pulled} rows were pulled while the table opened`)
            const summary = yield* Fiber.join(written)
            assert.strictEqual(summary.recordsWritten, 3000)
            assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 3000)
          })
      )
    ))

  it.effect("part-full batches of tables still opening that fill the budget do not hang the next write", () =>
    withFake(
      { getWriteStreamDelay: () => 300 },
      (fake) =>
        Effect.gen(function*() {
          const tables = ["a", "b", "c"]
          for (const t of tables) fake.createTable(`${fake.projectId}.d.${t}`, columns)
          const a = yield* destination(fake, "a")
          const b = yield* destination(fake, "b")
          const c = yield* destination(fake, "c")
          const writer = yield* BigQuerySink.writer({
            destinationResolver: (row: Row) => (row.id < 20n || row.id >= 60n ? a : row.id < 40n ? b : c),
            serializer: yield* serializer,
            writeMethod: WriteMethod.atLeastOnce({ maxAppendRequestBytes: 1024, maxInFlightBytes: 1024 })
          })
          // three new tables, each a part-full batch (~270 bytes) parked behind its GetWriteStream
          yield* writer.write(rows(20))
          yield* writer.write(rows(20, 20))
          yield* writer.write(rows(20, 40))
          // this one needs the permits those batches hold: they must go once their tables open
          let returned = false
          yield* writer.write(rows(40, 60)).pipe(
            Effect.tap(() => Effect.sync(() => void (returned = true))),
            Effect.forkChild
          )
          yield* eventually("the write waiting on the opening tables returns", () => returned)
          yield* writer.flush
          assert.strictEqual((yield* writer.summary).recordsWritten, 100)
          assert.strictEqual(fake.rows(`${fake.projectId}.d.a`).length, 60)
        })
    ))
})

describe("BigQuerySink: a defect while a table opens", () => {
  it.live("a tableCreateOptions function that throws fails the write with an error naming the table, no hang", () =>
    Effect.scoped(
      withFake({}, (fake) =>
        Effect.gen(function*() {
          const table = yield* destination(fake, "missing")
          const exit = yield* Stream.fromIterable(rows(3)).pipe(
            Stream.run(BigQuerySink.make({
              table,
              serializer: yield* serializer,
              tableCreateOptions: () => {
                throw new Error("no options for you")
              }
            })),
            Effect.timeoutOption("5 seconds"),
            Effect.exit
          )
          assert.isTrue(Exit.isFailure(exit), Exit.isSuccess(exit) && Option.isNone(exit.value) ? "hung" : "succeeded")
          if (Exit.isSuccess(exit)) return
          const error = Cause.findErrorOption(exit.cause)
          assert.isTrue(Option.isSome(error), `a typed error, not ${Cause.pretty(exit.cause)}`)
          if (Option.isNone(error)) return
          assert.strictEqual(error.value._tag, "BigQueryError")
          if (error.value._tag !== "BigQueryError") return
          assert.strictEqual(error.value.reason._tag, "BigQueryTableAdminFailed")
          assert.include(error.value.message, table.toString())
          assert.include(error.value.message, "no options for you")
          assert.isUndefined(fake.table(table.toString()), "no table was created")
        }))
    ))
})
