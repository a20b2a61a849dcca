/**
 * Rows as Avro (reference 2.8 type mapping): the schema of every supported column type, rows of the
 * JSON serializer converted and read back through an Avro container, refusals for RANGE and
 * flexible names, and row-level failures for what cannot be converted.
 */
import { assert, describe, it } from "@effect/vitest"
import * as avro from "avsc"
import { Effect } from "effect"
import { RowSerializer, TableDestination, TableSchema } from "../../../../src/BigQuery/index.ts"
import * as Avro from "../../../../src/internal/bigquery/fileLoads/avro.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })

export const everyType: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "s", type: "STRING" }),
    TableSchema.field({ name: "b", type: "BYTES" }),
    TableSchema.field({ name: "f", type: "FLOAT64" }),
    TableSchema.field({ name: "ok", type: "BOOL" }),
    TableSchema.field({ name: "ts", type: "TIMESTAMP" }),
    TableSchema.field({ name: "d", type: "DATE" }),
    TableSchema.field({ name: "t", type: "TIME" }),
    TableSchema.field({ name: "dt", type: "DATETIME" }),
    TableSchema.field({ name: "n", type: "NUMERIC" }),
    TableSchema.field({ name: "bn", type: "BIGNUMERIC" }),
    TableSchema.field({ name: "j", type: "JSON" }),
    TableSchema.field({ name: "g", type: "GEOGRAPHY" }),
    TableSchema.field({ name: "tags", type: "STRING", mode: "REPEATED" }),
    TableSchema.record({
      name: "addr",
      fields: [
        TableSchema.field({ name: "city", type: "STRING" }),
        TableSchema.field({ name: "zip", type: "INT64", mode: "REPEATED" })
      ]
    })
  ]
}

const convert = (schema: TableSchema.TableSchema, row: unknown) =>
  Effect.gen(function*() {
    const serializer = yield* RowSerializer.fromJson(schema)
    const bytes = serializer.serialize(row, table)
    if (!(bytes instanceof Uint8Array)) return assert.fail(`serialize: ${String(bytes)}`)
    return Avro.converter(schema, RowSerializer.descriptorOf(serializer, table)).convert(bytes)
  })

