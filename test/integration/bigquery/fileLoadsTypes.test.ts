/**
 * Every BigQuery column type through file loads on the emulators, value for value: each at its
 * extremes and null, in both modes (`BigQuerySink.make`'s single load at the end of input, and
 * `BigQuerySink.fileLoads` loading at each checkpoint), read back through the REST client. The staged
 * files carry BigQuery's Avro logical types; what bqemulator cannot load is pinned as a deviation.
 */
import { assert, layer } from "@effect/vitest"
import type { BigQuery } from "@google-cloud/bigquery"
import { Effect, Exit, Schema, Stream } from "effect"
import { BigQuerySink, RowSerializer, TableDestination, TableSchema, WriteMethod } from "../../../src/BigQuery/index.ts"
import { Checkpoint, CheckpointStore, type RetryPolicyInput } from "../../../src/Sink.ts"
import * as Harness from "./fileLoadsHarness.ts"

/** Every column type but BIGNUMERIC (pinned below), with REPEATED and RECORD. */
const schema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "b", type: "BOOL" }),
    TableSchema.field({ name: "i", type: "INT64" }),
    TableSchema.field({ name: "f", type: "FLOAT64" }),
    TableSchema.field({ name: "n", type: "NUMERIC" }),
    TableSchema.field({ name: "s", type: "STRING" }),
    TableSchema.field({ name: "by", type: "BYTES" }),
    TableSchema.field({ name: "d", type: "DATE" }),
    TableSchema.field({ name: "t", type: "TIME" }),
    TableSchema.field({ name: "dt", type: "DATETIME" }),
    TableSchema.field({ name: "ts", type: "TIMESTAMP" }),
    TableSchema.field({ name: "g", type: "GEOGRAPHY" }),
    TableSchema.field({ name: "j", type: "JSON" }),
    TableSchema.field({ name: "ids", type: "INT64", mode: "REPEATED" }),
    TableSchema.record({
      name: "rec",
      fields: [
        TableSchema.field({ name: "ts", type: "TIMESTAMP" }),
        TableSchema.field({ name: "n", type: "NUMERIC" }),
        TableSchema.field({ name: "tags", type: "STRING", mode: "REPEATED" })
      ]
    })
  ]
}

const maxNumeric = "99999999999999999999999999999.999999999"
const bytes = Array.from({ length: 256 }, (_, k) => k)

/** Input rows (the JSON serializer's forms) and what a query reads back, column by column. */
const cases: ReadonlyArray<{ readonly input: Record<string, unknown>; readonly back: Record<string, unknown> }> = [
  {
    input: {
      id: 1,
      b: true,
      i: "9223372036854775807",
      f: 1.7976931348623157e308,
      n: maxNumeric,
      s: "héllo 🌍",
      by: Uint8Array.from(bytes),
      d: "9999-12-31",
      t: "23:59:59.999999",
      dt: "9999-12-31 23:59:59.999999",
      ts: "9999-12-31T23:59:59.999999Z",
      g: "POINT(1 2)",
      j: "{\"a\":[1,2,{\"b\":null}]}",
      ids: ["9223372036854775807", "-9223372036854775808", "1152921504606846977"],
      rec: { ts: "9999-12-31T23:59:59.999999Z", n: maxNumeric, tags: ["x", "y"] }
    },
    back: {
      id: "1",
      b: true,
      i: "9223372036854775807",
      f: 1.7976931348623157e308,
      n: maxNumeric,
      s: "héllo 🌍",
      by: bytes,
      d: "9999-12-31",
      t: "23:59:59.999999",
      dt: "9999-12-31T23:59:59.999999",
      ts: "9999-12-31T23:59:59.999999000Z",
      // the emulator spells WKT "POINT (1 2)" (pinned in schema.test.ts)
      g: "POINT (1 2)",
      j: "{\"a\":[1,2,{\"b\":null}]}",
      ids: ["9223372036854775807", "-9223372036854775808", "1152921504606846977"],
      rec: { ts: "9999-12-31T23:59:59.999999000Z", n: maxNumeric, tags: ["x", "y"] }
    }
  },
  {
    input: {
      id: 2,
      b: false,
      i: "-9223372036854775808",
      f: -1.7976931348623157e308,
      n: `-${maxNumeric}`,
      s: "",
      by: new Uint8Array(),
      d: "0001-01-01",
      t: "00:00:00",
      dt: "0001-01-01 00:00:00",
      ts: "0001-01-01T00:00:00Z",
      g: "POINT(-180 -90)",
      j: "null",
      ids: [],
      rec: { ts: "0001-01-01T00:00:00Z", n: "-0.000000001", tags: [] }
    },
    back: {
      id: "2",
      b: false,
      i: "-9223372036854775808",
      f: -1.7976931348623157e308,
      n: `-${maxNumeric}`,
      s: "",
      by: [],
      d: "0001-01-01",
      t: "00:00:00",
      dt: "0001-01-01T00:00:00",
      ts: "0001-01-01T00:00:00.000Z",
      g: "POINT (-180 -90)",
      j: "null",
      ids: [],
      rec: { ts: "0001-01-01T00:00:00.000Z", n: "-0.000000001", tags: [] }
    }
  },
  {
    input: { id: 3 },
    back: {
      id: "3",
      b: null,
      i: null,
      f: null,
      n: null,
      s: null,
      by: null,
      d: null,
      t: null,
      dt: null,
      ts: null,
      g: null,
      j: null,
      ids: [],
      rec: null
    }
  },
  {
    input: {
      id: 4,
      i: "1152921504606846977",
      f: 5e-324,
      n: "0.000000001",
      t: "12:34:56.000001",
      dt: "2026-01-02 03:04:05.123456",
      ts: "2026-01-02T03:04:05.123456Z",
      rec: { tags: ["only"] }
    },
    back: {
      id: "4",
      b: null,
      i: "1152921504606846977",
      f: 5e-324,
      n: "0.000000001",
      s: null,
      by: null,
      d: null,
      t: "12:34:56.000001",
      dt: "2026-01-02T03:04:05.123456",
      ts: "2026-01-02T03:04:05.123456000Z",
      g: null,
      j: null,
      ids: [],
      rec: { ts: null, n: null, tags: ["only"] }
    }
  }
]

