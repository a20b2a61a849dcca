import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { createRequire } from "node:module"
import protobuf from "protobufjs"
import { Mutation, RowMutationEntry } from "../../../src/Bigtable/index.ts"
import * as proto from "../../../src/internal/bigtable/mutationProto.ts"

// The reference encoder: protobufjs over the protos shipped with the Bigtable client.
const require = createRequire(import.meta.url)
const json = require("@google-cloud/bigtable-api/build/protos/protos.json") as protobuf.INamespace
const Entry = protobuf.Root.fromJSON(json).lookupType("google.bigtable.v2.MutateRowsRequest.Entry")

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
    const reference = Entry.encode(Entry.fromObject(proto.toProtoEntry(entry))).finish()
    assert.strictEqual(JSON.stringify(toJson(ours)), JSON.stringify(toJson(reference)))
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
    const m = proto.toProtoMutation(Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }))
    assert.strictEqual(m.setCell?.timestampMicros, -1)
  })
})