describe("fileLoads avro", () => {
  it("maps every supported type as reference 2.8", () => {
    const schema = Avro.avroSchema(everyType)
    assert.notInstanceOf(schema, Avro.AvroError)
    const fields = (schema as { fields: Array<{ name: string; type: unknown }> }).fields
    const typeOf = (name: string) => fields.find((f) => f.name === name)?.type
    assert.deepStrictEqual(typeOf("id"), "long")
    assert.deepStrictEqual(typeOf("ts"), ["null", { type: "long", logicalType: "timestamp-micros" }])
    assert.deepStrictEqual(typeOf("d"), ["null", { type: "int", logicalType: "date" }])
    assert.deepStrictEqual(typeOf("t"), ["null", { type: "long", logicalType: "time-micros" }])
    assert.deepStrictEqual(typeOf("dt"), ["null", { type: "string", logicalType: "datetime" }])
    assert.deepStrictEqual(typeOf("n"), ["null", { type: "bytes", logicalType: "decimal", precision: 38, scale: 9 }])
    assert.deepStrictEqual(typeOf("bn"), ["null", { type: "bytes", logicalType: "decimal", precision: 77, scale: 38 }])
    assert.deepStrictEqual(typeOf("j"), ["null", "string"])
    assert.deepStrictEqual(typeOf("tags"), { type: "array", items: "string" })
    // avsc accepts it
    avro.Type.forSchema(schema as avro.Schema)
    Avro.avroType(schema as Avro.AvroSchema)
  })

  it("refuses RANGE and flexible column names (INTERVAL is no column type here)", () => {
    const range = Avro.avroSchema({ fields: [TableSchema.range({ name: "r", rangeElementType: "DATE" })] })
    assert.instanceOf(range, Avro.AvroError)
    const flexible = Avro.avroSchema({ fields: [TableSchema.field({ name: "a-b", type: "STRING" })] })
    assert.instanceOf(flexible, Avro.AvroError)
    assert.strictEqual(flexible instanceof Avro.AvroError && flexible.path, "a-b")
  })

  it.effect("converts a serialized row and reads it back from an Avro container", () =>
    Effect.gen(function*() {
      const row = {
        id: "42",
        s: "héllo",
        b: Uint8Array.from([1, 2, 3]),
        f: 1.5,
        ok: true,
        ts: "2026-01-02T03:04:05.123456Z",
        d: "2026-01-02",
        t: "03:04:05.5",
        dt: "2026-01-02T03:04:05.000001",
        n: "-123.45",
        bn: "1.00000000000000000000000000000000000001",
        j: "{\"a\":1}",
        g: "POINT(1 2)",
        tags: ["x", "y"],
        addr: { city: "Oslo", zip: [1, 2] }
      }
      const record = yield* convert(everyType, row)
      assert.notInstanceOf(record, Avro.AvroError)
      const type = Avro.avroType(Avro.avroSchema(everyType) as Avro.AvroSchema)
      const back = type.fromBuffer(type.toBuffer(record)) as Record<string, unknown>
      assert.strictEqual(back["id"], 42n)
      assert.strictEqual(back["s"], "héllo")
      assert.deepStrictEqual([...(back["b"] as Buffer)], [1, 2, 3])
      assert.strictEqual(back["ts"], BigInt(Date.UTC(2026, 0, 2, 3, 4, 5) * 1000 + 123_456))
      assert.strictEqual(back["d"], Date.UTC(2026, 0, 2) / 86_400_000)
      assert.strictEqual(back["t"], BigInt((3 * 3600 + 4 * 60 + 5) * 1_000_000 + 500_000))
      assert.strictEqual(back["dt"], "2026-01-02 03:04:05.000001")
      // -123.45 at scale 9 = -123450000000, two's complement big-endian
      const n = back["n"] as Buffer
      assert.strictEqual(BigInt.asIntN(n.length * 8, BigInt(`0x${n.toString("hex")}`)), -123_450_000_000n)
      const bn = back["bn"] as Buffer
      assert.strictEqual(BigInt(`0x${bn.toString("hex")}`), 10n ** 38n + 1n)
      assert.strictEqual(back["j"], "{\"a\":1}")
      assert.deepStrictEqual(back["tags"], ["x", "y"])
      assert.deepStrictEqual({ ...(back["addr"] as object) }, { city: "Oslo", zip: [1n, 2n] })
    }))

  it.effect("leaves absent NULLABLE columns null and REPEATED ones empty", () =>
    Effect.gen(function*() {
      const record = yield* convert(everyType, { id: 7 })
      assert.notInstanceOf(record, Avro.AvroError)
      const r = record as Record<string, unknown>
      assert.strictEqual(r["id"], 7n)
      assert.isNull(r["s"])
      assert.deepStrictEqual(r["tags"], [])
      assert.isNull(r["addr"])
    }))

  it("fails a row that cannot be converted, naming the column", () => {
    const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "v", type: "INT64" })] }
    const descriptor = RowSerializer.descriptorOf({ tableSchema: () => schema, serialize: () => null }, table)
    const c = Avro.converter(schema, descriptor)
    // field 1 as varint 2^60: beyond 2^53, staged exactly as a 64-bit long
    const big = c.convert(Uint8Array.from([8, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]))
    assert.deepStrictEqual(big, { v: 2n ** 60n })
    // a TIME that is not one fails its row, naming the column
    const timeSchema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "at", type: "TIME" })] }
    const timeDescriptor = RowSerializer.descriptorOf({ tableSchema: () => timeSchema, serialize: () => null }, table)
    const badTime = Avro.converter(timeSchema, timeDescriptor).convert(
      Uint8Array.from([10, 8, ...new TextEncoder().encode("25:00:00")])
    )
    assert.instanceOf(badTime, Avro.AvroError)
    assert.strictEqual(badTime instanceof Avro.AvroError && badTime.path, "at")
    const truncated = c.convert(Uint8Array.from([8]))
    assert.instanceOf(truncated, Avro.AvroError)
    const required = Avro.converter(
      { fields: [TableSchema.field({ name: "v", type: "INT64", mode: "REQUIRED" })] },
      descriptor
    ).convert(new Uint8Array())
    assert.isTrue(required instanceof Avro.AvroError && /REQUIRED/.test(required.reason))
  })
})

