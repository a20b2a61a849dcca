/**
 * The at-least-once sink through its public constructors against the in-process fake BigQuery: every
 * row of the classification table (reference 2.4), flow control, flush, routing and table management.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Ref, Scope, Stream } from "effect"
import {
  AdditionalFields,
  type BigQueryFailure,
  BigQuerySink,
  type TableCreateOptions,
  TableDestination,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import { Code } from "../../src/internal/wire/grpcStatus.ts"
import { FailureHandler } from "../../src/Sink.ts"
import type * as Fake from "../support/fakeBigQueryWrite.ts"
import * as F from "./sinkFixtures.ts"

const collecting = Effect.map(
  Ref.make<Array<BigQueryFailure.BigQueryFailure>>([]),
  (ref) => ({
    ref,
    handler: FailureHandler.make({ handle: (f: BigQueryFailure.BigQueryFailure) => Ref.update(ref, (l) => [...l, f]) })
  })
)

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert.isTrue(Exit.isFailure(exit))
  if (Exit.isFailure(exit)) {
    const reason = exit.cause.reasons[0]
    if (reason !== undefined && reason._tag === "Fail") return reason.error
  }
  throw new Error(`expected a failure, got ${String(exit)}`)
}

const reasonTag = (error: unknown): string =>
  typeof error === "object" && error !== null && "reason" in error &&
    typeof error.reason === "object" && error.reason !== null && "_tag" in error.reason
    ? String(error.reason._tag)
    : String(error)

describe("BigQuerySink against the fake", () => {
  it.live("writes every row, cutting batches by bytes, writer_schema once per connection", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 5000, { chunkSize: 300, maxAppendRequestBytes: 4096 })
        assert.strictEqual(summary.recordsWritten, 5000)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 5000)
        assert.isAbove(fake.stats.requests, 10)
        assert.strictEqual(fake.stats.connections, 1)
        assert.strictEqual(fake.stats.schemasSent, 1)
        assert.strictEqual(summary.destinations[`${fake.projectId}.d.t`]?.recordsWritten, 5000)
      })))

  it.live("in-band transient errors are retried on the same connection, invisible to flush", () =>
    F.withFake({
      answer: (c) =>
        c.request % 3 === 0 ? { _tag: "error", code: Code.UNAVAILABLE, message: "try later" } : { _tag: "default" }
    }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 200, { maxAppendRequestBytes: 512 })
        assert.strictEqual(summary.recordsWritten, 200)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 200)
        assert.isAbove(summary.retries, 0)
      })))

  it.live("a transient stream error and a stale stream are repaired on a new connection", () =>
    F.withFake({
      // by connection, not by the server's request count: how many requests reach a stream before its
      // failure does depends on the transport's timing
      answer: (c) =>
        c.connection === 0 && c.requestOnConnection === 1
          ? { _tag: "streamError", code: Code.UNAVAILABLE, message: "reset" }
          : c.connection === 1 && c.requestOnConnection === 2
          ? { _tag: "error", code: Code.FAILED_PRECONDITION, message: "finalized", storageCode: 6 }
          : { _tag: "default" }
    }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 300, { maxAppendRequestBytes: 512 })
        assert.strictEqual(summary.recordsWritten, 300)
        assert.isAtLeast(new Set(fake.rows(`${fake.projectId}.d.t`).map((r) => r.join())).size, 300)
        assert.isAtLeast(fake.stats.connections, 3)
      })))

  it.live("row errors route only the failing rows, with the service's message; survivors are re-appended", () =>
    F.withFake({
      answer: (c) =>
        c.request === 0 ?
          { _tag: "rowErrors", errors: [{ index: 1, message: "bad id" }, { index: 3, message: "bad name" }] }
          : { _tag: "default" }
    }, (fake) =>
      Effect.gen(function*() {
        const { handler, ref } = yield* collecting
        const summary = yield* F.writeRows(fake, 5, { failureHandler: handler })
        const failed = yield* Ref.get(ref)
        assert.deepStrictEqual(failed.map((f) => f.message), ["bad id", "bad name"])
        assert.isTrue(failed.every((f) => f._tag === "FailedRow" && f.payload !== undefined))
        assert.strictEqual(summary.recordsWritten, 3)
        assert.strictEqual(summary.recordsFailed, 2)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 3)
      })))

  it.live("row errors under a transient code retry the whole batch", () =>
    F.withFake({
      answer: (c) =>
        c.request === 0 ?
          { _tag: "rowErrors", code: Code.UNAVAILABLE, errors: [{ index: 0, message: "x" }] }
          : { _tag: "default" }
    }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 4)
        assert.strictEqual(summary.recordsWritten, 4)
        assert.strictEqual(summary.recordsFailed, 0)
      })))

  it.live("row errors naming no row of the batch are terminal", () =>
    F.withFake(
      { answer: () => ({ _tag: "rowErrors", errors: [{ index: 99, message: "??" }] }) },
      (fake) =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(F.writeRows(fake, 3, { failureHandler: FailureHandler.logAndDrop }))
          assert.strictEqual(reasonTag(failureOf(exit)), "BigQueryRequestRejected")
        })
    ))

  it.live("request-level INVALID_ARGUMENT is terminal", () =>
    F.withFake(
      { answer: () => ({ _tag: "error", code: Code.INVALID_ARGUMENT, message: "request too large" }) },
      (fake) =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(F.writeRows(fake, 3))
          const error = failureOf(exit)
          assert.strictEqual(reasonTag(error), "BigQueryRequestRejected")
          assert.include(String((error as { message: string }).message), "request too large")
        })
    ))

  it.live("an exhausted recovery budget fails with RetriesExhausted carrying the last status", () =>
    F.withFake(
      { answer: () => ({ _tag: "streamError", code: Code.UNAVAILABLE, message: "down" }) },
      (fake) =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(
            F.writeRows(fake, 3, {
              writeMethod: { recovery: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 3 } }
            })
          )
          const error = failureOf(exit) as { reason: { _tag: string; code: string; attempts: number } }
          assert.strictEqual(error.reason._tag, "BigQueryRetriesExhausted")
          assert.strictEqual(error.reason.code, "UNAVAILABLE")
          assert.strictEqual(error.reason.attempts, 4)
        })
    ))

  for (
    const [label, code] of [["NOT_FOUND", Code.NOT_FOUND], [
      "masked PERMISSION_DENIED",
      Code.PERMISSION_DENIED
    ]] as const
  ) {
    it.live(`a missing table (${label}) is created under CREATE_IF_NEEDED with partitioning and clustering`, () =>
      F.withFake({ missingTableCode: code }, (fake) =>
        Effect.gen(function*() {
          const summary = yield* F.writeRows(fake, 10, {
            createTable: false,
            sink: { tableCreateOptions: { timePartitioning: { type: "DAY" }, clustering: ["id"] } }
          })
          assert.strictEqual(summary.recordsWritten, 10)
          const created = fake.table(`${fake.projectId}.d.t`)
          assert.deepStrictEqual(created?.schema.fields.map((f) => f.name), ["id", "name"])
          assert.deepStrictEqual(created?.clustering, { fields: ["id"] })
          assert.deepStrictEqual(created?.timePartitioning, { type: "DAY" })
        })))
  }

  it.live("a table deleted mid-stream is recreated from the append path", () => {
    let fake: Fake.FakeBigQuery | undefined
    return F.withFake({
      answer: (c) => {
        if (c.request === 1) fake?.dropTable(c.table)
        return { _tag: "default" }
      }
    }, (f) =>
      Effect.gen(function*() {
        fake = f
        const summary = yield* F.writeRows(fake, 100, { maxAppendRequestBytes: 256 })
        assert.strictEqual(summary.recordsWritten, 100)
        assert.include(fake.stats.restCalls.join(), "POST")
      }))
  })

  it.live("CREATE_NEVER fails fast on a missing table, naming table and disposition", () =>
    F.withFake({ missingTableCode: Code.PERMISSION_DENIED }, (fake) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          F.writeRows(fake, 3, { createTable: false, sink: { createDisposition: "CREATE_NEVER" } })
        )
        const error = failureOf(exit) as { reason: { _tag: string }; message: string }
        assert.strictEqual(error.reason._tag, "BigQueryTableNotFound")
        assert.include(error.message, "CREATE_NEVER")
        assert.include(error.message, `${fake.projectId}.d.t`)
        assert.deepStrictEqual(F.tableCalls(fake), [])
      })))

  it.live("extra fields with schema updates off are terminal with a hint", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(F.writeRows(fake, 3, { createTable: [F.columns[0]!] }))
        const error = failureOf(exit) as { reason: { _tag: string }; message: string }
        assert.strictEqual(error.reason._tag, "BigQuerySchemaMismatch")
        assert.include(error.message, "allowNewFields")
      })))

  it.live("extra fields with allowNewFields widen the table (etag-conditioned) and re-append", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 20, {
          createTable: [F.columns[0]!],
          sink: { schemaUpdate: { allowNewFields: true, allowFieldRelaxation: false } }
        })
        assert.strictEqual(summary.recordsWritten, 20)
        const fields = fake.table(`${fake.projectId}.d.t`)?.schema.fields ?? []
        assert.deepStrictEqual(fields.map((f) => [f.name, f.mode]), [["id", "REQUIRED"], ["name", "NULLABLE"]])
        assert.include(fake.stats.restCalls.join(), "PATCH")
      })))

  it.live("a lost response (connection dropped after the rows were applied) is re-appended: nothing lost", () =>
    F.withFake(
      { answer: (c) => c.request === 2 ? { _tag: "drop" } : { _tag: "default" } },
      (fake) =>
        Effect.gen(function*() {
          const summary = yield* F.writeRows(fake, 100, { maxAppendRequestBytes: 256 })
          assert.strictEqual(summary.recordsWritten, 100)
          const distinct = new Set(fake.rows(`${fake.projectId}.d.t`).map((r) => r.join()))
          assert.strictEqual(distinct.size, 100)
          assert.isAbove(fake.rows(`${fake.projectId}.d.t`).length, 100)
        })
    ))

  it.live("an append without a response is abandoned after responseTimeout and re-appended", () =>
    F.withFake(
      { answer: (c) => c.request === 0 ? { _tag: "hang" } : { _tag: "default" } },
      (fake) =>
        Effect.gen(function*() {
          const summary = yield* F.writeRows(fake, 10, { writeMethod: { responseTimeout: "200 millis" } })
          assert.strictEqual(summary.recordsWritten, 10)
          assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 10)
        })
    ))

  it.live("a pushed updated_schema is taken in without failing", () =>
    F.withFake({
      answer: (c) =>
        c.request === 0
          ? { _tag: "ok", updatedSchema: [...F.columns, { name: "extra", type: "STRING" }] }
          : { _tag: "default" }
    }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 50, { chunkSize: 10, maxAppendRequestBytes: 128 })
        assert.strictEqual(summary.recordsWritten, 50)
      })))

  it.live("flush returns only when every in-flight append is acknowledged (pipelined, capped)", () =>
    F.withFake(
      { answer: () => ({ _tag: "delay", millis: 20, next: { _tag: "default" } }) },
      (fake) =>
        Effect.gen(function*() {
          fake.createTable(`${fake.projectId}.d.t`, F.columns)
          const writer = yield* BigQuerySink.writer({
            table: yield* F.destination(fake),
            serializer: yield* F.serializer,
            writeMethod: WriteMethod.atLeastOnce({ maxAppendRequestBytes: 128, maxInFlightRequests: 3 })
          })
          yield* writer.write(F.rows(100))
          yield* writer.flush
          assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 100)
          assert.strictEqual((yield* writer.summary).recordsWritten, 100)
        })
    ))

  it.live("unroutable records, serializer failures, skipped and oversize rows never reach the service", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const { handler, ref } = yield* collecting
        const table = yield* F.destination(fake)
        const base = yield* F.serializer
        const summary = yield* Stream.make<Array<F.Row | "skip" | "bad" | "huge" | "nowhere">>(
          { id: 1n },
          "skip",
          "bad",
          "huge",
          "nowhere",
          { id: 2n }
        ).pipe(
          Stream.run(BigQuerySink.make({
            destinationResolver: (r) =>
              r === "nowhere"
                ? TableDestination.unroutable({ payload: new Uint8Array([1]), reason: "no tenant" })
                : table,
            serializer: {
              tableSchema: base.tableSchema,
              serialize: (r, d) =>
                r === "skip" ?
                  null
                  : r === "bad" ?
                  base.serialize({ id: "x" } as unknown as F.Row, d)
                  : r === "huge" ?
                  new Uint8Array(9 * 1024 * 1024 + 1)
                  : r === "nowhere" ?
                  null
                  : base.serialize(r, d)
            },
            failureHandler: handler
          }))
        )
        const failed = yield* Ref.get(ref)
        assert.deepStrictEqual(failed.map((f) => f._tag), ["FailedRow", "FailedRow", "UnroutableRecord"])
        assert.include(failed[0]!.message, "id")
        assert.isUndefined(failed[0]!.payload)
        assert.strictEqual(failed[1]!.payload?.length, 9 * 1024 * 1024 + 1)
        assert.strictEqual(failed[2]!.destination, "unresolved")
        assert.strictEqual(summary.recordsWritten, 2)
        assert.strictEqual(summary.recordsSkipped, 1)
        assert.strictEqual(summary.recordsFailed, 3)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 2)
      })))

  it.live("the default handler fails the write with RecordFailed", () =>
    F.withFake(
      { answer: () => ({ _tag: "rowErrors", errors: [{ index: 0, message: "bad" }] }) },
      (fake) =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(F.writeRows(fake, 1))
          assert.strictEqual((failureOf(exit) as { _tag: string })._tag, "RecordFailed")
        })
    ))

  it.live("dynamic destinations write to each table over its own connection", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const tables = yield* Effect.forEach(["a", "b", "c", "e"], (t) => F.destination(fake, t))
        const summary = yield* Stream.fromIterable(F.rows(400)).pipe(
          Stream.run(BigQuerySink.make({
            destinationResolver: (r) => tables[Number(r.id % 4n)]!,
            serializer: yield* F.serializer,
            writeMethod: WriteMethod.atLeastOnce(F.fastRetries)
          }))
        )
        assert.strictEqual(summary.recordsWritten, 400)
        for (const t of ["a", "b", "c", "e"]) assert.strictEqual(fake.rows(`${fake.projectId}.d.${t}`).length, 100)
        assert.strictEqual(Object.keys(summary.destinations).length, 4)
      })))

  it.effect("invalid options fail with SinkConfigError naming the option, before any I/O", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          F.writeRows(fake, 1, { createTable: false, writeMethod: { maxInFlightRequests: 0 } })
        )
        const error = failureOf(exit) as { _tag: string; path: string }
        assert.strictEqual(error._tag, "SinkConfigError")
        assert.strictEqual(error.path, "writeMethod.maxInFlightRequests")
        assert.strictEqual(fake.stats.requests, 0)
      })))

  it.live("summary answers at once while a write waits on backpressure, with the counts so far", () => {
    let holding = false
    return F.withFake(
      { answer: () => holding ? { _tag: "hang" } : { _tag: "default" } },
      (fake) =>
        Effect.gen(function*() {
          fake.createTable(`${fake.projectId}.d.t`, F.columns)
          const scope = yield* Scope.make()
          const w = yield* BigQuerySink.writer({
            table: yield* F.destination(fake),
            serializer: yield* F.serializer,
            writeMethod: WriteMethod.atLeastOnce({ maxAppendRequestBytes: 256, maxInFlightRequests: 2 })
          }).pipe(Scope.provide(scope))
          yield* w.write(F.rows(5))
          yield* w.flush
          // the fake now holds every append: two fill the in-flight cap, the write waits for a third
          holding = true
          const blocked = yield* Effect.forkChild(w.write(F.rows(200, 5)))
          yield* Effect.sleep("200 millis")
          assert.isUndefined(blocked.pollUnsafe(), "the write waits on backpressure")
          const summary = yield* w.summary.pipe(Effect.timeout("1 second"))
          assert.strictEqual(summary.recordsWritten, 5)
          assert.isUndefined(blocked.pollUnsafe(), "still waiting")
          yield* Fiber.interrupt(blocked)
          // held appends never finish: release the writer without its end-of-input flush
          yield* Scope.close(scope, Exit.fail("stop"))
        })
    )
  })

  it.live("additional fields extend each resolver destination's schema; a collision is terminal, naming the field", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const serializer = yield* F.serializer
        const ok = yield* F.destination(fake, "ok")
        const clash = yield* F.destination(fake, "clash")
        const stamped = yield* AdditionalFields.make<F.Row>([
          { name: "source", type: "STRING", nullPolicy: "REQUIRED", provider: () => "test" }
        ])
        const summary = yield* Stream.fromIterable(F.rows(4)).pipe(
          Stream.run(BigQuerySink.make({ destinationResolver: () => ok, serializer, additionalFields: stamped }))
        )
        assert.strictEqual(summary.recordsWritten, 4)
        assert.deepStrictEqual(fake.table(ok.toString())?.schema.fields.map((f) => f.name), ["id", "name", "source"])
        const colliding = yield* AdditionalFields.make<F.Row>([
          { name: "source", type: "STRING", nullPolicy: "NULLABLE", provider: () => "test" },
          { name: "NAME", type: "STRING", nullPolicy: "NULLABLE", provider: () => "x" }
        ])
        const requests = fake.stats.requests
        const exit = yield* Stream.fromIterable(F.rows(3)).pipe(
          Stream.run(BigQuerySink.make({ destinationResolver: () => clash, serializer, additionalFields: colliding })),
          Effect.exit
        )
        const error = failureOf(exit) as { reason: { _tag: string }; message: string }
        assert.strictEqual(error.reason._tag, "BigQuerySchemaMismatch")
        assert.include(error.message, clash.toString())
        assert.include(error.message, "additionalFields[1].name")
        assert.include(error.message, "collides with the serializer's column 'name'")
        assert.isUndefined(fake.table(clash.toString()), "no table created with a duplicate column")
        assert.strictEqual(fake.stats.requests, requests, "nothing appended")
      })))

  it.live("a per-destination tableCreateOptions result is validated against the schema before creating", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const serializer = yield* F.serializer
        const table = yield* F.destination(fake)
        const run = (options: TableCreateOptions.TableCreateOptions) =>
          Stream.fromIterable(F.rows(3)).pipe(
            Stream.run(BigQuerySink.make({ table, serializer, tableCreateOptions: () => options })),
            Effect.exit
          )
        const unknownColumn = failureOf(yield* run({ clustering: ["nope"] })) as { message: string }
        assert.include(unknownColumn.message, table.toString())
        assert.include(unknownColumn.message, "tableCreateOptions.clustering[0]: is not a column of the table")
        const tooMany = failureOf(yield* run({ clustering: ["id", "id2", "id3", "id4", "id5"] })) as {
          message: string
        }
        assert.include(tooMany.message, "tableCreateOptions.clustering: must have 1 to 4 columns, had 5")
        const notTime = failureOf(yield* run({ timePartitioning: { type: "DAY", field: "name" } })) as {
          reason: { _tag: string }
          message: string
        }
        assert.strictEqual(notTime.reason._tag, "BigQueryTableAdminFailed")
        assert.include(notTime.message, "tableCreateOptions.timePartitioning.field")
        assert.isFalse(fake.stats.restCalls.some((c) => c.startsWith("POST")), "no invalid table was requested")
        assert.isUndefined(fake.table(table.toString()))
        // a valid result still creates the table with its options
        const summary = yield* Stream.fromIterable(F.rows(3)).pipe(
          Stream.run(BigQuerySink.make({ table, serializer, tableCreateOptions: () => ({ clustering: ["id"] }) }))
        )
        assert.strictEqual(summary.recordsWritten, 3)
        assert.deepStrictEqual(fake.table(table.toString())?.clustering, { fields: ["id"] })
      })))

  it.live("N in-flight batches to a table gone missing: one tables.insert, every row lands once", () => {
    let fake: Fake.FakeBigQuery | undefined
    let dropped = false
    // after the table is back, the service still answers NOT_FOUND for a while (it catches up)
    let staleAnswers = 12
    return F.withFake({
      answer: (c): Fake.Answer => {
        if (!dropped) {
          dropped = true
          fake?.dropTable(c.table)
        } else if (fake?.table(c.table) !== undefined && staleAnswers > 0) {
          staleAnswers--
          return { _tag: "error", code: Code.NOT_FOUND, message: `Table ${c.table} not found` }
        }
        return { _tag: "default" }
      }
    }, (f) =>
      Effect.gen(function*() {
        fake = f
        const name = `${f.projectId}.d.t`
        const summary = yield* F.writeRows(f, 300, {
          maxAppendRequestBytes: 256,
          writeMethod: { maxInFlightRequests: 8 }
        })
        assert.strictEqual(f.stats.restCalls.filter((c) => c.startsWith("POST")).length, 1, "one tables.insert")
        assert.strictEqual(summary.recordsWritten, 300)
        const rows = f.rows(name)
        assert.strictEqual(rows.length, 300, "every row lands once")
        assert.strictEqual(new Set(rows.map((r) => r.join())).size, 300)
        assert.isAbove(summary.retries, 0)
      }))
  })
})
