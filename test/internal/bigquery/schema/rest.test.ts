import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as fc from "fast-check"
import * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import { decodeSchema } from "../../../../src/internal/bigquery/schema/model.ts"
import { tableSchemaArb } from "../../../BigQuery/arbitraries.ts"

const withAttributes = tableSchemaArb.chain((schema) =>
  fc.constantFrom(...schema.fields).chain(() =>
    fc.record({ description: fc.option(fc.string({ minLength: 1 }), { nil: undefined }) }).map(({ description }) => ({
      fields: [
        ...schema.fields,
        TableSchema.field({
          name: "zz_param",
          type: "NUMERIC",
          precision: 12,
          scale: 3,
          ...(description === undefined ? {} : { description })
        }),
        TableSchema.field({ name: "zz_len", type: "STRING", maxLength: 10, defaultValueExpression: "'x'" })
      ]
    }))
  )
)

const error = (fields: unknown, dialect: "rest" | "model" = "rest") => {
  const r = decodeSchema({ fields }, dialect, "schema")
  return Result.isFailure(r) ? r.failure.message : "ok"
}
describe("REST and Storage Write schema forms", () => {
  it("round trip through the REST form", () => {
    fc.assert(fc.property(withAttributes, (schema) => {
      assert.deepStrictEqual(decodeSchema(TableSchema.toRest(schema), "rest", "schema"), Result.succeed(schema))
    }))
  })

  it("round trip through the Storage Write API form", () => {
    fc.assert(fc.property(withAttributes, (schema) => {
      assert.deepStrictEqual(decodeSchema(TableSchema.toStorage(schema), "storage", "schema"), Result.succeed(schema))
    }))
  })

  it.effect("reads legacy REST names, lower case, missing modes and string counts", () =>
    Effect.gen(function*() {
      const schema = yield* TableSchema.fromRest({
        fields: [
          { name: "a", type: "INTEGER" },
          { name: "b", type: "float", mode: "required" },
          { name: "c", type: "BOOLEAN", mode: "REPEATED" },
          {
            name: "d",
            type: "STRUCT",
            fields: [{ name: "e", type: "RECORD", fields: [{ name: "f", type: "STRING", maxLength: "5" }] }]
          },
          { name: "g", type: "RANGE", rangeElementType: { type: "TIMESTAMP" } },
          { name: "h", type: "BIGNUMERIC", precision: "40", scale: "2" }
        ]
      })
      assert.deepStrictEqual(schema, {
        fields: [
          { name: "a", type: "INT64", mode: "NULLABLE" },
          { name: "b", type: "FLOAT64", mode: "REQUIRED" },
          { name: "c", type: "BOOL", mode: "REPEATED" },
          {
            name: "d",
            type: "RECORD",
            mode: "NULLABLE",
            fields: [{
              name: "e",
              type: "RECORD",
              mode: "NULLABLE",
              fields: [{ name: "f", type: "STRING", mode: "NULLABLE", maxLength: 5 }]
            }]
          },
          { name: "g", type: "RANGE", mode: "NULLABLE", rangeElementType: "TIMESTAMP" },
          { name: "h", type: "BIGNUMERIC", mode: "NULLABLE", precision: 40, scale: 2 }
        ]
      })
      assert.deepStrictEqual(TableSchema.toRest({ fields: schema.fields.slice(0, 3) }).fields.map((f) => f.type), [
        "INTEGER",
        "FLOAT",
        "BOOLEAN"
      ])
    }))

  it.effect("reads Storage Write enums as numbers and proto3 zeros as unset", () =>
    Effect.gen(function*() {
      const schema = yield* TableSchema.fromStorage({
        fields: [
          { name: "a", type: 2, mode: 0, maxLength: 0, precision: "0", scale: 0n },
          {
            name: "b",
            type: "STRUCT",
            mode: "REPEATED",
            fields: [{ name: "c", type: 16, mode: 2, rangeElementType: { type: 8 } }]
          }
        ]
      })
      assert.deepStrictEqual(schema, {
        fields: [
          { name: "a", type: "INT64", mode: "NULLABLE" },
          {
            name: "b",
            type: "RECORD",
            mode: "REPEATED",
            fields: [{ name: "c", type: "RANGE", mode: "REQUIRED", rangeElementType: "DATE" }]
          }
        ]
      })
    }))

  it("rejects invalid schemas with the path of the offending option", () => {
    assert.strictEqual(error([]), "schema.fields: must have at least one field")
    assert.strictEqual(error([{ name: "a", type: "INTERVAL" }]), "schema.fields[0].type: unsupported type 'INTERVAL'")
    assert.strictEqual(
      error([{ name: "a b", type: "STRING" }]).startsWith("schema.fields[0].name: must be 1 to 300"),
      true
    )
    assert.strictEqual(
      error([{ name: "_PARTITIONTIME", type: "STRING" }]),
      "schema.fields[0].name: must not start with the reserved prefix _PARTITION, was '_PARTITIONTIME'"
    )
    assert.strictEqual(
      error([{ name: "a", type: "STRING" }, { name: "A", type: "INT64" }]),
      "schema.fields[1].name: 'A' repeats schema.fields[0] (names ignore case)"
    )
    assert.strictEqual(
      error([{ name: "r", type: "RECORD", fields: [] }]),
      "schema.fields[0].fields: must have at least one field"
    )
    assert.strictEqual(
      error([{ name: "r", type: "RANGE", rangeElementType: { type: "INT64" } }]),
      "schema.fields[0].rangeElementType: must be DATE, DATETIME or TIMESTAMP, was INT64"
    )
    assert.strictEqual(
      error([{ name: "n", type: "NUMERIC", precision: "40" }]),
      "schema.fields[0].precision: NUMERIC(P, S) needs 0 <= S <= 9 and 1 <= P - S <= 29, was (40, 0)"
    )
    assert.strictEqual(
      error([{ name: "n", type: "INT64", maxLength: "4" }]),
      "schema.fields[0].maxLength: applies to STRING and BYTES only and must be at least 1"
    )
    assert.strictEqual(
      error([{ name: "n", type: "INTEGER" }], "model"),
      "schema.fields[0].type: unsupported type 'INTEGER'"
    )
    assert.strictEqual(
      error([{ name: "n", type: "INT64" }], "model"),
      "schema.fields[0].mode: must be NULLABLE, REQUIRED or REPEATED, was undefined"
    )
    let nested: unknown = { name: "leaf", type: "STRING" }
    for (let i = 0; i < 16; i++) nested = { name: `r${i}`, type: "RECORD", fields: [nested] }
    assert.strictEqual(error([nested]).endsWith("RECORD columns nest at most 15 levels deep"), true)
    assert.strictEqual(error([(nested as { fields: [unknown] }).fields[0]]), "ok")
    const wide = Array.from({ length: 10_001 }, (_, i) => ({ name: `c${i}`, type: "STRING" }))
    assert.strictEqual(error(wide), "schema.fields[10000]: a table has at most 10000 columns")
  })
})