/** The `avro.schema` of a container written with the staged type: what BigQuery reads the file as. */
const headerOf = (type: avro.Type, record: unknown) =>
  Effect.callback<Record<string, unknown>>((resume) => {
    const chunks: Array<Buffer> = []
    const encoder = new avro.streams.BlockEncoder(type, { codec: "deflate" })
    encoder.on("data", (chunk: Buffer) => void chunks.push(chunk))
    encoder.on("end", () => {
      const decoder = new avro.streams.BlockDecoder()
      decoder.on("metadata", (_type: avro.Type, _codec: string, header: { meta: Record<string, Buffer> }) => {
        resume(Effect.succeed(JSON.parse(String(header.meta["avro.schema"])) as Record<string, unknown>))
      })
      decoder.on("data", () => undefined)
      decoder.end(Buffer.concat(chunks))
    })
    encoder.end(record)
  })

describe("fileLoads avro: the staged file", () => {
  it.effect("carries the logical types in its header (BigQuery maps columns from them)", () =>
    Effect.gen(function*() {
      const schema = Avro.avroSchema(everyType)
      assert.notInstanceOf(schema, Avro.AvroError)
      const record = yield* convert(everyType, { id: 1 })
      assert.notInstanceOf(record, Avro.AvroError)
      const header = yield* headerOf(Avro.avroType(schema as Avro.AvroSchema), record)
      const fields = header["fields"] as Array<{ name: string; type: unknown }>
      const typeOf = (name: string) => fields.find((f) => f.name === name)?.type
      assert.deepStrictEqual(typeOf("ts"), ["null", { type: "long", logicalType: "timestamp-micros" }])
      assert.deepStrictEqual(typeOf("d"), ["null", { type: "int", logicalType: "date" }])
      assert.deepStrictEqual(typeOf("t"), ["null", { type: "long", logicalType: "time-micros" }])
      assert.deepStrictEqual(typeOf("dt"), ["null", { type: "string", logicalType: "datetime" }])
      assert.deepStrictEqual(typeOf("n"), ["null", { type: "bytes", logicalType: "decimal", precision: 38, scale: 9 }])
      assert.deepStrictEqual(typeOf("bn"), ["null", {
        type: "bytes",
        logicalType: "decimal",
        precision: 77,
        scale: 38
      }])
    }))

  it.effect("stages INT64 and TIMESTAMP beyond 2^53 exactly: snowflake ids, BigQuery's min and max TIMESTAMP", () =>
    Effect.gen(function*() {
      const schema: TableSchema.TableSchema = {
        fields: [
          TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
          TableSchema.field({ name: "ids", type: "INT64", mode: "REPEATED" }),
          TableSchema.field({ name: "lo", type: "TIMESTAMP" }),
          TableSchema.field({ name: "hi", type: "TIMESTAMP" }),
          TableSchema.field({ name: "dt", type: "DATETIME" })
        ]
      }
      const avroSchema = Avro.avroSchema(schema)
      assert.notInstanceOf(avroSchema, Avro.AvroError)
      const type = Avro.avroType(avroSchema as Avro.AvroSchema)
      const record = yield* convert(schema, {
        id: "9223372036854775807",
        ids: ["-9223372036854775808", "1152921504606846977"],
        lo: "0001-01-01T00:00:00Z",
        hi: "9999-12-31T23:59:59.999999Z",
        dt: "9999-12-31T23:59:59.999999"
      })
      assert.notInstanceOf(record, Avro.AvroError)
      const back = type.fromBuffer(type.toBuffer(record)) as Record<string, unknown>
      assert.strictEqual(back["id"], 9_223_372_036_854_775_807n)
      assert.deepStrictEqual(back["ids"], [-9_223_372_036_854_775_808n, 1_152_921_504_606_846_977n])
      assert.strictEqual(back["lo"], -62_135_596_800_000_000n)
      assert.strictEqual(back["hi"], 253_402_300_799_999_999n)
      assert.strictEqual(back["dt"], "9999-12-31 23:59:59.999999")
    }))
})
