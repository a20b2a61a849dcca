import { assert, describe, it } from "@effect/vitest"
import { BigDecimal, DateTime, Effect, Schema } from "effect"
import protobuf from "protobufjs"
import * as BigQueryType from "../../src/BigQuery/BigQueryType.ts"
import * as RowSerializer from "../../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../../src/BigQuery/TableDestination.ts"
import * as TableSchema from "../../src/BigQuery/TableSchema.ts"
import { encodeDescriptor } from "../../src/internal/bigquery/encoding/descriptor.ts"
import { WireWriter } from "../../src/internal/bigquery/encoding/wireWriter.ts"
import { decoderOf, decodeRow } from "./arbitraries.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })

const Order = Schema.Struct({
  id: Schema.BigInt,
  seq: Schema.Int,
  placed: Schema.Date,
  shipped: Schema.optional(Schema.DateTimeUtc),
  total: Schema.BigDecimal,
  note: Schema.NullOr(Schema.String),
  items: Schema.Array(Schema.Struct({ sku: Schema.String, qty: Schema.Int })),
  day: Schema.String.pipe(BigQueryType.annotate("DATE")),
  doc: Schema.Json
})

describe("RowSerializer", () => {
  it.effect("fromSchema encodes decoded values that protobufjs reads back with the serializer's descriptor", () =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromSchema(Order)
      const decoder = decoderOf(TableSchema.toDescriptorBytes(serializer.tableSchema(table)))
      const row = serializer.serialize({
        id: -(2n ** 63n),
        seq: 7,
        placed: new Date("2024-05-06T07:08:09.123Z"),
        shipped: DateTime.makeUnsafe("2024-05-07T00:00:00Z"),
        total: BigDecimal.fromStringUnsafe("12.50"),
        note: null,
        items: [{ sku: "a", qty: 1 }],
        day: "2024-05-06",
        doc: { a: [1, "x"] }
      }, table)
      assert.instanceOf(row, Uint8Array)
      assert.deepStrictEqual(decodeRow(decoder, row as Uint8Array), {
        id: "-9223372036854775808",
        seq: "7",
        placed: "1714979289123000",
        shipped: "1715040000000000",
        total: "12.50",
        items: [{ sku: "a", qty: "1" }],
        day: 19849,
        doc: "{\"a\":[1,\"x\"]}"
      })
    }))

  it.effect("fromSchema routes invalid values as RowSerializationError with the path", () =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromSchema(Order)
      const result = serializer.serialize({
        id: 1n,
        seq: 1,
        placed: new Date(0),
        total: BigDecimal.fromStringUnsafe("1"),
        note: "n",
        items: [{ sku: "a", qty: 1 }, { sku: "b", qty: 1.5 }],
        day: "2024-05-06",
        doc: 1
      }, table)
      assert.isTrue(RowSerializer.isRowSerializationError(result))
      if (!RowSerializer.isRowSerializationError(result)) return
      assert.strictEqual(result.path, "items[1].qty")
      assert.strictEqual(
        result.message,
        "items[1].qty: INT64 takes an integer, was 1.5 (not an integer)"
      )
    }))

  it.effect("fromJson checks plain objects against a validated schema", () =>
    Effect.gen(function*() {
      const schema = { fields: [TableSchema.field({ name: "price", type: "NUMERIC", mode: "REQUIRED" })] }
      const serializer = yield* RowSerializer.fromJson(schema)
      assert.strictEqual(
        String(serializer.serialize({ price: "1.0000000001" }, table)),
        "RowSerializationError: price: NUMERIC takes at most 9 fractional digits, was '1.0000000001'"
      )
      assert.strictEqual(
        String(serializer.serialize({ price: "1", other: 1 }, table)),
        "RowSerializationError: other: is not a column of the table schema"
      )
      const lenient = yield* RowSerializer.fromJson(schema, { ignoreUnknownFields: true })
      assert.instanceOf(lenient.serialize({ price: "1", other: 1 }, table), Uint8Array)
      const error = yield* Effect.flip(
        RowSerializer.fromJson({ fields: [TableSchema.field({ name: "", type: "STRING" })] })
      )
      assert.strictEqual(error.path, "schema.fields[0].name")
    }))

  it.effect("proto serializes protobufjs messages with their own field numbers", () =>
    Effect.gen(function*() {
      const root = protobuf.parse(`
        syntax = "proto2";
        message Item { required string sku = 3; }
        message Event { required int64 id = 5; optional string name = 2; repeated Item items = 9; optional sint32 delta = 1; }
      `).root
      const Event = root.lookupType("Event")
      const serializer = yield* RowSerializer.proto(Event)
      assert.deepStrictEqual(serializer.tableSchema(table), {
        fields: [
          { name: "id", type: "INT64", mode: "REQUIRED" },
          { name: "name", type: "STRING", mode: "NULLABLE" },
          {
            name: "items",
            type: "RECORD",
            mode: "REPEATED",
            fields: [{ name: "sku", type: "STRING", mode: "REQUIRED" }]
          },
          { name: "delta", type: "INT64", mode: "NULLABLE" }
        ]
      })
      const descriptor = RowSerializer.descriptorOf(serializer, table)
      const bytes = serializer.serialize({ id: 42, name: "x", items: [{ sku: "s" }], delta: -3 }, table)
      assert.instanceOf(bytes, Uint8Array)
      assert.deepStrictEqual(decodeRow(decoderOf(encodeDescriptor(descriptor)), bytes as Uint8Array), {
        id: "42",
        name: "x",
        items: [{ sku: "s" }],
        delta: -3
      })
      assert.strictEqual(RowSerializer.isRowSerializationError(serializer.serialize({ name: "no id" }, table)), true)
      const bad = protobuf.parse(`syntax = "proto3"; message M { uint64 big = 1; }`).root.lookupType("M")
      const error = yield* Effect.flip(RowSerializer.proto(bad))
      assert.strictEqual(error.path, "messageType.big")
    }))
})