/** `schema` and the rows without the columns at `drop` (`a` or `record.field`). */
const without = (drop: ReadonlyArray<string>) => {
  const fields = (fs: ReadonlyArray<TableSchema.Field>, at: string): Array<TableSchema.Field> =>
    fs.filter((f) => !drop.includes(`${at}${f.name}`)).map((f) =>
      f.type === "RECORD" ? TableSchema.record({ ...f, fields: fields(f.fields, `${f.name}.`) }) : f
    )
  const value = (v: Record<string, unknown>, at: string): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(v).filter(([k]) => !drop.includes(`${at}${k}`)).map(([k, x]) => [
        k,
        at === "" && k === "rec" && x !== null && typeof x === "object"
          ? value(x as Record<string, unknown>, "rec.")
          : x
      ])
    )
  return {
    schema: { fields: fields(schema.fields, "") },
    inputs: cases.map((c) => value(c.input, "")),
    back: cases.map((c) => value(c.back, ""))
  }
}

const setup = Effect.map(Harness.freshSetup("types"), (s) => ({ ...s, projectId: s.emulator.projectId }))

/** A query's rows as plain JSON values: integers as strings, bytes as arrays, NUMERIC as its digits. */
const plain = (v: unknown): unknown => {
  if (v === null || v === undefined) return null
  if (Buffer.isBuffer(v)) return Array.from(v)
  if (Array.isArray(v)) return v.map(plain)
  if (typeof v === "object") {
    const kind: unknown = v.constructor?.name
    if (kind === "Big" && "toFixed" in v && typeof v.toFixed === "function") return String(v.toFixed())
    if (typeof kind === "string" && kind.startsWith("BigQuery") && "value" in v) return plain(v.value)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  }
  return v
}

const query = (bq: BigQuery, sql: string) =>
  Effect.tryPromise(() => bq.query({ query: sql, wrapIntegers: true })).pipe(
    Effect.map(([rows]) => (rows as Array<unknown>).map(plain) as Array<Record<string, unknown>>)
  )

/** Every row of `table` by id; a plain GEOGRAPHY column reads back as the emulator's WKB, so its WKT. */
const readBack = (bq: BigQuery, table: string) =>
  Effect.gen(function*() {
    const rows = yield* query(bq, `SELECT * EXCEPT (g) FROM \`${table}\` ORDER BY id`)
    const wkt = yield* query(bq, `SELECT ST_ASTEXT(g) AS g FROM \`${table}\` ORDER BY id`)
    rows.forEach((row, k) => void (row["g"] = wkt[k]?.["g"] ?? null))
    return rows
  })

type Mode = "batch" | "streaming"

