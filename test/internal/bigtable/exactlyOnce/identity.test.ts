import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { createHash } from "node:crypto"
import * as identity from "../../../../src/internal/bigtable/exactlyOnce/identity.ts"

// JSON values without -0 (canonical JSON refuses it) and with keys in any order
const json: fc.Arbitrary<unknown> = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown)

const shuffleKeys = (value: unknown, seed: number): unknown => {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, seed))
  if (typeof value !== "object" || value === null) return value
  const entries = Object.entries(value)
  const rotated = entries.length === 0
    ? entries
    : [...entries.slice(seed % entries.length), ...entries.slice(0, seed % entries.length)]
  return Object.fromEntries(rotated.toReversed().map(([k, v]) => [k, shuffleKeys(v, seed)]))
}

describe("identity", () => {
  it("same input, same identity; 32 lowercase hex", () => {
    fc.assert(
      fc.property(fc.string(), json, fc.nat({ max: 1000 }), (writerId, position, index) => {
        const a = identity.derive(writerId, identity.canonicalJson(position), index)
        const b = identity.derive(writerId, identity.canonicalJson(structuredClone(position)), index)
        assert.strictEqual(a, b)
        assert.match(a, identity.pattern)
      }),
      { numRuns: 300 }
    )
  })

  it("canonical JSON ignores key order and round-trips through JSON.parse", () => {
    fc.assert(
      fc.property(json, fc.nat(), (position, seed) => {
        const c = identity.canonicalJson(position)
        assert.strictEqual(identity.canonicalJson(shuffleKeys(position, seed)), c)
        assert.deepStrictEqual(JSON.parse(c), position)
      }),
      { numRuns: 300 }
    )
  })

  it("distinct positions (or writers, or indexes) give distinct identities", () => {
    fc.assert(
      fc.property(fc.string(), json, json, fc.nat({ max: 5 }), (writerId, p, q, index) => {
        const cp = identity.canonicalJson(p)
        const cq = identity.canonicalJson(q)
        fc.pre(cp !== cq)
        assert.notStrictEqual(identity.derive(writerId, cp, index), identity.derive(writerId, cq, index))
        assert.notStrictEqual(identity.derive(writerId, cp, index), identity.derive(writerId, cp, index + 1))
        assert.notStrictEqual(identity.derive(writerId, cp, index), identity.derive(`${writerId}x`, cp, index))
      }),
      { numRuns: 300 }
    )
    // 20,000 consecutive offsets: no collision
    const seen = new Set<string>()
    for (let offset = 0; offset < 20_000; offset++) {
      seen.add(identity.derive("w", identity.canonicalJson({ offset }), 0))
    }
    assert.strictEqual(seen.size, 20_000)
  })

  it("is the first 128 bits of SHA-256 over [scheme, writerId, position, index]", () => {
    const text = `["${identity.scheme}","w-1",{"a":1,"b":[true,null,"x"]},3]`
    const expected = createHash("sha256").update(text).digest("hex").slice(0, 32)
    assert.strictEqual(identity.derive("w-1", identity.canonicalJson({ b: [true, null, "x"], a: 1 }), 3), expected)
  })

  it("refuses what JSON cannot carry exactly", () => {
    for (const bad of [undefined, Number.NaN, Infinity, -0, 1n, new Date(0), new Map(), [() => 1], { a: undefined }]) {
      assert.throws(() => identity.canonicalJson(bad), TypeError)
    }
    assert.throws(() => identity.derive("w", "1", -1), RangeError)
  })

  it("the sequencer numbers consecutive records at one position", () => {
    const s = identity.sequencer("w")
    const ids = ["1", "2", "2", "2", "3", "2"].map((p) => s.next(p))
    assert.deepStrictEqual(ids, [
      identity.derive("w", "1", 0),
      identity.derive("w", "2", 0),
      identity.derive("w", "2", 1),
      identity.derive("w", "2", 2),
      identity.derive("w", "3", 0),
      identity.derive("w", "2", 0)
    ])
  })
})
