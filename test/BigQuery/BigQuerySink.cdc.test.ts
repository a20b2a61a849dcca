/**
 * Change data capture through the sink against the fake BigQuery, whose CDC tables apply UPSERT /
 * DELETE by primary key in sequence-number order (ingestion order on ties): a change log with
 * out-of-order sequence numbers, deletes and re-inserts ends in the expected table; a lost
 * response (the batch applied, then re-appended) changes nothing when sequence numbers are set;
 * providers that throw or return bad values route their record; random change logs over a small
 * key space end in the model's table (fast-check).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as fc from "fast-check"
import {
  type BigQueryFailure,
  BigQuerySink,
  type Cdc,
  RowSerializer,
  TableSchema,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import type * as Fake from "../support/fakeBigQueryWrite.ts"
import { compareTuples, parseSequence } from "../support/fakeCdcTable.ts"
import { cdc, type Change, primaryKey, serializer } from "./cdcFixtures.ts"
import * as F from "./sinkFixtures.ts"

/** Streams `log` into `p.d.<table>` (created with a primary key unless it exists). */
const stream = (
  fake: Fake.FakeBigQuery,
  log: ReadonlyArray<Change>,
  options: {
    readonly table?: string
    readonly cdc?: Cdc.CdcOptions<Change>
    readonly failureHandler?: FailureHandler<BigQueryFailure.BigQueryFailure>
  } = {}
) =>
  Effect.gen(function*() {
    const tableId = options.table ?? "t"
    const key = `${fake.projectId}.d.${tableId}`
    if (fake.table(key) === undefined) fake.createTable(key, F.columns, primaryKey)
    return yield* Stream.fromIterable(log).pipe(
      Stream.rechunk(3),
      Stream.run(BigQuerySink.make<Change, FailureHandler<BigQueryFailure.BigQueryFailure> | undefined>({
        table: yield* F.destination(fake, tableId),
        serializer: yield* serializer,
        failureHandler: options.failureHandler,
        writeMethod: WriteMethod.atLeastOnce({ ...F.fastRetries, maxAppendRequestBytes: 64, cdc: options.cdc ?? cdc })
      }))
    )
  })

/** The table the fake holds, as `id: name` (`-` for no name). */
const tableOf = (fake: Fake.FakeBigQuery, table = "t"): ReadonlyArray<string> =>
  fake.cdc.rows(`${fake.projectId}.d.${table}`).map((r) => `${String(r["id"])}: ${String(r["name"] ?? "-")}`)

const up = (id: number, name: string, seq?: string): Change => ({ op: "UPSERT", id: BigInt(id), name, seq })
const del = (id: number, seq?: string): Change => ({ op: "DELETE", id: BigInt(id), seq })

/** Out-of-order sequence numbers, deletes, re-inserts, unsigned hex, several sections, ties. */
const log: ReadonlyArray<Change> = [
  up(1, "a2", "2"),
  up(1, "a1", "1"), // older, arrives later: ignored
  up(2, "b5", "5"),
  del(2, "6"),
  up(2, "b3", "3"), // older than the delete: does not resurrect
  up(3, "c7", "7"),
  del(3, "8"),
  up(3, "c9", "9"), // re-inserted after the delete
  up(4, "d-A", "a"), // 0xA > 9
  up(4, "d-9", "9"),
  up(5, "e1/0", "1/0"),
  up(5, "e0/FFFF", "0/FFFF"), // section by section: 1/0 wins
  up(6, "f-first", "B"),
  up(6, "f-second", "b"), // the same number (upper-cased): ingestion order, the later wins
  up(7, "g", "ffffffffffffffff"),
  del(7, "1") // a delete older than the row: ignored
]
const expected = ["1: a2", "3: c9", "4: d-A", "5: e1/0", "6: f-second", "7: g"]

