import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import type * as SchemaUpdateOptions from "../../../../src/BigQuery/SchemaUpdateOptions.ts"
import * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import { fieldsArb, tableSchemaArb } from "../../../BigQuery/arbitraries.ts"

const optionsArb: fc.Arbitrary<SchemaUpdateOptions.SchemaUpdateOptions> = fc.record({
  allowNewFields: fc.boolean(),
  allowFieldRelaxation: fc.boolean()
})
const all: SchemaUpdateOptions.SchemaUpdateOptions = { allowNewFields: true, allowFieldRelaxation: true }

const names = (fields: ReadonlyArray<TableSchema.Field>): Array<string> => fields.map((f) => f.name.toLowerCase())

const renamed = (
  f: TableSchema.Field,
  upper: boolean,
  relax: boolean,
  nested: ReadonlyArray<TableSchema.Field> | undefined
): TableSchema.Field => {
  const name = upper ? f.name.toUpperCase() : f.name
  const mode = relax && f.mode === "REQUIRED" ? "NULLABLE" : f.mode
  return f.type === "RECORD" && nested !== undefined ? { ...f, name, mode, fields: nested } : { ...f, name, mode }
}

/** A desired schema evolved from live the way serializers evolve: case changes, relaxations, appends. */
const evolved = (live: TableSchema.TableSchema): fc.Arbitrary<TableSchema.TableSchema> => {
  const evolve = (fields: ReadonlyArray<TableSchema.Field>): fc.Arbitrary<ReadonlyArray<TableSchema.Field>> =>
    fc.tuple(
      fc.tuple(...fields.map((f) =>
        fc.tuple(fc.boolean(), fc.boolean(), f.type === "RECORD" ? evolve(f.fields) : fc.constant(undefined)).map(
          ([upper, relax, nested]): TableSchema.Field => renamed(f, upper, relax, nested)
        )
      )),
      fieldsArb(2, 2)
    ).map(([kept, extra]) =>
      kept.concat(extra.filter((f) => !names(kept).includes(f.name.toLowerCase())))
    )
  return evolve(live.fields).map((fields) => ({ fields }))
}

/** Every column path (lower case) of a schema. */
const paths = (fields: ReadonlyArray<TableSchema.Field>, prefix = ""): Array<string> =>
  fields.flatMap((f) => {
    const p = `${prefix}${f.name.toLowerCase()}`
    return f.type === "RECORD" ? [p, ...paths(f.fields, `${p}.`)] : [p]
  })

const column = (
  type: TableSchema.Field["type"],
  mode: TableSchema.Mode,
  element: TableSchema.RangeElementType = "DATE"
): TableSchema.Field =>
  type === "RECORD"
    ? TableSchema.record({ name: "c", mode, fields: [TableSchema.field({ name: "x", type: "BOOL" })] })
    : type === "RANGE"
    ? TableSchema.range({ name: "c", mode, rangeElementType: element })
    : TableSchema.field({ name: "c", type, mode })
