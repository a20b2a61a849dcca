import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import type * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import { encodeDescriptor, toDescriptor } from "../../../../src/internal/bigquery/encoding/descriptor.ts"
import { compile, EncodeFailure } from "../../../../src/internal/bigquery/encoding/encoder.ts"
import { WireWriter } from "../../../../src/internal/bigquery/encoding/wireWriter.ts"
import { decoderOf, decodeRow, rowSample, scalarTypes, tableSchemaArb } from "../../../BigQuery/arbitraries.ts"

const schemaWithRow = tableSchemaArb.chain((schema) => rowSample(schema.fields).map((row) => ({ schema, row })))

const encode = (schema: TableSchema.TableSchema, row: unknown, rejectUnknownFields = true) =>
  compile(schema, { rejectUnknownFields }).serialize(row)

/** What an encoding gave, comparable with `deepStrictEqual`. */
const outcome = (result: Uint8Array | EncodeFailure) =>
  result instanceof EncodeFailure ? { path: result.path, message: result.message } : Array.from(result)

/** Every present scalar value in a row, with its path and type. */
interface Leaf {
  readonly path: ReadonlyArray<string | number>
  readonly type: TableSchema.ScalarType
}

const leaves = (fields: ReadonlyArray<TableSchema.Field>, row: Record<string, unknown>, prefix: Leaf["path"]) => {
  const out: Array<Leaf> = []
  for (const field of fields) {
    const value = row[field.name]
    if (value === null || value === undefined) continue
    const items: Array<[unknown, Leaf["path"]]> = field.mode === "REPEATED"
      ? (value as Array<unknown>).map((v, i) => [v, [...prefix, field.name, i]])
      : [[value, [...prefix, field.name]]]
    for (const [item, path] of items) {
      if (field.type === "RECORD") out.push(...leaves(field.fields, item as Record<string, unknown>, path))
      else if (field.type === "RANGE") {
        for (const bound of ["start", "end"]) {
          const b = (item as Record<string, unknown>)[bound]
          if (b !== null && b !== undefined) out.push({ path: [...path, bound], type: field.rangeElementType })
        }
      } else out.push({ path, type: field.type })
    }
  }
  return out
}

const setAt = (row: unknown, path: Leaf["path"], value: unknown): unknown => {
  const [head, ...rest] = path
  if (head === undefined) return value
  if (Array.isArray(row)) return row.map((v, i) => (i === head ? setAt(v, rest, value) : v))
  return { ...(row as Record<string, unknown>), [head]: setAt((row as Record<string, unknown>)[head], rest, value) }
}