describe("BigQuerySink CDC", () => {
  it.live("applies a change log with out-of-order sequence numbers, deletes and re-inserts", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const summary = yield* stream(fake, log)
        assert.strictEqual(summary.recordsWritten, log.length)
        assert.deepStrictEqual(tableOf(fake), expected)
        // every change is an appended row; the fake applied them by key
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, log.length)
        // the table schema never gained the pseudocolumns
        assert.deepStrictEqual(fake.table(`${fake.projectId}.d.t`)?.schema.fields.map((f) => f.name), ["id", "name"])
      }))))

  it.live("a lost response re-appends the batch: with sequence numbers the table is the same", () =>
    Effect.scoped(F.withFake({
      answer: (context) => (context.request === 2 ? { _tag: "drop" } : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* stream(fake, log)
        assert.isAbove(fake.rows(`${fake.projectId}.d.t`).length, log.length) // a batch applied twice
        assert.isAbove(summary.retries, 0)
        assert.deepStrictEqual(tableOf(fake), expected)
      }))))

  it.live("a provider that throws, returns nothing or an invalid value routes its record only", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const routed: Array<string> = []
        const failureHandler = FailureHandler.make({
          handle: (f: BigQueryFailure.BigQueryFailure) => Effect.sync(() => void routed.push(f.message))
        })
        const changes: ReadonlyArray<Change> = [
          up(1, "ok", "1"),
          up(2, "bad-seq", "xyz"),
          up(3, "no-seq"),
          { op: "INSERT" as Cdc.ChangeType, id: 4n, seq: "1" },
          up(5, "throws", "1"),
          up(6, "ok", "2")
        ]
        const summary = yield* stream(fake, changes, {
          failureHandler,
          cdc: {
            changeType: (c) => c.op,
            sequenceNumber: (c) => {
              if (c.id === 5n) throw new Error("no source block")
              return c.seq as string
            }
          }
        })
        assert.strictEqual(summary.recordsWritten, 2)
        assert.strictEqual(summary.recordsFailed, 4)
        assert.deepStrictEqual(tableOf(fake), ["1: ok", "6: ok"])
        assert.deepStrictEqual(routed, [
          "_CHANGE_SEQUENCE_NUMBER: the sequence number must be 1 to 4 '/'-separated sections of 1 to 16 hex digits, was 'xyz'",
          "_CHANGE_SEQUENCE_NUMBER: the provider returned no value (undefined)",
          "_CHANGE_TYPE: the provider must return UPSERT or DELETE, returned 'INSERT'",
          "_CHANGE_SEQUENCE_NUMBER: the provider threw: no source block"
        ])
      }))))

  it.live("a skipped row invokes neither provider", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns, primaryKey)
        let calls = 0
        const summary = yield* Stream.fromIterable([up(1, "a", "1"), up(2, "skip", "2")]).pipe(
          Stream.run(BigQuerySink.make({
            table: yield* F.destination(fake),
            serializer: RowSerializer.filter(yield* serializer, (c: Change) => c.name !== "skip"),
            writeMethod: WriteMethod.atLeastOnce({
              ...F.fastRetries,
              cdc: {
                changeType: (c: Change) => {
                  calls++
                  return c.op
                },
                sequenceNumber: (c: Change) => {
                  calls++
                  return c.seq ?? ""
                }
              }
            })
          }))
        )
        assert.strictEqual(summary.recordsSkipped, 1)
        assert.strictEqual(calls, 2)
        assert.deepStrictEqual(tableOf(fake), ["1: a"])
      }))))

  it.live("a resolved destination whose serializer has a pseudocolumn's name fails the write (SchemaMismatch)", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns, primaryKey)
        const clash: TableSchema.TableSchema = {
          fields: [...F.schema.fields, TableSchema.field({ name: "_change_sequence_number", type: "STRING" })]
        }
        const table = yield* F.destination(fake)
        const error = yield* Effect.flip(
          Stream.fromIterable([up(1, "a", "1")]).pipe(Stream.run(BigQuerySink.make({
            destinationResolver: () => table,
            serializer: RowSerializer.contramap(
              yield* Effect.orDie(RowSerializer.fromJson(clash)),
              ({ id, name }: Change) => ({ id, name })
            ),
            writeMethod: WriteMethod.atLeastOnce({ ...F.fastRetries, cdc })
          })))
        )
        assert.strictEqual(error._tag, "BigQueryError")
        assert.match(error.message, /SchemaMismatch/)
        assert.match(
          String(Reflect.get(Reflect.get(error, "reason") ?? {}, "detail")),
          /collides with a CDC pseudocolumn/
        )
      }))))
})

