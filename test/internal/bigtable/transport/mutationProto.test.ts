import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { createRequire } from "node:module"
import protobuf from "protobufjs"
import { Mutation, RowMutationEntry } from "../../../../src/Bigtable/index.ts"
import { requestParams } from "../../../../src/internal/bigtable/transport/client.ts"
import * as proto from "../../../../src/internal/bigtable/transport/mutationProto.ts"
import { ok, readResponse } from "../../../../src/internal/bigtable/transport/responseProto.ts"

// The reference encoder: protobufjs over the protos shipped with the Bigtable client.
const require = createRequire(import.meta.url)
const json = require("@google-cloud/bigtable-api/build/protos/protos.json") as protobuf.INamespace
const root = protobuf.Root.fromJSON(json)
const Entry = root.lookupType("google.bigtable.v2.MutateRowsRequest.Entry")
const Request = root.lookupType("google.bigtable.v2.MutateRowsRequest")
const Response = root.lookupType("google.bigtable.v2.MutateRowsResponse")

// The reference object form: the plain objects the gapic client serialized before ADR 0008.
const int64Field = (v: bigint): number | string =>
  v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v.toString()
const toProtoMutation = (m: Mutation.Mutation): object => {
  switch (m._tag) {
    case "SetCell":
      return {
        setCell: {
          familyName: m.family,
          columnQualifier: m.qualifier,
          timestampMicros: m.timestampMicros ?? -1,
          value: m.value
        }
      }
    case "DeleteFromColumn":
      return {
        deleteFromColumn: m.startTimestampMicros === undefined && m.endTimestampMicros === undefined
          ? { familyName: m.family, columnQualifier: m.qualifier }
          : {
            familyName: m.family,
            columnQualifier: m.qualifier,
            timeRange: {
              startTimestampMicros: m.startTimestampMicros ?? 0,
              endTimestampMicros: m.endTimestampMicros ?? 0
            }
          }
      }
    case "DeleteFromFamily":
      return { deleteFromFamily: { familyName: m.family } }
    case "DeleteFromRow":
      return { deleteFromRow: {} }
    case "AddToCell":
    case "MergeToCell":
      return {
        [m._tag === "AddToCell" ? "addToCell" : "mergeToCell"]: {
          familyName: m.family,
          columnQualifier: { rawValue: m.qualifier },
          timestamp: { rawTimestampMicros: m.timestampMicros },
          input: typeof m.input === "bigint" ? { intValue: int64Field(m.input) } : { rawValue: m.input }
        }
      }
  }
}
const toProtoEntry = (entry: RowMutationEntry.RowMutationEntry) => ({
  rowKey: entry.rowKey,
  mutations: entry.mutations.map(toProtoMutation)
})

const Bytes = Schema.Uint8Array
const Micros = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 9_007_199_254_740_991 }))
const Int64 = Schema.BigInt.check(Schema.isBetweenBigInt({ minimum: -(2n ** 63n), maximum: 2n ** 63n - 1n }))
// Bigtable family names are [-_.a-zA-Z0-9]+ (lone surrogates would encode differently in any two UTF-8 encoders).
const Family = Schema.String.check(Schema.isPattern(/^[-_.a-zA-Z0-9]{1,20}$/))

const AnyMutation = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("set"), family: Family, q: Bytes, v: Bytes, ts: Schema.UndefinedOr(Micros) }),
  Schema.Struct({ kind: Schema.Literal("delCol"), family: Family, q: Bytes, start: Schema.UndefinedOr(Micros) }),
  Schema.Struct({ kind: Schema.Literal("delFam"), family: Family }),
  Schema.Struct({ kind: Schema.Literal("delRow") }),
  Schema.Struct({ kind: Schema.Literal("add"), family: Family, q: Bytes, ts: Micros, input: Int64 }),
  Schema.Struct({ kind: Schema.Literal("merge"), family: Family, q: Bytes, ts: Micros, input: Bytes })
])

const build = (m: typeof AnyMutation.Type): Mutation.Mutation => {
  switch (m.kind) {
    case "set":
      return Mutation.setCell({ family: m.family, qualifier: m.q, value: m.v, timestampMicros: m.ts })
    case "delCol":
      return Mutation.deleteFromColumn({ family: m.family, qualifier: m.q, startTimestampMicros: m.start })
    case "delFam":
      return Mutation.deleteFromFamily({ family: m.family })
    case "delRow":
      return Mutation.deleteFromRow()
    case "add":
      return Mutation.addToCell({ family: m.family, qualifier: m.q, timestampMicros: m.ts, input: m.input })
    case "merge":
      return Mutation.mergeToCell({ family: m.family, qualifier: m.q, timestampMicros: m.ts, input: m.input })
  }
}

