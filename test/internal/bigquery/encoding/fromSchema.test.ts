import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import * as fc from "fast-check"
import * as BigQueryType from "../../../../src/BigQuery/BigQueryType.ts"
import * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import { fromSchema } from "../../../../src/internal/bigquery/encoding/fromSchema.ts"
import { tableSchemaArb } from "../../../BigQuery/arbitraries.ts"

/** An Effect schema whose derived table schema is `field`, choosing among equivalent spellings. */
const schemaOf = (field: TableSchema.Field, choice: number): Schema.Top => {
  const value = ((): Schema.Top => {
    switch (field.type) {
      case "RECORD":
        return structOf(field.fields, choice)
      case "RANGE":
        return Schema.Struct({ start: Schema.optional(Schema.String), end: Schema.optional(Schema.String) }).pipe(
          BigQueryType.annotate(`RANGE<${field.rangeElementType}>`)
        )
      case "STRING":
        return choice % 2 === 0 ? Schema.String : Schema.Literals(["a", "b"])
      case "INT64":
        return choice % 2 === 0 ? Schema.BigInt : Schema.Int
      case "FLOAT64":
        return Schema.Number
      case "BOOL":
        return Schema.Boolean
      case "BYTES":
        return Schema.Uint8Array
      case "TIMESTAMP":
        return choice % 2 === 0 ? Schema.Date : Schema.DateTimeUtc
      case "JSON":
        return Schema.Json
      case "NUMERIC":
        return Schema.BigDecimal
      default:
        return Schema.String.pipe(BigQueryType.annotate(field.type))
    }
  })()
  switch (field.mode) {
    case "REQUIRED":
      return value
    case "NULLABLE":
      return choice % 3 === 0
        ? Schema.optional(value)
        : choice % 3 === 1
        ? Schema.NullOr(value)
        : Schema.optionalKey(value)
    case "REPEATED":
      return choice % 2 === 0 ? Schema.Array(value) : Schema.optional(Schema.Array(value))
  }
}

const structOf = (fields: ReadonlyArray<TableSchema.Field>, choice: number): Schema.Top =>
  Schema.Struct(Object.fromEntries(fields.map((f, i) => [f.name, schemaOf(f, choice + i)])))

const derived = (schema: Schema.Top): string => {
  const r = fromSchema(schema.ast, "schema")
  return Result.isSuccess(r)
    ? r.success.fields.map((f) => `${f.name} ${f.type === "RANGE" ? `RANGE<${f.rangeElementType}>` : f.type} ${f.mode}`)
      .join(", ")
    : r.failure.message
}

describe("TableSchema.fromSchema", () => {
  it("round trips: the schema of an Effect schema built from a table schema is that table schema", () => {
    fc.assert(fc.property(tableSchemaArb, fc.nat(), (table, choice) => {
      assert.deepStrictEqual(fromSchema(structOf(table.fields, choice).ast, "schema"), Result.succeed(table))
    }))
  })

  it("derives modes and types from the field schemas", () => {
    class Point extends Schema.Class<Point>("Point")({ x: Schema.Number, y: Schema.Number }) {}
    const Order = Schema.Struct({
      id: Schema.BigInt,
      seq: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 })),
      n32: Schema.Number.check(Schema.isInt32()),
      ratio: Schema.Union([Schema.Int, Schema.Number]),
      placed: Schema.DateTimeUtcFromString,
      zoned: Schema.DateTimeZoned,
      note: Schema.optional(Schema.NullOr(Schema.String)),
      tags: Schema.Array(Schema.String),
      kind: Schema.Literals(["a", "b"]),
      flag: Schema.Literal(true),
      at: Point,
      price: Schema.String.pipe(BigQueryType.annotate("NUMERIC")),
      day: Schema.Date.pipe(BigQueryType.annotate("DATE")),
      any: Schema.Unknown.pipe(BigQueryType.annotate("GEOGRAPHY")),
      doc: Schema.Struct({ a: Schema.String }).pipe(BigQueryType.annotate("JSON")),
      opt: Schema.optional(Schema.String).pipe(BigQueryType.annotate("TIME"))
    })
    assert.strictEqual(
      derived(Order),
      "id INT64 REQUIRED, seq INT64 REQUIRED, n32 INT64 REQUIRED, ratio FLOAT64 REQUIRED, placed TIMESTAMP REQUIRED, " +
        "zoned TIMESTAMP REQUIRED, note STRING NULLABLE, tags STRING REPEATED, kind STRING REQUIRED, flag BOOL REQUIRED, " +
        "at RECORD REQUIRED, price NUMERIC REQUIRED, day DATE REQUIRED, any GEOGRAPHY REQUIRED, doc JSON REQUIRED, " +
        "opt TIME NULLABLE"
    )
  })

  it("keeps descriptions", () => {
    const r = fromSchema(Schema.Struct({ a: Schema.String.annotate({ description: "the a" }) }).ast, "schema")
    assert.deepStrictEqual(
      r,
      Result.succeed({ fields: [{ name: "a", type: "STRING", mode: "REQUIRED", description: "the a" }] })
    )
  })

  it("rejects unsupported shapes, naming the field", () => {
    const one = (s: Schema.Top) => derived(Schema.Struct({ f: s }))
    assert.strictEqual(one(Schema.Tuple([Schema.String])), "schema.f: tuples cannot be BigQuery columns; use an array")
    assert.strictEqual(one(Schema.Array(Schema.NullOr(Schema.String))), "schema.f[]: BigQuery arrays cannot hold NULL")
    assert.strictEqual(one(Schema.Array(Schema.Array(Schema.String))), "schema.f[]: BigQuery arrays cannot hold arrays")
    assert.strictEqual(
      one(Schema.Union([Schema.String, Schema.Number])),
      "schema.f: cannot be a BigQuery column (schema Union)"
    )
    assert.strictEqual(
      one(Schema.Record(Schema.String, Schema.Number)),
      "schema.f: cannot be a BigQuery column (schema Objects)"
    )
    assert.strictEqual(one(Schema.Unknown), "schema.f: needs a BigQueryType annotation (Unknown and Any carry no type)")
    assert.strictEqual(
      one(Schema.Number.pipe(BigQueryType.annotate("NUMERIC"))),
      "schema.f: a number cannot be written as NUMERIC"
    )
    assert.strictEqual(
      one(Schema.Boolean.pipe(BigQueryType.annotate("STRING"))),
      "schema.f: a boolean cannot be written as STRING"
    )
    assert.strictEqual(
      derived(Schema.Struct({ items: Schema.Array(Schema.Struct({ p: Schema.Symbol })) })),
      "schema.items[].p: cannot be a BigQuery column (schema Symbol)"
    )
    assert.strictEqual(
      derived(Schema.Struct({ "a-b": Schema.String })).startsWith("schema.a-b: column name must be"),
      true
    )
    assert.strictEqual(derived(Schema.String), "schema: must be a struct or class schema")
    interface Tree {
      readonly children: ReadonlyArray<Tree>
      readonly name: string
    }
    const Tree: Schema.Codec<Tree> = Schema.Struct({
      name: Schema.String,
      children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => Tree))
    })
    assert.strictEqual(derived(Schema.Struct({ t: Tree })).endsWith("RECORD columns nest at most 15 levels deep"), true)
  })

  it.effect("is exposed as TableSchema.fromSchema", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(TableSchema.fromSchema(Schema.Struct({ s: Schema.Symbol })))
      assert.strictEqual(error.path, "schema.s")
    }))
})