const renderPath = (path: Leaf["path"]): string =>
  path.map((s, i) => (typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`)).join("")

const invalid: Readonly<Record<TableSchema.ScalarType, ReadonlyArray<unknown>>> = {
  STRING: [42, "a\uD800b", "x".repeat(50) + "\uDC00", true],
  BYTES: ["abc", [1, 2]],
  INT64: [1.5, 2n ** 63n, -(2n ** 63n) - 1n, "12a", 2 ** 53, "9223372036854775808", NaN],
  FLOAT64: ["1.5", 1n, true],
  NUMERIC: ["1e5", "1".repeat(30), "0.0000000001", 1.5, "", "-", "1.", ".5", "+1"],
  BIGNUMERIC: [
    "1".repeat(40),
    "0." + "1".repeat(39),
    "578960446186580977117854925043439539266.34992332820282019728792003956564819968",
    2
  ],
  BOOL: ["true", 1, 0],
  TIMESTAMP: [
    new Date(Number.NaN),
    new Date(Date.UTC(10000, 0, 1)),
    1_700_000_000_000,
    "2024-01-01T00:00:00",
    "2024-01-01T00:00:00.1234567Z",
    2n ** 62n
  ],
  DATE: ["2024-02-30", "2023-02-29", "0000-12-31", 1.5, 2_932_897, new Date(Date.UTC(2024, 0, 1, 12)), "2024-1-01"],
  TIME: ["24:00:00", "12:60:00", "12:00:60", "12:00", "12:00:00.1234567", 43_200],
  DATETIME: ["2024-01-01", "2024-01-01X00:00:00", "2024-13-01 00:00:00", new Date(0)],
  GEOGRAPHY: ["CIRCLE(1 2)", "POINT(1 2", 5, "{bad json"],
  JSON: ["{", "[1,]", "{'a':1}", Number.NaN, { a: undefined, b: () => 1 }, { a: 1n }]
}

const invalidFor = (field: TableSchema.Field): ReadonlyArray<unknown> =>
  field.type === "RECORD" || field.type === "RANGE" || field.mode === "REPEATED" ? [] : invalid[field.type]

describe("encoder", () => {
  it("encodes arbitrary valid rows that protobufjs decodes, with our descriptor, to the same values", () => {
    fc.assert(
      fc.property(schemaWithRow, ({ row, schema }) => {
        const decoder = decoderOf(encodeDescriptor(toDescriptor(schema)))
        const bytes = encode(schema, row.value)
        assert.instanceOf(bytes, Uint8Array, bytes instanceof EncodeFailure ? `${bytes.path}: ${bytes.message}` : "")
        assert.deepStrictEqual(decodeRow(decoder, bytes as Uint8Array), row.decoded)
      }),
      { numRuns: 300 }
    )
  })

  it("encodes exactly what protobufjs reflection encodes for the decoded row", () => {
    fc.assert(
      fc.property(schemaWithRow, ({ row, schema }) => {
        const decoder = decoderOf(encodeDescriptor(toDescriptor(schema)))
        const bytes = encode(schema, row.value) as Uint8Array
        const reencoded = decoder.encode(decoder.decode(bytes)).finish()
        assert.deepStrictEqual(Array.from(bytes), Array.from(reencoded))
      }),
      { numRuns: 200 }
    )
  })

  it("routes an arbitrary invalid value to a failure naming its path", () => {
    const withInvalid = schemaWithRow
      .filter(({ row, schema }) => leaves(schema.fields, row.value as Record<string, unknown>, []).length > 0)
      .chain(({ row, schema }) => {
        const all = leaves(schema.fields, row.value as Record<string, unknown>, [])
        return fc.constantFrom(...all).chain((leaf) =>
          fc.constantFrom(...invalid[leaf.type]).map((bad) => ({ schema, row: setAt(row.value, leaf.path, bad), leaf }))
        )
      })
    fc.assert(
      fc.property(withInvalid, ({ leaf, row, schema }) => {
        const result = encode(schema, row)
        assert.instanceOf(result, EncodeFailure)
        assert.strictEqual((result as EncodeFailure).path, renderPath(leaf.path))
      }),
      { numRuns: 500 }
    )
  })

  it("names nested paths like items[2].price", () => {
    const schema: TableSchema.TableSchema = {
      fields: [{
        name: "items",
        type: "RECORD",
        mode: "REPEATED",
        fields: [{ name: "price", type: "NUMERIC", mode: "REQUIRED" }]
      }]
    }
    const result = encode(schema, { items: [{ price: "1" }, { price: "2.5" }, { price: "1e3" }] })
    assert.instanceOf(result, EncodeFailure)
    assert.strictEqual((result as EncodeFailure).path, "items[2].price")
    assert.strictEqual((result as EncodeFailure).message, "NUMERIC must be a decimal like -12.5, was '1e3'")
  })

  it("refuses missing REQUIRED values, NULL array elements, non-objects and unknown keys", () => {
    const schema: TableSchema.TableSchema = {
      fields: [
        { name: "id", type: "INT64", mode: "REQUIRED" },
        { name: "tags", type: "STRING", mode: "REPEATED" },
        { name: "rec", type: "RECORD", mode: "NULLABLE", fields: [{ name: "x", type: "BOOL", mode: "REQUIRED" }] }
      ]
    }
    const failure = (row: unknown, reject = true) => {
      const r = encode(schema, row, reject)
      return r instanceof EncodeFailure ? `${r.path}: ${r.message}` : "ok"
    }
    assert.strictEqual(failure({}), "id: is REQUIRED but missing")
    assert.strictEqual(failure({ id: null }), "id: is REQUIRED but missing")
    assert.strictEqual(failure({ id: 1, tags: ["a", null] }), "tags[1]: an array element cannot be NULL")
    assert.strictEqual(failure({ id: 1, tags: "a" }), "tags: a REPEATED column takes an array, was 'a'")
    assert.strictEqual(failure({ id: 1, rec: {} }), "rec.x: is REQUIRED but missing")
    assert.strictEqual(failure({ id: 1, rec: [] }), "rec: a RECORD takes an object, was an array")
    assert.strictEqual(failure({ id: 1, extra: 2 }), "extra: is not a column of the table schema")
    assert.strictEqual(failure({ id: 1, extra: 2 }, false), "ok")
    assert.strictEqual(failure({ id: 1, extra: undefined }), "ok")
    assert.strictEqual(failure("row"), ": a row must be an object, was 'row'")
    assert.strictEqual(failure({ id: 1, tags: null }), "ok")
  })

  it("writes negative int64 as ten-byte two's complement and DATE as sign-extended int32", () => {
    const schema: TableSchema.TableSchema = {
      fields: [{ name: "i", type: "INT64", mode: "REQUIRED" }, { name: "d", type: "DATE", mode: "REQUIRED" }]
    }
    const bytes = encode(schema, { i: -1, d: -1 }) as Uint8Array
    assert.deepStrictEqual(Array.from(bytes), [8, ...Array(9).fill(255), 1, 16, ...Array(9).fill(255), 1])
  })

  it("accepts the TIMESTAMP and DATE range bounds exactly", () => {
    const schema: TableSchema.TableSchema = {
      fields: [{ name: "t", type: "TIMESTAMP", mode: "REQUIRED" }, { name: "d", type: "DATE", mode: "REQUIRED" }]
    }
    const decoder = decoderOf(encodeDescriptor(toDescriptor(schema)))
    const ok = (t: unknown, d: unknown) => decodeRow(decoder, encode(schema, { t, d }) as Uint8Array)
    assert.deepStrictEqual(ok("0001-01-01T00:00:00Z", "0001-01-01"), { t: "-62135596800000000", d: -719162 })
    assert.deepStrictEqual(ok("9999-12-31T23:59:59.999999Z", "9999-12-31"), { t: "253402300799999999", d: 2932896 })
    assert.deepStrictEqual(ok("1970-01-01T01:00:00.5+01:00", 0), { t: "500000", d: 0 })
    assert.deepStrictEqual(ok(new Date(-1), new Date(0)), { t: "-1000", d: 0 })
    assert.instanceOf(encode(schema, { t: "0000-12-31T23:59:59.999999Z", d: 0 }), EncodeFailure)
    assert.instanceOf(encode(schema, { t: "0001-01-01T00:00:00+00:01", d: 0 }), EncodeFailure)
    assert.instanceOf(encode(schema, { t: -62135596800000001n, d: 0 }), EncodeFailure)
  })

  it("keeps FLOAT64 NaN, infinities and negative zero", () => {
    const schema: TableSchema.TableSchema = { fields: [{ name: "f", type: "FLOAT64", mode: "REPEATED" }] }
    const decoder = decoderOf(encodeDescriptor(toDescriptor(schema)))
    const values = [Number.NaN, Infinity, -Infinity, -0, 5e-324]
    assert.deepStrictEqual(decodeRow(decoder, encode(schema, { f: values }) as Uint8Array), { f: values })
  })

  it("widens the length prefix of nested messages longer than 127 bytes", () => {
    const schema: TableSchema.TableSchema = {
      fields: [{
        name: "r",
        type: "RECORD",
        mode: "REQUIRED",
        fields: [{ name: "s", type: "STRING", mode: "REQUIRED" }]
      }]
    }
    const decoder = decoderOf(encodeDescriptor(toDescriptor(schema)))
    for (const n of [0, 125, 126, 127, 200, 20_000]) {
      const s = "é".repeat(n)
      assert.deepStrictEqual(decodeRow(decoder, encode(schema, { r: { s } }) as Uint8Array), { r: { s } })
    }
  })

  it("appends rows to a shared writer and rolls a failed row back", () => {
    const schema: TableSchema.TableSchema = { fields: [{ name: "n", type: "INT64", mode: "REQUIRED" }] }
    const row = compile(schema, { rejectUnknownFields: false })
    const w = new WireWriter(1)
    assert.isUndefined(row.encodeInto(w, { n: 300 }))
    assert.instanceOf(row.encodeInto(w, { n: "x" }), EncodeFailure)
    assert.isUndefined(row.encodeInto(w, { n: 1 }))
    assert.deepStrictEqual(Array.from(w.take(0)), [8, 172, 2, 8, 1])
  })

  it("generated field walks encode and refuse exactly as the plain loop", () => {
    const validRow = schemaWithRow.map(({ row, schema }) => ({ schema, row: row.value }))
    // a column replaced: by a value of the wrong kind, or a scalar's own refusals
    const invalidColumn = schemaWithRow.chain(({ row, schema }) =>
      fc.constantFrom(...schema.fields).chain((field) =>
        fc.constantFrom<unknown>(null, "x", 1.5, true, [], {}, ...invalidFor(field)).map((bad) => ({
          schema,
          row: { ...(row.value as Record<string, unknown>), [field.name]: bad }
        }))
      )
    )
    // a scalar anywhere in the row (inside RECORDs, REPEATED elements, RANGE bounds) refused
    const invalidLeaf = schemaWithRow
      .filter(({ row, schema }) => leaves(schema.fields, row.value as Record<string, unknown>, []).length > 0)
      .chain(({ row, schema }) =>
        fc.constantFrom(...leaves(schema.fields, row.value as Record<string, unknown>, [])).chain((leaf) =>
          fc.constantFrom(...invalid[leaf.type]).map((bad) => ({ schema, row: setAt(row.value, leaf.path, bad) }))
        )
      )
    fc.assert(
      fc.property(
        fc.oneof(validRow, invalidColumn, invalidLeaf),
        fc.boolean(),
        ({ row, schema }, rejectUnknownFields) => {
          const generated = compile(schema, { rejectUnknownFields }).serialize(row)
          const plain = compile(schema, { rejectUnknownFields, generate: false }).serialize(row)
          assert.deepStrictEqual(outcome(generated), outcome(plain))
        }
      ),
      { numRuns: 300 }
    )
  })

  it("writes the two-byte keys of fields 16 and later in a generated field walk", () => {
    const columns = [
      { type: "STRING", value: "s", decoded: "s" },
      { type: "INT64", value: 300, decoded: "300" },
      { type: "FLOAT64", value: 1.5, decoded: 1.5 },
      { type: "BOOL", value: true, decoded: true },
      { type: "TIMESTAMP", value: new Date(Date.UTC(2024, 0, 1)), decoded: String(Date.UTC(2024, 0, 1) * 1000) }
    ] as const
    const at = (i: number) => columns[i % columns.length] ?? columns[0]
    const schema: TableSchema.TableSchema = {
      fields: Array.from({ length: 20 }, (_, i) => ({ name: `c${i}`, type: at(i).type, mode: "NULLABLE" }))
    }
    const row = Object.fromEntries(schema.fields.map((f, i) => [f.name, at(i).value]))
    const generated = encode(schema, row)
    assert.deepStrictEqual(
      outcome(generated),
      outcome(compile(schema, { rejectUnknownFields: true, generate: false }).serialize(row))
    )
    assert.deepStrictEqual(
      decodeRow(decoderOf(encodeDescriptor(toDescriptor(schema))), generated as Uint8Array),
      Object.fromEntries(schema.fields.map((f, i) => [f.name, at(i).decoded]))
    )
  })

  it("embeds any field name in generated code as a string literal", () => {
    const names = ["a\"b", "c\\d", "e\u2028f", "`${g}`", "h'); throw 1; ('", "constructor", "__proto__x"]
    const schema: TableSchema.TableSchema = {
      fields: names.map((name) => ({ name, type: "INT64", mode: "REQUIRED" }))
    }
    const row = Object.fromEntries(names.map((name, i) => [name, i]))
    const generated = encode(schema, row)
    assert.deepStrictEqual(generated, compile(schema, { rejectUnknownFields: true, generate: false }).serialize(row))
    const missing = encode(schema, { ...row, [names[1]!]: undefined })
    assert.instanceOf(missing, EncodeFailure)
    assert.strictEqual((missing as EncodeFailure).path, names[1])
  })

  it("has a refusal for every scalar type", () => {
    assert.deepStrictEqual(Object.keys(invalid).toSorted(), [...scalarTypes].toSorted())
  })
})
