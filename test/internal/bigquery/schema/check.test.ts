import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import { check } from "../../../../src/internal/bigquery/schema/check.ts"
import { union } from "../../../../src/internal/bigquery/schema/union.ts"
import { fieldsArb, tableSchemaArb } from "../../../BigQuery/arbitraries.ts"

const off = { allowNewFields: false, allowFieldRelaxation: false }

describe("schema check", () => {
  it("a serializer fits the table it created: no issue (property)", () => {
    fc.assert(fc.property(tableSchemaArb, (schema) => assert.deepStrictEqual(check(schema, schema), [])))
  })

  it("matches names case-insensitively (property)", () => {
    fc.assert(fc.property(tableSchemaArb, (schema) => {
      const upper = (fields: ReadonlyArray<TableSchema.Field>): ReadonlyArray<TableSchema.Field> =>
        fields.map((f) =>
          f.type === "RECORD"
            ? { ...f, name: f.name.toUpperCase(), fields: upper(f.fields) }
            : { ...f, name: f.name.toUpperCase() }
        )
      assert.deepStrictEqual(check(schema, { fields: upper(schema.fields) }), [])
    }))
  })

  it("agrees with the union under schemaUpdate off on what cannot be written (property)", () => {
    fc.assert(fc.property(tableSchemaArb, fieldsArb(1, 4), (live, extra) => {
      const desired = { fields: [...live.fields, ...extra] }
      const united = union(live, desired, off, (reason, path) => ({ reason, path }))
      const issues = check(live, desired).filter((i) => i.reason !== "RequiredMissing")
      // the union refuses exactly when the check finds a column the table lacks or a changed one, and
      // names one the check names (each stops at the first it meets, in its own order of the columns)
      assert.strictEqual(Result.isFailure(united), issues.length > 0)
      if (Result.isFailure(united)) assert.include(issues.map((i) => i.path), united.failure.path)
    }))
  })

  it("names the column, the difference and the fix", () => {
    const live: TableSchema.TableSchema = {
      fields: [
        TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
        TableSchema.field({ name: "at", type: "TIMESTAMP" }),
        TableSchema.record({
          name: "address",
          fields: [TableSchema.field({ name: "city", type: "STRING" })]
        }),
        TableSchema.field({ name: "tags", type: "STRING", mode: "REPEATED" })
      ]
    }
    const desired: TableSchema.TableSchema = {
      fields: [
        TableSchema.field({ name: "at", type: "STRING" }),
        TableSchema.record({
          name: "Address",
          fields: [
            TableSchema.field({ name: "city", type: "STRING" }),
            TableSchema.field({ name: "zip", type: "STRING" })
          ]
        }),
        TableSchema.field({ name: "tags", type: "STRING" })
      ]
    }
    assert.deepStrictEqual(check(live, desired).map((i) => [i.reason, i.path]), [
      ["TypeChanged", "at"],
      ["NewField", "Address.zip"],
      ["RepeatedChanged", "tags"],
      ["RequiredMissing", "id"]
    ])
    const [typeChanged, newField] = check(live, desired)
    assert.strictEqual(typeChanged?.message, "column at is TIMESTAMP in the table, and the serializer writes STRING")
    assert.include(newField?.message, "schemaUpdate: { allowNewFields: true }")
  })
})
