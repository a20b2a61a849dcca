import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import { Mutation, RowMutationEntry } from "../../../../src/Bigtable/index.ts"
import * as envelope from "../../../../src/internal/bigtable/exactlyOnce/envelope.ts"
import * as identity from "../../../../src/internal/bigtable/exactlyOnce/identity.ts"

const family = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/).filter((f) => f !== "m")
const bytes = fc.uint8Array({ minLength: 0, maxLength: 12 })
const micros = fc.nat({ max: 2 ** 40 }).map((n) => n * 1000)
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })

const mutation: fc.Arbitrary<Mutation.Mutation> = fc.oneof(
  fc.record({ family, qualifier: bytes, value: bytes, ts: fc.option(micros, { nil: undefined }) }).map((r) =>
    Mutation.setCell({
      family: r.family,
      qualifier: r.qualifier,
      value: r.value,
      ...(r.ts === undefined ? {} : { timestampMicros: r.ts })
    })
  ),
  fc.record({ family, qualifier: bytes }).map((r) => Mutation.deleteFromColumn(r)),
  family.map((f) => Mutation.deleteFromFamily({ family: f })),
  fc.record({ family, qualifier: bytes, ts: micros, input: int64 }).map((r) =>
    Mutation.addToCell({ family: r.family, qualifier: r.qualifier, timestampMicros: r.ts, input: r.input })
  ),
  fc.record({ family, qualifier: bytes, ts: micros, input: fc.oneof(int64, bytes) }).map((r) =>
    Mutation.mergeToCell({ family: r.family, qualifier: r.qualifier, timestampMicros: r.ts, input: r.input })
  )
)

const validEnvelope: fc.Arbitrary<envelope.Envelope> = fc.record({
  table: fc.tuple(fc.stringMatching(/^[a-z]{1,6}$/), fc.stringMatching(/^[a-z]{1,6}$/)),
  profile: fc.option(fc.stringMatching(/^[a-z0-9-]{1,8}$/), { nil: undefined }),
  rowKey: fc.uint8Array({ minLength: 1, maxLength: 16 }),
  position: fc.nat(),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 6 })
}).map((r) => ({
  tableName: `projects/p/instances/${r.table[0]}/tables/${r.table[1]}`,
  appProfileId: r.profile,
  rowKey: r.rowKey,
  identity: identity.derive("w", String(r.position), 0),
  markerFamily: "m",
  mutations: r.mutations
}))

const roundTrip = (e: envelope.Envelope): envelope.Envelope => {
  const stored = Result.getOrThrow(envelope.encode(e))
  // what a store does: JSON text and back
  return Result.getOrThrow(envelope.decode(JSON.parse(JSON.stringify(stored))))
}

const base = (): envelope.Envelope => ({
  tableName: "projects/p/instances/i/tables/t",
  appProfileId: "eo",
  rowKey: new Uint8Array([1]),
  identity: identity.derive("w", "1", 0),
  markerFamily: "m",
  mutations: [Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: 2n })]
})

const storedBase = (): Record<string, unknown> => {
  const stored = Result.getOrThrow(envelope.encode(base()))
  return JSON.parse(JSON.stringify(stored)) as Record<string, unknown>
}

const rejected = (json: unknown, expected: RegExp) => {
  const r = envelope.decode(json)
  assert.isTrue(Result.isFailure(r), `accepted ${JSON.stringify(json)}`)
  if (Result.isFailure(r)) assert.match(r.failure, expected)
}

