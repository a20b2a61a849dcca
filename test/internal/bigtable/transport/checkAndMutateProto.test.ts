import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { createRequire } from "node:module"
import protobuf from "protobufjs"
import { Mutation } from "../../../../src/Bigtable/index.ts"
import type { Envelope } from "../../../../src/internal/bigtable/exactlyOnce/envelope.ts"
import * as identity from "../../../../src/internal/bigtable/exactlyOnce/identity.ts"
import * as codec from "../../../../src/internal/bigtable/transport/checkAndMutateProto.ts"
import { encodeRequest, entryByteSize } from "../../../../src/internal/bigtable/transport/mutationProto.ts"

const require = createRequire(import.meta.url)
const root = protobuf.Root.fromJSON(
  require("@google-cloud/bigtable-api/build/protos/protos.json") as protobuf.INamespace
)
const Request = root.lookupType("google.bigtable.v2.CheckAndMutateRowRequest")
const Response = root.lookupType("google.bigtable.v2.CheckAndMutateRowResponse")
const MutateRowsRequest = root.lookupType("google.bigtable.v2.MutateRowsRequest")

interface Decoded {
  tableName?: string
  appProfileId?: string
  rowKey?: Uint8Array
  predicateFilter?: {
    columnRangeFilter?: {
      familyName?: string
      startQualifierClosed?: Uint8Array
      endQualifierClosed?: Uint8Array
    }
  }
  trueMutations?: Array<unknown>
  falseMutations?: Array<unknown>
}

const decode = (buf: Uint8Array): Decoded =>
  Request.toObject(Request.decode(buf), { longs: String, defaults: false }) as Decoded

// the user's mutations as protobufjs decodes them from an equivalent MutateRows entry
const reference = (mutations: ReadonlyArray<Mutation.Mutation>): Array<unknown> => {
  const entry = { rowKey: new Uint8Array([1]), mutations }
  const bytes = encodeRequest("t", undefined, [entry], [entryByteSize(entry)])
  const decoded = MutateRowsRequest.toObject(MutateRowsRequest.decode(bytes), { longs: String, defaults: false }) as {
    entries: Array<{ mutations: Array<unknown> }>
  }
  return decoded.entries[0]?.mutations ?? []
}

const family = fc.stringMatching(/^[-_.a-zA-Z0-9]{1,10}$/)
const bytes = fc.uint8Array({ maxLength: 10 })
const mutation: fc.Arbitrary<Mutation.Mutation> = fc.oneof(
  fc.record({ family, qualifier: bytes, value: bytes }).map((r) => Mutation.setCell(r)),
  fc.record({
    family,
    qualifier: bytes,
    timestampMicros: fc.nat().map((n) => n * 1000),
    input: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
  })
    .map((r) => Mutation.addToCell(r)),
  family.map((f) => Mutation.deleteFromFamily({ family: f }))
)

const envelopeArb: fc.Arbitrary<Envelope> = fc.record({
  profile: fc.option(fc.stringMatching(/^[a-z0-9-]{1,8}$/), { nil: undefined }),
  rowKey: fc.uint8Array({ minLength: 1, maxLength: 300 }),
  markerFamily: family,
  position: fc.nat(),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 5 }),
  table: fc.stringMatching(/^[a-z]{1,200}$/)
}).map((r) => ({
  tableName: `projects/p/instances/i/tables/${r.table}`,
  appProfileId: r.profile,
  rowKey: r.rowKey,
  identity: identity.derive("w", String(r.position), 0),
  markerFamily: r.markerFamily,
  mutations: r.mutations
}))

describe("checkAndMutateProto", () => {
  it("encodes what protobufjs decodes: predicate, user mutations, then the marker", () => {
    fc.assert(
      fc.property(envelopeArb, (e) => {
        const request = codec.encodeRequest(e)
        assert.strictEqual(codec.requestSize(e), request.length)
        const d = decode(request)
        assert.strictEqual(d.tableName, e.tableName)
        assert.strictEqual(d.appProfileId, e.appProfileId)
        assert.deepStrictEqual([...(d.rowKey ?? [])], [...e.rowKey])
        assert.isUndefined(d.trueMutations)
        // the predicate selects exactly the marker cell: its family, qualifier = identity
        assert.deepStrictEqual(Object.keys(d.predicateFilter ?? {}), ["columnRangeFilter"])
        const range = d.predicateFilter?.columnRangeFilter
        assert.strictEqual(range?.familyName, e.markerFamily)
        assert.strictEqual(Buffer.from(range?.startQualifierClosed ?? []).toString(), e.identity)
        assert.strictEqual(Buffer.from(range?.endQualifierClosed ?? []).toString(), e.identity)
        assert.deepStrictEqual(d.falseMutations, reference([...e.mutations, codec.marker(e)]))
      }),
      { numRuns: 200 }
    )
  })

  it("the marker is SetCell(markerFamily, identity, timestamp 0, value '1')", () => {
    const e = { markerFamily: "m", identity: identity.derive("w", "1", 0) }
    const [m] = reference([codec.marker(e)])
    assert.deepStrictEqual(m, {
      setCell: {
        familyName: "m",
        columnQualifier: Buffer.from(e.identity),
        timestampMicros: "0",
        value: Buffer.from("1")
      }
    })
  })

  it("reads predicate_matched, skipping unknown fields", () => {
    for (const matched of [true, false]) {
      const encoded = Response.encode(Response.fromObject({ predicateMatched: matched })).finish()
      assert.strictEqual(codec.readPredicateMatched(encoded), matched)
      const withUnknown = Buffer.concat([Buffer.from([0x12, 0x02, 0x61, 0x62]), encoded])
      assert.strictEqual(codec.readPredicateMatched(withUnknown), matched)
    }
    assert.isFalse(codec.readPredicateMatched(new Uint8Array()))
    assert.throws(() => codec.readPredicateMatched(new Uint8Array([0x12, 0x05, 0x61])), RangeError)
  })
})
