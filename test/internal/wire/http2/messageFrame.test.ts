/**
 * gRPC message framing: the prefix written in place or in a copy, and the reader reassembling
 * messages however the chunks cut them, with its limits (size, compression).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { frame, MessageReader, prefixLength, writePrefix } from "../../../../src/internal/wire/http2/messageFrame.ts"

const framedAll = (messages: ReadonlyArray<Uint8Array>): Uint8Array => {
  const parts = messages.map((m) => frame(m, 0))
  return Uint8Array.from(parts.flatMap((p) => Array.from(p)))
}

describe("messageFrame", () => {
  it("frames in the headroom without copying, else in a copy", () => {
    const buffer = new Uint8Array(prefixLength + 3)
    buffer.set([7, 8, 9], prefixLength)
    const message = buffer.subarray(prefixLength)
    const inPlace = frame(message, prefixLength)
    assert.strictEqual(inPlace.buffer, buffer.buffer)
    assert.deepStrictEqual(Array.from(inPlace), [0, 0, 0, 0, 3, 7, 8, 9])
    const copied = frame(Uint8Array.from([1, 2]), 0)
    assert.deepStrictEqual(Array.from(copied), [0, 0, 0, 0, 2, 1, 2])
    const big = new Uint8Array(5)
    writePrefix(big, 0, 0x01020304)
    assert.deepStrictEqual(Array.from(big), [0, 1, 2, 3, 4])
  })

  it("reads back every message, whatever the chunks' boundaries", () => {
    fc.assert(fc.property(
      fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }),
      fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 50 }),
      (messages, cuts) => {
        const bytes = framedAll(messages)
        const seen: Array<Array<number>> = []
        const reader = new MessageReader(1000, (m) => seen.push(Array.from(m)))
        let pos = 0
        for (let i = 0; pos < bytes.length; i++) {
          const size = cuts[i % cuts.length]!
          assert.isUndefined(reader.push(bytes.subarray(pos, pos + size)))
          pos += size
        }
        assert.deepStrictEqual(seen, messages.map((m) => Array.from(m)))
        assert.isFalse(reader.partial)
      }
    ))
  })

  it("refuses a message over the limit before reading it, and a compressed one; then reads nothing more", () => {
    const seen: Array<number> = []
    const reader = new MessageReader(10, (m) => seen.push(m.length))
    assert.isUndefined(reader.push(framedAll([new Uint8Array(10)])))
    assert.deepStrictEqual(reader.push(Uint8Array.from([0, 0, 0, 0, 11])), { _tag: "TooLarge", length: 11, max: 10 })
    assert.deepStrictEqual(reader.push(framedAll([new Uint8Array(1)])), { _tag: "TooLarge", length: 11, max: 10 })
    assert.deepStrictEqual(seen, [10])
    const compressed = new MessageReader(10, () => assert.fail("nothing is read"))
    assert.deepStrictEqual(compressed.push(Uint8Array.from([1, 0, 0, 0, 1, 9])), { _tag: "Compressed" })
  })

  it("knows when a stream stopped in the middle of a message", () => {
    const reader = new MessageReader(100, () => {})
    reader.push(Uint8Array.from([0, 0, 0]))
    assert.isTrue(reader.partial)
    reader.push(Uint8Array.from([0, 2, 1]))
    assert.isTrue(reader.partial)
    reader.push(Uint8Array.from([1]))
    assert.isFalse(reader.partial)
  })
})