describe("BigQuerySink CDC: primary key against the serializer's schema", () => {
  it.live("a primary-key column the serializer's schema lacks fails when the destination opens, naming it", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        // the table does not exist: without the check, tables.insert would be the first to object
        const error = yield* Effect.flip(
          Stream.fromIterable([up(1, "a", "1")]).pipe(Stream.run(BigQuerySink.make({
            table: yield* F.destination(fake, "absent"),
            serializer: yield* serializer,
            writeMethod: WriteMethod.atLeastOnce({
              ...F.fastRetries,
              cdc: { ...cdc, tableOptions: { primaryKey: ["id", "ident"] } }
            })
          })))
        )
        assert.strictEqual(error._tag, "BigQueryError")
        assert.match(error.message, /SchemaMismatch/)
        assert.match(
          String(Reflect.get(Reflect.get(error, "reason") ?? {}, "detail")),
          /writeMethod\.cdc\.tableOptions\.primaryKey\[1\]: 'ident' is not a column of the serializer's schema/
        )
        // caught before any table was asked for, not by tables.insert
        assert.isFalse(fake.stats.restCalls.some((call) => call.includes("POST")))
        assert.strictEqual(fake.stats.requests, 0)
      }))))
})

/** The model: per key, the change with the greatest (sequence number, arrival); a DELETE removes it. */
const model = (changes: ReadonlyArray<Change>): ReadonlyArray<string> => {
  const winners = new Map<bigint, { readonly change: Change; readonly index: number }>()
  changes.forEach((change, index) => {
    const old = winners.get(change.id)
    const newer = old === undefined ||
      compareTuples(parseSequence(change.seq ?? "0"), parseSequence(old.change.seq ?? "0")) >= 0
    if (newer) winners.set(change.id, { change, index })
  })
  return [...winners.values()]
    .filter((w) => w.change.op === "UPSERT")
    .toSorted((a, b) => (String(a.change.id) < String(b.change.id) ? -1 : 1))
    .map((w) => `${w.change.id}: ${w.change.name ?? "-"}`)
}

const changeArb: fc.Arbitrary<Change> = fc.record({
  op: fc.constantFrom<Cdc.ChangeType>("UPSERT", "UPSERT", "DELETE"),
  id: fc.bigInt({ min: 0n, max: 4n }),
  name: fc.string({ maxLength: 3 }),
  seq: fc.array(fc.integer({ min: 0, max: 20 }).map((n) => n.toString(16)), { minLength: 2, maxLength: 2 })
    .map((s) => s.join("/"))
})

describe("BigQuerySink CDC (property)", () => {
  it.live("random change logs over a small key space end in the model's table", () =>
    Effect.scoped(F.withFake({}, (fake) =>
      Effect.gen(function*() {
        const logs = fc.sample(fc.array(changeArb, { maxLength: 30 }), 25)
        yield* Effect.forEach(logs, (changes, i) =>
          Effect.gen(function*() {
            yield* stream(fake, changes, { table: `t${i}` })
            assert.deepStrictEqual(
              tableOf(fake, `t${i}`),
              model(changes),
              JSON.stringify(changes, (_, v) => typeof v === "bigint" ? String(v) : v)
            )
          }))
      }))))
})