/** Loads `rows` into a fresh `tableId` through the public API in `mode`. */
const load = (
  mode: Mode,
  at: { readonly projectId: string; readonly datasetId: string; readonly bucket: string },
  tableSchema: TableSchema.TableSchema,
  rows: ReadonlyArray<Record<string, unknown>>,
  tableId: string,
  reconcile?: RetryPolicyInput
) =>
  Effect.gen(function*() {
    const serializer = yield* RowSerializer.fromJson(tableSchema)
    const table = TableDestination.makeUnsafe({ projectId: at.projectId, datasetId: at.datasetId, tableId })
    const writeMethod = WriteMethod.fileLoads({
      stagingPath: `gs://${at.bucket}/${tableId}`,
      poll: Harness.pollFast,
      ...(reconcile === undefined ? {} : { reconcile })
    })
    const resume = yield* Checkpoint.resume({ writerId: tableId, positionSchema: Schema.Number })
    if (mode === "batch") {
      // no `every`: one load at the end of input
      const checkpoint = { resume, position: (_: unknown) => rows.length }
      return yield* Stream.fromIterable(rows).pipe(
        Stream.run(BigQuerySink.make({ table, serializer, writeMethod, checkpoint }))
      )
    }
    // a checkpoint every two rows: several load jobs, each of its own files
    return yield* Stream.fromIterable(rows).pipe(
      Stream.rechunk(1),
      Stream.run(BigQuerySink.make({
        table,
        serializer,
        writeMethod,
        checkpoint: { resume, every: 2, position: (row) => Number((row as { id: number }).id) }
      }))
    )
  }).pipe(Effect.provide(CheckpointStore.memory))

const causeOf = <A, E>(exit: Exit.Exit<A, E>) => (Exit.isFailure(exit) ? String(exit.cause) : "")

layer(Harness.layers, { timeout: "180 seconds", excludeTestServices: true })(
  "BigQuery file loads: every column type on the emulators",
  (it) => {
    for (const mode of ["batch", "streaming"] as const) {
      // bqemulator reads a file with a decimal column through another reader, which cannot take TIME
      // (pinned below): NUMERIC round-trips in a table of its own, every other type with TIME
      it.effect(`${mode}: every type but NUMERIC, each at its extremes and null, round-trips value for value`, () =>
        Effect.gen(function*() {
          const at = yield* setup
          const { back, inputs, schema: tableSchema } = without(["n", "rec.n"])
          const summary = yield* Harness.answered(
            `${mode} load`,
            load(mode, at, tableSchema, inputs, `all_${mode}`),
            30
          )
          assert.strictEqual(summary.recordsWritten, inputs.length)
          assert.strictEqual(summary.recordsFailed, 0)
          assert.deepStrictEqual(
            yield* Harness.answered("read back", readBack(at.bq, `${at.projectId}.${at.datasetId}.all_${mode}`)),
            back
          )
        }))

      it.effect(`${mode}: NUMERIC at its extremes and null, beside every type but TIME, round-trips value for value`, () =>
        Effect.gen(function*() {
          const at = yield* setup
          const { back, inputs, schema: tableSchema } = without(["t"])
          const summary = yield* Harness.answered(
            `${mode} load`,
            load(mode, at, tableSchema, inputs, `numeric_${mode}`),
            30
          )
          assert.strictEqual(summary.recordsWritten, inputs.length)
          assert.deepStrictEqual(
            yield* Harness.answered("read back", readBack(at.bq, `${at.projectId}.${at.datasetId}.numeric_${mode}`)),
            back
          )
        }))
    }

    it.effect("deviation: bqemulator cannot load a file holding both a decimal and a time-micros column (BigQuery can)", () =>
      Effect.gen(function*() {
        // its reader for files with a decimal column (fastavro to Arrow) maps time-micros to int64
        const at = yield* setup
        const tableSchema: TableSchema.TableSchema = {
          fields: [
            TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
            TableSchema.field({ name: "n", type: "NUMERIC" }),
            TableSchema.field({ name: "t", type: "TIME" })
          ]
        }
        const exit = yield* Effect.exit(load("batch", at, tableSchema, [{ id: 1, n: "1.5", t: "01:02:03" }], "n_and_t"))
        assert.match(causeOf(exit), /FileLoadFailed/)
        assert.match(causeOf(exit), /datetime\.time/)
      }))

    it.effect("deviation: bqemulator has no BIGNUMERIC (DuckDB DECIMAL is at most 38 digits; BigQuery loads decimal 77/38)", () =>
      Effect.gen(function*() {
        const at = yield* setup
        const tableSchema: TableSchema.TableSchema = {
          fields: [
            TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
            TableSchema.field({ name: "bn", type: "BIGNUMERIC" })
          ]
        }
        const exit = yield* Effect.exit(
          // one attempt: the emulator's 500 is not worth the default budget
          load("batch", at, tableSchema, [{ id: 1, bn: "1.5" }], "bignumeric", {
            initialBackoff: "10 millis",
            maxBackoff: "20 millis",
            maxAttempts: 1
          })
        )
        // the table cannot even be created there (pinned for the Storage Write path in schema.test.ts)
        assert.match(causeOf(exit), /TableAdminFailed: tables\.insert .*bignumeric: internalError/)
      }))
  }
)