describe("RowSerializer.encodeInto", () => {
  const Event = Schema.Struct({ id: Schema.Int, name: Schema.String, tags: Schema.Array(Schema.String) })

  it.effect("writes what serialize returns, after the bytes already in a sink's batch buffer", () =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromSchema(Event)
      const encodeInto = serializer.encodeInto
      assert.isDefined(encodeInto)
      if (encodeInto === undefined) return
      const events = [
        { id: 1, name: "a", tags: [] },
        { id: 2, name: "x".repeat(300), tags: ["t", "u"] },
        { id: -3, name: "é", tags: ["v"] }
      ]
      const buffer = new WireWriter(1)
      buffer.pos = 1
      buffer.buf[0] = 0xff
      for (const event of events) {
        const before = buffer.pos
        assert.isUndefined(encodeInto(buffer, event, table))
        const expected = serializer.serialize(event, table)
        assert.instanceOf(expected, Uint8Array)
        assert.deepStrictEqual(Array.from(buffer.buf.subarray(before, buffer.pos)), Array.from(expected as Uint8Array))
      }
      assert.strictEqual(buffer.buf[0], 0xff)
    }))

  it.effect("writes into any RowBuffer, and returns the failure with its path for an invalid value", () =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromSchema(Event)
      const encodeInto = serializer.encodeInto
      if (encodeInto === undefined) return assert.fail("fromSchema has encodeInto")
      let buf = new Uint8Array(0)
      const buffer: RowSerializer.RowBuffer = {
        get buf() {
          return buf
        },
        pos: 0,
        ensure: (n) => {
          if (buffer.pos + n > buf.length) {
            const next = new Uint8Array(buffer.pos + n)
            next.set(buf)
            buf = next
          }
        }
      }
      const event = { id: 7, name: "seven", tags: ["a"] }
      assert.isUndefined(encodeInto(buffer, event, table))
      assert.deepStrictEqual(
        Array.from(buf.subarray(0, buffer.pos)),
        Array.from(serializer.serialize(event, table) as Uint8Array)
      )
      const failure = encodeInto(buffer, { id: 1.5, name: "x", tags: [] }, table)
      assert.isTrue(RowSerializer.isRowSerializationError(failure))
      assert.strictEqual(RowSerializer.isRowSerializationError(failure) ? failure.path : "", "id")
    }))
})
