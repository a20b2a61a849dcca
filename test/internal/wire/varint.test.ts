import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import protobuf from "protobufjs"
import { int64Size, uintSize, writeInt64, writeNegative, writeUint } from "../../../src/internal/wire/varint.ts"

const written = (write: (buf: Uint8Array) => number): Array<number> => {
  const buf = new Uint8Array(16)
  return Array.from(buf.subarray(0, write(buf)))
}

const reference = (v: number | string): Array<number> => Array.from(protobuf.Writer.create().int64(v).finish())

// safe integers across every varint length, the ones above 2^32 (written in two parts) on purpose
const nonNegative = fc.oneof(
  fc.maxSafeInteger().map(Math.abs),
  fc.bigInt({ min: 2n ** 28n, max: 2n ** 53n - 1n }).map(Number)
)

describe("varint", () => {
  it("writes a non-negative safe integer as protobufjs does, in uintSize bytes", () => {
    fc.assert(fc.property(nonNegative, (n) => {
      const bytes = written((buf) => writeUint(buf, 0, n))
      assert.deepStrictEqual(bytes, reference(n))
      assert.strictEqual(bytes.length, uintSize(n))
    }))
  })

  it("writes a negative safe integer as its ten-byte two's complement", () => {
    fc.assert(fc.property(fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }), (n) => {
      assert.deepStrictEqual(written((buf) => writeNegative(buf, 0, n)), reference(n))
    }))
  })

  it("writes any int64, number or bigint, as protobufjs does, in int64Size bytes", () => {
    const int64 = fc.oneof(fc.maxSafeInteger(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }))
    fc.assert(fc.property(int64, (v) => {
      const bytes = written((buf) => writeInt64(buf, 0, v))
      assert.deepStrictEqual(bytes, reference(typeof v === "bigint" ? v.toString() : v))
      assert.strictEqual(bytes.length, int64Size(v))
    }))
  })
})
