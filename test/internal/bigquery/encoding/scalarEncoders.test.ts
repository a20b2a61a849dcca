import { assert, describe, it } from "@effect/vitest"
import { DateTime } from "effect"
import type * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import { scalarEncoder } from "../../../../src/internal/bigquery/encoding/scalarEncoders.ts"
import { describeValue } from "../../../../src/internal/bigquery/encoding/valueText.ts"
import { WireWriter } from "../../../../src/internal/bigquery/encoding/wireWriter.ts"

const refusal = (type: TableSchema.ScalarType, value: unknown) => scalarEncoder(type)(new WireWriter(16), value)

describe("scalarEncoders messages", () => {
  it("an INT64 given a fraction says it is not an integer", () => {
    assert.strictEqual(refusal("INT64", 1.5), "INT64 takes an integer, was 1.5 (not an integer)")
    assert.strictEqual(refusal("INT64", Number.NaN), "INT64 takes an integer, was NaN (not an integer)")
    assert.strictEqual(
      refusal("INT64", 2 ** 60),
      "INT64 takes a safe integer (use a bigint beyond ±2^53), was 1152921504606847000"
    )
  })

  it("a bigint is named as a bigint", () => {
    assert.strictEqual(refusal("STRING", 5n), "STRING takes a string, was 5n (bigint)")
    assert.strictEqual(
      refusal("INT64", 2n ** 63n),
      "INT64 takes a value in [-2^63, 2^63), was 9223372036854775808n (bigint)"
    )
    assert.strictEqual(refusal("STRING", 5), "STRING takes a string, was 5")
  })

  it("a TIMESTAMP given a Date names the Date it was", () => {
    assert.strictEqual(
      refusal("TIMESTAMP", new Date(Number.NaN)),
      "TIMESTAMP takes a valid Date, was an invalid Date"
    )
    assert.strictEqual(
      refusal("TIMESTAMP", new Date(Date.UTC(10000, 0, 1))),
      "TIMESTAMP takes a time from 0001-01-01 to 9999-12-31 UTC, was the Date +010000-01-01T00:00:00.000Z"
    )
    assert.strictEqual(
      refusal("DATE", new Date(Date.UTC(2024, 0, 1, 12))),
      "DATE takes a Date at midnight UTC, was the Date 2024-01-01T12:00:00.000Z"
    )
  })

  it("other values are named by what they are", () => {
    assert.strictEqual(describeValue(new Uint8Array(3)), "a Uint8Array of 3 bytes")
    assert.strictEqual(describeValue({ a: 1 }), "an object")
    assert.strictEqual(describeValue(new Map()), "an object of class Map")
    assert.strictEqual(describeValue([1]), "an array")
    assert.strictEqual(describeValue(() => 1), "a function")
    assert.strictEqual(describeValue(Symbol("s")), "a value of type symbol")
    assert.strictEqual(describeValue("x".repeat(70)), `'${"x".repeat(64)}...'`)
    assert.strictEqual(
      describeValue(DateTime.makeUnsafe("2024-01-01T00:00:00Z")),
      "the DateTime 2024-01-01T00:00:00.000Z"
    )
    assert.strictEqual(refusal("BOOL", new Map()), "BOOL takes a boolean, was an object of class Map")
  })
})
