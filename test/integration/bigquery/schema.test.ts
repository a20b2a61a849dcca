/**
 * Against the BigQuery emulator (bqemulator): a table created from a schema derived by
 * `TableSchema.fromSchema` accepts rows encoded by `RowSerializer.fromSchema` through the Storage
 * Write API `_default` stream (writer_schema from `TableSchema.toDescriptor`), and a query reads the
 * same values back. The emulator's deviations from BigQuery are each pinned by a test below; the
 * types they affect (BIGNUMERIC, RECORD, non-finite FLOAT64) are covered by the unit tests.
 */
import { assert, layer } from "@effect/vitest"
import { managedwriter } from "@google-cloud/bigquery-storage"
import { Effect, Exit, Schema } from "effect"
import * as BigQueryType from "../../../src/BigQuery/BigQueryType.ts"
import * as RowSerializer from "../../../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../../../src/BigQuery/TableDestination.ts"
import * as TableSchema from "../../../src/BigQuery/TableSchema.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"

const DateRange = Schema.Struct({ start: Schema.optional(Schema.String), end: Schema.optional(Schema.String) })

const Row = Schema.Struct({
  id: Schema.Int,
  s: Schema.String,
  b: Schema.optional(Schema.Uint8Array),
  i: Schema.BigInt,
  f: Schema.Number,
  n: Schema.String.pipe(BigQueryType.annotate("NUMERIC")),
  ok: Schema.Boolean,
  ts: Schema.Date,
  d: Schema.String.pipe(BigQueryType.annotate("DATE")),
  t: Schema.String.pipe(BigQueryType.annotate("TIME")),
  dt: Schema.String.pipe(BigQueryType.annotate("DATETIME")),
  g: Schema.String.pipe(BigQueryType.annotate("GEOGRAPHY")),
  j: Schema.Json,
  tags: Schema.Array(Schema.String),
  rd: Schema.optional(DateRange.pipe(BigQueryType.annotate("RANGE<DATE>")))
})

const rows: ReadonlyArray<typeof Row.Type> = [
  {
    id: 1,
    s: "héllo 😀",
    b: new Uint8Array([0, 1, 255]),
    i: -(2n ** 63n),
    f: 1.5,
    n: "-12345678901234567890123456789.123456789",
    ok: true,
    ts: new Date("2024-05-06T07:08:09.123Z"),
    d: "2024-02-29",
    t: "23:59:59.999999",
    dt: "2024-05-06T07:08:09.5",
    g: "POINT(1 2)",
    j: { a: [1, "x", null], b: true },
    tags: ["a", "b"],
    rd: { start: "2024-01-01", end: "2024-12-31" }
  },
  {
    id: 2,
    s: "",
    i: 2n ** 63n - 1n,
    f: -0.25,
    n: "0",
    ok: false,
    ts: new Date("0001-01-01T00:00:00.000Z"),
    d: "0001-01-01",
    t: "00:00:00",
    dt: "9999-12-31 23:59:59.999999",
    g: "LINESTRING(0 0, 1 1)",
    j: [],
    tags: [],
    rd: {}
  }
]

/** A query value in a plain, comparable form. */
const plain = (v: unknown): unknown => {
  if (v === null || v === undefined) return null
  if (Buffer.isBuffer(v)) return Array.from(v)
  if (Array.isArray(v)) return v.map(plain)
  if (typeof v === "object") {
    const kind: unknown = v.constructor?.name
    if (kind === "Big" && "toFixed" in v && typeof v.toFixed === "function") return String(v.toFixed())
    if (typeof kind === "string" && kind.startsWith("BigQuery") && "value" in v) return plain(v.value)
    const entries = Object.entries(v).filter(([k]) => k !== "type" && k !== "elementType")
    const only = entries[0]
    if (entries.length === 1 && only !== undefined && only[0] === "value") return plain(only[1])
    return Object.fromEntries(entries.map(([k, x]) => [k, plain(x)]))
  }
  return v
}