describe("TableSchema.union", () => {
  it("of a schema with itself is that schema, unchanged", () => {
    fc.assert(fc.property(tableSchemaArb, optionsArb, (schema, options) => {
      const result = TableSchema.union(schema, schema, options)
      assert.isTrue(Result.isSuccess(result))
      if (Result.isSuccess(result)) {
        assert.isFalse(result.success.changed)
        assert.strictEqual(result.success.schema, schema)
      }
    }))
  })

  it("never drops, reorders or renames live columns and keeps their attributes", () => {
    fc.assert(
      fc.property(
        tableSchemaArb.chain((live) => evolved(live).map((desired) => ({ live, desired }))),
        ({ desired, live }) => {
          const result = TableSchema.union(live, desired, all)
          assert.isTrue(Result.isSuccess(result))
          if (!Result.isSuccess(result)) return
          const check = (before: ReadonlyArray<TableSchema.Field>, after: ReadonlyArray<TableSchema.Field>) => {
            assert.deepStrictEqual(after.slice(0, before.length).map((f) => f.name), before.map((f) => f.name))
            before.forEach((f, i) => {
              const g = after[i]
              assert.isDefined(g)
              if (g === undefined) return
              assert.strictEqual(g.type, f.type)
              assert.strictEqual(g.description, f.description)
              if (f.type === "RECORD" && g.type === "RECORD") check(f.fields, g.fields)
            })
          }
          check(live.fields, result.success.schema.fields)
        }
      )
    )
  })

  it("contains every desired column when new fields are allowed, new ones NULLABLE unless REPEATED", () => {
    fc.assert(
      fc.property(
        tableSchemaArb.chain((live) => evolved(live).map((desired) => ({ live, desired }))),
        ({ desired, live }) => {
          const result = TableSchema.union(live, desired, all)
          if (!Result.isSuccess(result)) return assert.fail("union failed")
          const united = new Set(paths(result.success.schema.fields))
          for (const p of paths(desired.fields)) assert.isTrue(united.has(p), p)
          const old = new Set(paths(live.fields))
          const visit = (fields: ReadonlyArray<TableSchema.Field>, prefix: string) => {
            for (const f of fields) {
              const p = `${prefix}${f.name.toLowerCase()}`
              if (!old.has(p)) assert.notStrictEqual(f.mode, "REQUIRED", p)
              if (f.type === "RECORD") visit(f.fields, `${p}.`)
            }
          }
          visit(result.success.schema.fields, "")
          assert.strictEqual(
            result.success.changed,
            paths(desired.fields).some((p) => !old.has(p)) || result.success.schema !== live
          )
        }
      )
    )
  })

  it("rejects a new column when new fields are not allowed, naming it", () => {
    const live = { fields: [TableSchema.field({ name: "a", type: "INT64" })] }
    const desired = {
      fields: [
        TableSchema.record({ name: "A", fields: [TableSchema.field({ name: "x", type: "STRING" })] })
      ]
    }
    const liveRecord = {
      fields: [TableSchema.record({ name: "r", fields: [TableSchema.field({ name: "x", type: "STRING" })] })]
    }
    const desiredRecord = {
      fields: [
        TableSchema.record({
          name: "R",
          fields: [TableSchema.field({ name: "x", type: "STRING" }), TableSchema.field({ name: "y", type: "BOOL" })]
        })
      ]
    }
    const nested = TableSchema.union(liveRecord, desiredRecord, { allowNewFields: false, allowFieldRelaxation: true })
    assert.isTrue(Result.isFailure(nested))
    if (Result.isFailure(nested)) {
      assert.deepStrictEqual([nested.failure.reason, nested.failure.path], ["NewField", "r.y"])
    }
    const allowed = TableSchema.union(liveRecord, desiredRecord, all)
    if (!Result.isSuccess(allowed)) return assert.fail("union failed")
    assert.deepStrictEqual(allowed.success.schema, {
      fields: [
        TableSchema.record({
          name: "r",
          fields: [TableSchema.field({ name: "x", type: "STRING" }), TableSchema.field({ name: "y", type: "BOOL" })]
        })
      ]
    })
    const retyped = TableSchema.union(live, desired, all)
    if (Result.isFailure(retyped)) {
      assert.deepStrictEqual([retyped.failure.reason, retyped.failure.path], ["TypeChanged", "a"])
    } else assert.fail("expected a type change")
  })

  it("rejects any type conflict, including RANGE element types, and REPEATED changes", () => {
    const typeArb = fc.constantFrom<TableSchema.Field["type"]>("STRING", "INT64", "FLOAT64", "DATE", "RECORD", "RANGE")
    fc.assert(fc.property(typeArb, typeArb, fc.boolean(), optionsArb, (a, b, repeated, options) => {
      const live = { fields: [column(a, "NULLABLE")] }
      const desired = {
        fields: [column(b, repeated ? "REPEATED" : "NULLABLE", a === "RANGE" && b === "RANGE" ? "TIMESTAMP" : "DATE")]
      }
      const result = TableSchema.union(live, desired, options)
      const expected = a !== b || a === "RANGE" ? "TypeChanged" : repeated ? "RepeatedChanged" : undefined
      if (expected === undefined) assert.isTrue(Result.isSuccess(result))
      else if (Result.isFailure(result)) assert.strictEqual(result.failure.reason, expected)
      else assert.fail(`expected ${expected}`)
    }))
  })

  it("relaxes REQUIRED only when allowed and the desired column is not REQUIRED; never tightens", () => {
    const req = { fields: [TableSchema.field({ name: "c", type: "STRING", mode: "REQUIRED" })] }
    const nul = { fields: [TableSchema.field({ name: "C", type: "STRING", mode: "NULLABLE", description: "new" })] }
    const relaxed = TableSchema.union(req, nul, { allowNewFields: false, allowFieldRelaxation: true })
    assert.deepStrictEqual(
      Result.map(relaxed, (r) => r.schema.fields),
      Result.succeed([TableSchema.field({ name: "c", type: "STRING", mode: "NULLABLE" })])
    )
    assert.deepStrictEqual(
      Result.map(TableSchema.union(req, nul, { allowNewFields: true, allowFieldRelaxation: false }), (r) => r.changed),
      Result.succeed(false)
    )
    assert.deepStrictEqual(Result.map(TableSchema.union(req, req, all), (r) => r.changed), Result.succeed(false))
    assert.deepStrictEqual(Result.map(TableSchema.union(nul, req, all), (r) => r.changed), Result.succeed(false))
  })

  it("is deterministic", () => {
    fc.assert(fc.property(tableSchemaArb, tableSchemaArb, optionsArb, (live, desired, options) => {
      assert.deepStrictEqual(TableSchema.union(live, desired, options), TableSchema.union(live, desired, options))
    }))
  })
})