const toJson = (bytes: Uint8Array) =>
  Entry.toObject(Entry.decode(bytes), { longs: String, bytes: String, defaults: false })

describe("mutationProto", () => {
  it.prop("the hand-written encoder matches protobufjs, and byteSize is its exact length", [
    Bytes,
    Schema.Array(AnyMutation)
  ], ([rowKey, mutations]) => {
    const entry = RowMutationEntry.make(rowKey, mutations.map(build))
    const ours = proto.encodeEntry(entry)
    assert.strictEqual(ours.length, proto.entryByteSize(entry))
    const reference = Entry.encode(Entry.fromObject(toProtoEntry(entry))).finish()
    assert.strictEqual(JSON.stringify(toJson(ours)), JSON.stringify(toJson(reference)))
  })

  it.prop("a non-negative safe integer is written as its BigInt would be, across the 2^31 and 2^32 edges", [
    Schema.Union([
      Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
      Schema.Literals([0, 127, 128, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER])
    ])
  ], ([v]) => {
    const fast = new proto.Out(new Uint8Array(16), 0)
    fast.uint(v)
    const reference = new proto.Out(new Uint8Array(16), 0)
    reference.varint(BigInt(v))
    assert.deepStrictEqual([...fast.buf.subarray(0, fast.pos)], [...reference.buf.subarray(0, reference.pos)])
  })

  it.prop("a negative safe integer is written as its BigInt would be (ten bytes), without a BigInt", [
    Schema.Int.check(Schema.isBetween({ minimum: Number.MIN_SAFE_INTEGER, maximum: -1 }))
  ], ([v]) => {
    const fast = new proto.Out(new Uint8Array(16), 0)
    fast.int(3, v)
    const reference = new proto.Out(new Uint8Array(16), 0)
    reference.buf[reference.pos++] = 3 << 3
    reference.varint(BigInt(v))
    assert.deepStrictEqual([...fast.buf.subarray(0, fast.pos)], [...reference.buf.subarray(0, reference.pos)])
    assert.strictEqual(fast.pos, 11)
  })

  it("encodes values: text as UTF-8, bigint as 8-byte big-endian", () => {
    assert.deepStrictEqual([...proto.value("é")], [0xc3, 0xa9])
    assert.deepStrictEqual([...proto.value(-2n)], [255, 255, 255, 255, 255, 255, 255, 254])
    assert.throws(() => proto.value(2n ** 63n))
    assert.throws(() => proto.int64(1.5))
    assert.throws(() => proto.timestamp("t", -5))
    assert.throws(() => proto.family(""))
  })

  it("a SetCell without a timestamp asks for the server's time (-1)", () => {
    const bytes = proto.encodeEntry(
      RowMutationEntry.make("k", Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }))
    )
    assert.strictEqual(toJson(bytes).mutations[0].setCell.timestampMicros, "-1")
  })

  it("a malformed entry throws when measured, instead of encoding garbage later", () => {
    const malformed: ReadonlyArray<unknown> = [
      { rowKey: new Uint8Array([1]), mutations: [{ ...Mutation.deleteFromFamily({ family: "cf" }), family: 7 }] },
      { rowKey: "k", mutations: [] },
      {
        rowKey: new Uint8Array([1]),
        mutations: [{ ...Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }), value: "v" }]
      },
      { rowKey: new Uint8Array([1]), mutations: [{ _tag: "Nonsense" }] }
    ]
    for (const entry of malformed) {
      assert.throws(() => proto.entryByteSize(entry as RowMutationEntry.RowMutationEntry))
      assert.throws(() => proto.encodeEntry(entry as RowMutationEntry.RowMutationEntry))
    }
  })

  it.prop("a framed MutateRowsRequest decodes with protobufjs to the table, profile and entries", [
    Schema.Array(Schema.Tuple([Bytes, Schema.Array(AnyMutation)])),
    // App profile ids are [_a-zA-Z0-9][-_.a-zA-Z0-9]* (lone surrogates differ between UTF-8 encoders).
    Schema.UndefinedOr(Schema.String.check(Schema.isPattern(/^[-_.a-zA-Z0-9]{0,30}$/)))
  ], ([rows, appProfileId]) => {
    const tableName = "projects/p/instances/i/tables/t\u00e9"
    const entries = rows.map(([key, ms]) => RowMutationEntry.make(key, ms.map(build)))
    const bytes = proto.encodeRequest(tableName, appProfileId, entries, entries.map(proto.entryByteSize))
    const decoded = Request.toObject(Request.decode(bytes), { longs: String, bytes: String, defaults: false })
    const reference = Request.toObject(
      Request.decode(
        Request.encode(Request.fromObject({
          tableName,
          ...(appProfileId === undefined || appProfileId === "" ? {} : { appProfileId }),
          entries: entries.map(toProtoEntry)
        })).finish()
      ),
      { longs: String, bytes: String, defaults: false }
    )
    assert.strictEqual(JSON.stringify(decoded), JSON.stringify(reference))
    // the sink's items carry their entries and sizes: the same bytes, with the same reserve left free
    const sized = entries.map((entry) => ({ entry, bytes: proto.entryByteSize(entry) }))
    assert.deepStrictEqual(proto.encodeSized(tableName, appProfileId, sized), bytes)
    // the reserved bytes are left as they were (the transport writes the prefix there)
    const reserved = proto.encodeSized(tableName, appProfileId, sized, 5)
    assert.deepStrictEqual([reserved.length, reserved.subarray(5)], [bytes.length + 5, bytes])
    const reservedToo = proto.encodeRequest(tableName, appProfileId, entries, sized.map((s) => s.bytes), 5)
    assert.deepStrictEqual(reservedToo.subarray(5), bytes)
  })

  it("families that alternate between entries each encode as their own (the last family's bytes are kept)", () => {
    const entries = ["cf", "cg", "cf", "cf", "a.long-family_name", "cg"].map((family, i) =>
      RowMutationEntry.make(`k${i}`, [
        Mutation.setCell({ family, qualifier: "q", value: "v", timestampMicros: i }),
        Mutation.deleteFromFamily({ family: i % 2 === 0 ? "cg" : "cf" })
      ])
    )
    for (const entry of entries) {
      const reference = Entry.encode(Entry.fromObject(toProtoEntry(entry))).finish()
      assert.deepStrictEqual(proto.encodeEntry(entry), new Uint8Array(reference))
    }
  })

  it("a SetCell made malformed after it was measured throws when encoded, naming the field", () => {
    const cell = Mutation.setCell({ family: "cf", qualifier: "q", value: "v" })
    const entry = RowMutationEntry.make("k", [cell])
    const bytes = proto.entryByteSize(entry)
    const broken = { ...entry, mutations: [{ ...cell, value: "v" }] } as unknown as RowMutationEntry.RowMutationEntry
    assert.throws(() => proto.encodeSized("t", undefined, [{ entry: broken, bytes }]), /value must be a Uint8Array/)
    const noKey = { ...entry, rowKey: "k" } as unknown as RowMutationEntry.RowMutationEntry
    assert.throws(() => proto.encodeSized("t", undefined, [{ entry: noKey, bytes }]), /rowKey must be a Uint8Array/)
  })

  it("an entry whose measured size is wrong throws instead of framing garbage", () => {
    const entry = RowMutationEntry.make("k", [Mutation.setCell({ family: "cf", qualifier: "q", value: "v" })])
    const size = proto.entryByteSize(entry)
    assert.throws(() => proto.encodeSized("t", undefined, [{ entry, bytes: size + 1 }]), /entry 0 encoded to/)
    assert.throws(() => proto.encodeRequest("t", undefined, [entry], [size - 1]), /entry 0 encoded to/)
  })

  it("reads MutateRowsResponse statuses by index, skipping fields it does not use", () => {
    const bytes = Response.encode(Response.fromObject({
      entries: [
        { index: 2, status: { code: 3, message: "bad row", details: [{ type_url: "x", value: Buffer.from("y") }] } },
        { index: 0, status: {} },
        { index: 1 },
        { index: 7, status: { code: 14 } }
      ],
      rateLimitInfo: { period: { seconds: 1 }, factor: 0.5 }
    })).finish()
    const statuses: Array<{ code: number | undefined; message: string } | undefined> = [
      undefined,
      undefined,
      undefined
    ]
    readResponse(bytes, statuses)
    assert.deepStrictEqual(statuses, [ok, ok, { code: 3, message: "bad row" }])
    assert.throws(() => readResponse(bytes.subarray(0, bytes.length - 3), [undefined, undefined, undefined]))
  })

  it("routes by table and app profile as gax does (querystring escaping)", () => {
    assert.strictEqual(
      requestParams("projects/p/instances/i/tables/t", "prof 1"),
      "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id=prof%201"
    )
    assert.strictEqual(
      requestParams("projects/p/instances/i/tables/t", undefined),
      "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft"
    )
  })
})