/** A fresh table for the struct `schema`, its serializer, and an append + query round trip. */
const roundTrip = <S extends Schema.Top>(
  schema: S,
  values: ReadonlyArray<S["Type"]>,
  selects: ReadonlyArray<string> = ["*"]
) =>
  Effect.gen(function*() {
    const emulator = yield* BigQueryEmulator
    const bq = yield* Clients.bigQuery(emulator)
    const destination = yield* TableDestination.make({
      projectId: emulator.projectId,
      datasetId: Clients.uniqueId("schema"),
      tableId: "t"
    })
    const serializer = yield* RowSerializer.fromSchema(schema)
    const tableSchema = serializer.tableSchema(destination)
    yield* Effect.tryPromise(() => bq.createDataset(destination.datasetId))
    yield* Effect.tryPromise(() =>
      bq.dataset(destination.datasetId).createTable(destination.tableId, { schema: TableSchema.toRest(tableSchema) })
    )
    const [metadata] = yield* Effect.tryPromise(() =>
      bq.dataset(destination.datasetId).table(destination.tableId).getMetadata()
    )
    assert.deepStrictEqual(yield* TableSchema.fromRest(metadata.schema), tableSchema)

    const writer = yield* Clients.bigQueryWriter(emulator)
    const connection = yield* Effect.acquireRelease(
      Effect.tryPromise(() =>
        writer.createStreamConnection({
          streamId: managedwriter.DefaultStream,
          destinationTable: destination.tablePath
        })
      ),
      (c) => Effect.sync(() => c.close())
    )
    const errors: Array<unknown> = []
    connection.onConnectionError((error) => errors.push(error))
    const protoWriter = new managedwriter.Writer({
      connection,
      protoDescriptor: RowSerializer.descriptorOf(serializer, destination)
    })
    const serializedRows = values.map((row) => {
      const bytes = serializer.serialize(row, destination)
      assert.instanceOf(bytes, Uint8Array, String(bytes))
      return Buffer.from(bytes as Uint8Array)
    })
    const response = yield* Effect.tryPromise(() => protoWriter.appendRows({ serializedRows }).getResult())
    assert.isNull(response.error ?? null)
    assert.deepStrictEqual(errors, [])
    return yield* Effect.forEach(selects, (select) =>
      Effect.tryPromise(() =>
        bq.query({ query: `SELECT ${select} FROM \`${destination}\` ORDER BY id`, wrapIntegers: true })
      ).pipe(Effect.map(([result]) =>
        plain(result)
      )))
  }).pipe(Effect.scoped)

layer(BigQueryEmulator.layer, { timeout: "120 seconds", excludeTestServices: true })(
  "BigQuery schemas on the emulator",
  (it) => {
    it.effect("a derived table with every supported type accepts encoded rows; a query reads the same values", () =>
      Effect.gen(function*() {
        const [all, wkt] = yield* roundTrip(Row, rows, ["* EXCEPT (g)", "id, ST_ASTEXT(g) AS g"])
        assert.deepStrictEqual(all, [
          {
            id: "1",
            s: "héllo 😀",
            b: [0, 1, 255],
            i: "-9223372036854775808",
            f: 1.5,
            n: "-12345678901234567890123456789.123456789",
            ok: true,
            ts: "2024-05-06T07:08:09.123Z",
            d: "2024-02-29",
            t: "23:59:59.999999",
            dt: "2024-05-06T07:08:09.500000",
            j: "{\"a\":[1,\"x\",null],\"b\":true}",
            tags: ["a", "b"],
            rd: { start: "2024-01-01", end: "2024-12-31" }
          },
          {
            id: "2",
            s: "",
            b: null,
            i: "9223372036854775807",
            f: -0.25,
            n: "0",
            ok: false,
            ts: "0001-01-01T00:00:00.000Z",
            d: "0001-01-01",
            t: "00:00:00",
            dt: "9999-12-31T23:59:59.999999",
            j: "[]",
            tags: [],
            // both bounds missing: an unbounded range, which the client spells UNBOUNDED here
            rd: { start: "UNBOUNDED", end: "UNBOUNDED" }
          }
        ])
        // Emulator deviation: a plain GEOGRAPHY column reads back as WKB bytes, and ST_ASTEXT writes
        // "POINT (1 2)" where BigQuery writes "POINT(1 2)": the same geometries, spelled differently.
        assert.deepStrictEqual(wkt, [{ id: "1", g: "POINT (1 2)" }, { id: "2", g: "LINESTRING (0 0, 1 1)" }])
      }))

    it.effect("emulator deviation: BIGNUMERIC columns cannot be created (HTTP 500, DuckDB DECIMAL is at most 38 digits)", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          roundTrip(
            Schema.Struct({ id: Schema.Int, v: Schema.String.pipe(BigQueryType.annotate("BIGNUMERIC")) }),
            [],
            []
          )
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.include(String(exit), "An internal error occurred")
      }))

    it.effect("emulator deviation: appends to RECORD columns fail (UNKNOWN: a STRUCT with no fields)", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          roundTrip(Schema.Struct({ id: Schema.Int, rec: Schema.Struct({ name: Schema.String }) }), [{
            id: 1,
            rec: { name: "a" }
          }])
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.include(String(exit), "STRUCT with no fields")
      }))

    it.effect("emulator deviation: FLOAT64 ±Infinity reads back as NaN (BigQuery keeps infinities)", () =>
      Effect.gen(function*() {
        const [read] = yield* roundTrip(Schema.Struct({ id: Schema.Int, f: Schema.Number }), [
          { id: 1, f: Number.NaN },
          { id: 2, f: Infinity },
          { id: 3, f: -Infinity },
          { id: 4, f: -0 }
        ])
        assert.deepStrictEqual(read, [
          { id: "1", f: Number.NaN },
          { id: "2", f: Number.NaN },
          { id: "3", f: Number.NaN },
          { id: "4", f: -0 }
        ])
      }))
  }
)
