import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import protobuf from "protobufjs"
import { utf8Length, WireWriter } from "../../../../src/internal/bigquery/encoding/wireWriter.ts"

const bytesOf = (write: (w: WireWriter) => void): Array<number> => {
  const w = new WireWriter(1)
  write(w)
  return Array.from(w.take(0))
}

const reference = (write: (w: protobuf.Writer) => void): Array<number> => {
  const w = protobuf.Writer.create()
  write(w)
  return Array.from(w.finish())
}

describe("WireWriter", () => {
  it("writes int64 varints like protobufjs, from safe integers and bigints", () => {
    const wide = fc.bigInt({ min: 2n ** 28n, max: 2n ** 53n - 1n }).map(Number)
    fc.assert(fc.property(fc.oneof(fc.maxSafeInteger(), wide), (n) => {
      assert.deepStrictEqual(bytesOf((w) => w.int64Number(n)), reference((w) => w.int64(n)))
    }))
    fc.assert(fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (n) => {
      assert.deepStrictEqual(bytesOf((w) => w.int64BigInt(n)), reference((w) => w.int64(n.toString())))
    }))
  })

  it("writes int32 and scaled int64 like protobufjs", () => {
    fc.assert(fc.property(fc.integer(), (n) => {
      assert.deepStrictEqual(bytesOf((w) => w.int32(n)), reference((w) => w.int32(n)))
    }))
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 0, max: 999 }),
        fc.boolean(),
        (mag, extra, negative) => {
          const value = (BigInt(mag) * 1000n + BigInt(extra)) * (negative ? -1n : 1n)
          assert.deepStrictEqual(
            bytesOf((w) => w.scaledInt64(mag, 1000, extra, negative)),
            reference((w) => w.int64(value.toString()))
          )
        }
      )
    )
  })

  it("writes strings like protobufjs and refuses lone surrogates", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 120 }), (s) => {
      assert.deepStrictEqual(bytesOf((w) => assert.strictEqual(w.string(s), -1)), reference((w) => w.string(s)))
      assert.strictEqual(utf8Length(s), Buffer.byteLength(s, "utf8"))
    }))
    for (
      const [s, index] of [["a\uD800", 1], ["\uDC00b", 0], ["x".repeat(60) + "\uD83D", 60], [
        "\uD83D\uDE00\uD83D",
        2
      ]] as const
    ) {
      const w = new WireWriter(4)
      assert.strictEqual(w.string(s), index)
      assert.strictEqual(w.pos, 0)
    }
  })

  it("writes strings one after another, keeping nothing of a refused one", () => {
    // any UTF-16 units, lone surrogates among them; and, around the 42-unit one-byte length prefix,
    // ASCII and 2-3-byte characters (43 units of 3 bytes need a two-byte prefix). `size: "max"`: without
    // it fast-check keeps strings and arrays short
    const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))
    const wide = fc.integer({ min: 0x80, max: 0xd7ff }).map((c) => String.fromCharCode(c))
    const piece = fc.oneof(
      fc.string({ unit, maxLength: 60, size: "max" }),
      fc.string({ unit: wide, minLength: 38, maxLength: 48 }),
      fc.string({ unit: "grapheme", maxLength: 60, size: "max" }),
      fc.string({ unit: "grapheme-ascii", minLength: 38, maxLength: 200 })
    )
    const strings = fc.array(piece, { maxLength: 12, size: "max" })
    fc.assert(fc.property(strings, fc.integer({ min: 1, max: 300 }), (pieces, capacity) => {
      const w = new WireWriter(capacity)
      const kept = pieces.filter((s) => {
        const before = w.pos
        const refused = w.string(s)
        // utf8Length gives -(index + 1) of the first lone surrogate
        assert.strictEqual(refused, utf8Length(s) >= 0 ? -1 : -utf8Length(s) - 1)
        if (refused >= 0) assert.strictEqual(w.pos, before)
        return refused < 0
      })
      assert.deepStrictEqual(Array.from(w.take(0)), reference((r) => kept.forEach((s) => r.string(s))))
    }))
  })

  it("writes doubles and bools like protobufjs", () => {
    fc.assert(fc.property(fc.double(), fc.boolean(), (d, b) => {
      assert.deepStrictEqual(bytesOf((w) => (w.double(d), w.bool(b))), reference((w) => w.double(d).bool(b)))
    }))
  })

  it("back-fills delimited lengths of any size", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40_000 }), (payload) => {
        const ours = bytesOf((w) => {
          const at = w.beginDelimited()
          w.ensure(payload.length)
          w.buf.set(payload, w.pos)
          w.pos += payload.length
          w.endDelimited(at)
        })
        assert.deepStrictEqual(ours, reference((w) => w.bytes(payload)))
      }),
      { numRuns: 50 }
    )
  })
})
