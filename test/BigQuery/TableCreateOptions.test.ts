import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as TableCreateOptions from "../../src/BigQuery/TableCreateOptions.ts"
import * as TableSchema from "../../src/BigQuery/TableSchema.ts"

const failure = (input: TableCreateOptions.TableCreateOptionsInput) =>
  Effect.flip(TableCreateOptions.make(input)).pipe(Effect.map((e) => e.message))

describe("TableCreateOptions", () => {
  it.effect("validates partitioning and clustering", () =>
    Effect.gen(function*() {
      const options = yield* TableCreateOptions.make({
        timePartitioning: { type: "DAY", field: "placed", expiration: "90 days" },
        clustering: ["customer", "region"]
      })
      assert.deepStrictEqual(TableCreateOptions.toRest(options), {
        timePartitioning: { type: "DAY", field: "placed", expirationMs: "7776000000" },
        clustering: { fields: ["customer", "region"] }
      })
      assert.deepStrictEqual(yield* TableCreateOptions.make({}), TableCreateOptions.defaults)
      assert.isTrue(TableCreateOptions.isPlain(TableCreateOptions.defaults))
      assert.isFalse(TableCreateOptions.isPlain(options))
      assert.strictEqual(
        yield* failure({ timePartitioning: { type: "WEEK" as "DAY" } }),
        "tableCreateOptions.timePartitioning.type: must be HOUR, DAY, MONTH or YEAR, was 'WEEK'"
      )
      assert.strictEqual(
        yield* failure({ timePartitioning: { type: "DAY", field: " " } }),
        "tableCreateOptions.timePartitioning.field: must not be blank"
      )
      assert.strictEqual(
        yield* failure({ timePartitioning: { type: "DAY", expiration: Duration.micros(10n) } }),
        "tableCreateOptions.timePartitioning.expiration: must be at least 1 ms, was 10000ns"
      )
      assert.strictEqual(
        yield* failure({ clustering: [] }),
        "tableCreateOptions.clustering: must have 1 to 4 columns, had 0"
      )
      assert.strictEqual(
        yield* failure({ clustering: ["a", "b", "c", "d", "e"] }),
        "tableCreateOptions.clustering: must have 1 to 4 columns, had 5"
      )
      assert.strictEqual(
        yield* failure({ clustering: ["a", ""] }),
        "tableCreateOptions.clustering[1]: must not be blank"
      )
      assert.strictEqual(yield* failure({ clustering: ["a", "A"] }), "tableCreateOptions.clustering[1]: repeats 'A'")
    }))

  it.effect("checks options against the table schema", () =>
    Effect.gen(function*() {
      const schema: TableSchema.TableSchema = {
        fields: [
          TableSchema.field({ name: "day", type: "DATE" }),
          TableSchema.field({ name: "ts", type: "TIMESTAMP" }),
          TableSchema.field({ name: "f", type: "FLOAT64" }),
          TableSchema.field({ name: "tags", type: "STRING", mode: "REPEATED" })
        ]
      }
      const error = (options: TableCreateOptions.TableCreateOptions) =>
        Effect.flip(TableCreateOptions.checkSchema(options, schema)).pipe(Effect.map((e) => e.message))
      yield* TableCreateOptions.checkSchema(
        { timePartitioning: { type: "HOUR", field: "TS" }, clustering: ["day"] },
        schema
      )
      assert.strictEqual(
        yield* error({ timePartitioning: { type: "HOUR", field: "day" } }),
        "tableCreateOptions.timePartitioning.field: a DATE column cannot have HOUR partitions"
      )
      assert.strictEqual(
        yield* error({ timePartitioning: { type: "DAY", field: "x" } }),
        "tableCreateOptions.timePartitioning.field: is not a column of the table"
      )
      assert.strictEqual(
        yield* error({ clustering: ["f"] }),
        "tableCreateOptions.clustering[0]: 'f' (NULLABLE FLOAT64) cannot cluster a table"
      )
      assert.strictEqual(
        yield* error({ clustering: ["tags"] }),
        "tableCreateOptions.clustering[0]: 'tags' (REPEATED STRING) cannot cluster a table"
      )
    }))
})

const untyped = (u: unknown) => TableCreateOptions.make(u as TableCreateOptions.TableCreateOptionsInput)

describe("TableCreateOptions.make on untyped input", () => {
  it.effect("null or primitive options are a SinkConfigError, not a defect", () =>
    Effect.gen(function*() {
      const whole = yield* Effect.flip(untyped(null))
      assert.deepStrictEqual([whole.path, whole.detail], ["tableCreateOptions", "must be an object, was null"])
      const partitioning = yield* Effect.flip(untyped({ timePartitioning: null }))
      assert.deepStrictEqual(partitioning.path, "tableCreateOptions.timePartitioning")
      const primitive = yield* Effect.flip(untyped({ timePartitioning: "DAY" }))
      assert.deepStrictEqual(primitive.detail, "must be an object, was 'DAY'")
    }))
})