describe("envelope", () => {
  it("encode then decode (through JSON text) is the identity", () => {
    fc.assert(
      fc.property(validEnvelope, (e) => {
        assert.deepStrictEqual(roundTrip(e), e)
      }),
      { numRuns: 300 }
    )
  })

  it("the stored form is JSON: base64 bytes, decimal int64s, no undefined", () => {
    const stored = Result.getOrThrow(envelope.encode({
      ...base(),
      mutations: [
        Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: -(2n ** 63n) }),
        Mutation.setCell({ family: "d", qualifier: "q", value: "v" })
      ]
    }))
    assert.deepStrictEqual(stored, {
      v: 1,
      table: "projects/p/instances/i/tables/t",
      appProfile: "eo",
      rowKey: "AQ==",
      identity: identity.derive("w", "1", 0),
      markerFamily: "m",
      mutations: [
        { _tag: "AddToCell", family: "c", qualifier: "bg==", timestampMicros: 0, input: "-9223372036854775808" },
        { _tag: "SetCell", family: "d", qualifier: "cQ==", value: "dg==" }
      ]
    })
  })

  it("freeze copies: a later change to the user's entry changes nothing", () => {
    const entry = RowMutationEntry.make(new Uint8Array([7]), [
      Mutation.setCell({ family: "c", qualifier: "q", value: "v" })
    ])
    const frozen = Result.getOrThrow(envelope.freeze({
      tableName: "projects/p/instances/i/tables/t",
      appProfileId: undefined,
      markerFamily: "m",
      identity: identity.derive("w", "1", 0),
      entry
    }))
    entry.rowKey[0] = 9
    const cell = entry.mutations[0]
    if (cell?._tag === "SetCell") cell.value[0] = 0
    assert.deepStrictEqual([...frozen.envelope.rowKey], [7])
    const m = frozen.envelope.mutations[0]
    assert.deepStrictEqual(m?._tag === "SetCell" ? [...m.value] : [], [0x76])
  })

  it("freeze validates once: its stored form is the envelope's, and decodes back to it", () => {
    fc.assert(
      fc.property(validEnvelope, (e) => {
        const frozen = Result.getOrThrow(envelope.freeze({
          tableName: e.tableName,
          appProfileId: e.appProfileId,
          markerFamily: e.markerFamily,
          identity: e.identity,
          entry: { rowKey: e.rowKey, mutations: e.mutations }
        }))
        assert.deepStrictEqual(frozen.envelope, e)
        assert.deepStrictEqual(frozen.stored, Result.getOrThrow(envelope.encode(e)))
        assert.deepStrictEqual(roundTrip(frozen.envelope), e)
      }),
      { numRuns: 200 }
    )
  })

  it("freeze rejects byte fields that are not bytes (a copy does not turn them into bytes)", () => {
    for (
      const entry of [
        { rowKey: "k", mutations: [Mutation.setCell({ family: "c", qualifier: "q", value: "v" })] },
        { rowKey: new Uint8Array([1]), mutations: [{ _tag: "SetCell", family: "c", qualifier: 5, value: "v" }] },
        { rowKey: new Uint8Array([1]), mutations: [{ _tag: "DeleteFromColumn", family: "c", qualifier: "q" }] }
      ]
    ) {
      const r = envelope.freeze({
        tableName: "projects/p/instances/i/tables/t",
        appProfileId: undefined,
        markerFamily: "m",
        identity: identity.derive("w", "1", 0),
        entry: entry as unknown as RowMutationEntry.RowMutationEntry
      })
      assert.isTrue(Result.isFailure(r), JSON.stringify(entry))
    }
  })

  it("Codec: encoding hands over the stored form of freeze; decoding validates again", () => {
    const frozen = Result.getOrThrow(envelope.freeze({
      tableName: "projects/p/instances/i/tables/t",
      appProfileId: "eo",
      markerFamily: "m",
      identity: identity.derive("w", "1", 0),
      entry: RowMutationEntry.make(new Uint8Array([7]), [
        Mutation.mergeToCell({ family: "c", qualifier: "q", timestampMicros: 0, input: new Uint8Array([1, 2]) })
      ])
    }))
    const json = Schema.encodeSync(envelope.Codec)(frozen)
    assert.strictEqual(json, frozen.stored)
    const back = Schema.decodeUnknownSync(envelope.Codec)(JSON.parse(JSON.stringify(json)))
    assert.deepStrictEqual(back.envelope, frozen.envelope)
    assert.deepStrictEqual(back.stored, frozen.stored)
    const tampered = { ...storedBase(), markerFamily: "c" }
    assert.throws(() => Schema.decodeUnknownSync(envelope.Codec)(tampered), /marker family/)
  })

  it("rejects DeleteFromRow and mutations of the marker family when staged", () => {
    const row = envelope.encode({ ...base(), mutations: [Mutation.deleteFromRow()] })
    assert.isTrue(Result.isFailure(row))
    if (Result.isFailure(row)) assert.match(row.failure, /DeleteFromRow is not allowed/)
    for (
      const m of [
        Mutation.setCell({ family: "m", qualifier: "x", value: "1" }),
        Mutation.deleteFromFamily({ family: "m" }),
        Mutation.deleteFromColumn({ family: "m", qualifier: "x" })
      ]
    ) {
      const r = envelope.encode({
        ...base(),
        mutations: [Mutation.setCell({ family: "c", qualifier: "x", value: "1" }), m]
      })
      assert.isTrue(Result.isFailure(r))
      if (Result.isFailure(r)) assert.match(r.failure, /must not touch the marker family 'm'/)
    }
    const none = envelope.encode({ ...base(), mutations: [] })
    assert.isTrue(Result.isFailure(none))
    const many = envelope.encode({
      ...base(),
      mutations: Array.from({ length: envelope.maxMutations }, () => Mutation.deleteFromFamily({ family: "c" }))
    })
    assert.isTrue(Result.isFailure(many))
    if (Result.isFailure(many)) assert.match(many.failure, /1\.\.99999 mutations/)
  })

  it("rejects tampered stored envelopes when read back", () => {
    const s = storedBase()
    rejected({ ...s, v: 2 }, /Expected 1/)
    rejected({ ...s, table: "projects/p/tables/t" }, /table/)
    rejected({ ...s, table: "projects/p/instances/i/tables/t/x" }, /table/)
    rejected({ ...s, appProfile: "a/b" }, /appProfile/)
    rejected({ ...s, rowKey: "" }, /row key must not be empty/)
    rejected({ ...s, identity: "ABCDEF0123456789abcdef0123456789" }, /identity/)
    rejected({ ...s, identity: "abc" }, /identity/)
    rejected({ ...s, markerFamily: "" }, /markerFamily/)
    rejected({ ...s, mutations: [] }, /1\.\.99999 mutations/)
    rejected({ ...s, mutations: [{ _tag: "DeleteFromRow" }] }, /mutations/)
    rejected({ ...s, mutations: [{ _tag: "DeleteFromFamily", family: "m" }] }, /marker family/)
    rejected({
      ...s,
      mutations: [{ _tag: "AddToCell", family: "c", qualifier: "bg==", timestampMicros: 0, input: "1.5" }]
    }, /input/)
    rejected({
      ...s,
      mutations: [{ _tag: "SetCell", family: "c", qualifier: "bg==", value: "dg==", timestampMicros: -2 }]
    }, /timestampMicros/)
    rejected({ ...s, extra: 1, rowKey: 5 }, /rowKey/)
    rejected("not an envelope", /Expected/)
    rejected(null, /Expected/)
  })

  it("rejects any single-field corruption of a valid stored envelope", () => {
    const corruptions: ReadonlyArray<(s: Record<string, unknown>) => unknown> = [
      (s) => ({ ...s, table: 1 }),
      (s) => ({ ...s, identity: undefined }),
      (s) => ({ ...s, markerFamily: 7 }),
      (s) => ({ ...s, mutations: "x" }),
      (s) => ({ ...s, rowKey: "!!not base64!!" })
    ]
    fc.assert(
      fc.property(validEnvelope, fc.constantFrom(...corruptions), (e, corrupt) => {
        const stored = JSON.parse(JSON.stringify(Result.getOrThrow(envelope.encode(e)))) as Record<string, unknown>
        assert.isTrue(Result.isFailure(envelope.decode(corrupt(stored))))
      }),
      { numRuns: 100 }
    )
  })
})
