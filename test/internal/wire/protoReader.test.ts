/**
 * The shared protobuf wire reader against protobufjs's `Writer`: varints of every width, int32
 * sign extension and int64 rounding, skipping each wire type, truncation anywhere, and the
 * declarative message decoder (wire types of known fields, repeated fields, nesting limit).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import protobuf from "protobufjs"
import * as proto from "../../../src/internal/wire/protoReader.ts"

const reader = (bytes: Uint8Array): proto.ProtoReader => new proto.ProtoReader(bytes, "TestMessage")

const throwsRange = (f: () => unknown): boolean => {
  try {
    f()
    return false
  } catch (e) {
    return e instanceof RangeError && e.message.includes("TestMessage")
  }
}

const uint64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })

/** One field of any wire type but groups, as protobufjs writes it. */
const anyField = fc.record({
  number: fc.integer({ min: 1, max: 2 ** 29 - 1 }),
  value: fc.oneof(
    uint64.map((v) => ({ wire: 0 as const, v })),
    fc.double().map((v) => ({ wire: 1 as const, v })),
    fc.uint8Array({ maxLength: 200 }).map((v) => ({ wire: 2 as const, v })),
    fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((v) => ({ wire: 5 as const, v }))
  )
})
type AnyField = typeof anyField extends fc.Arbitrary<infer A> ? A : never

const writeField = (w: protobuf.Writer, { number, value }: AnyField): protobuf.Writer => {
  w.uint32(((number << 3) | value.wire) >>> 0)
  switch (value.wire) {
    case 0:
      return w.uint64(value.v.toString())
    case 1:
      return w.double(value.v)
    case 2:
      return w.bytes(value.v)
    case 5:
      return w.fixed32(value.v)
  }
}

/** Reads keys and skips values to `end`; returns the offsets after each field. */
const skipAll = (r: proto.ProtoReader, end: number): Array<number> => {
  const offsets: Array<number> = []
  while (r.pos < end) {
    r.skip(r.key(end) & 7, end)
    offsets.push(r.pos)
  }
  return offsets
}

interface Node {
  readonly name?: string
  readonly child?: Node
  readonly items?: ReadonlyArray<Node>
  readonly n?: number
  readonly raw?: Uint8Array
}
const node: proto.MessageType<Node> = proto.messageType<Node>({
  name: [1, proto.string],
  child: [2, proto.message(() => node)],
  items: [3, proto.repeated(() => node)],
  n: [4, proto.int64],
  raw: [5, proto.bytes]
})

/** A chain of `depth` nested children under the top-level message. */
const chain = (depth: number): Uint8Array => {
  let inner = protobuf.Writer.create().uint32(0x0a).string("leaf").finish()
  for (let i = 0; i < depth; i++) inner = protobuf.Writer.create().uint32(0x12).bytes(inner).finish()
  return inner
}

describe("protoReader", () => {
  it("reads varints exactly, int32 sign-extended and int64 as the nearest number", () => {
    fc.assert(
      fc.property(uint64, (v) => {
        const bytes = protobuf.Writer.create().uint64(v.toString()).finish()
        const r = reader(bytes)
        r.varint(bytes.length)
        assert.strictEqual(r.pos, bytes.length)
        assert.strictEqual(r.lo, Number(v & 0xffff_ffffn))
        assert.strictEqual(r.hi, Number(v >> 32n))
        assert.strictEqual(reader(bytes).int64(bytes.length), Number(BigInt.asIntN(64, v)))
        assert.strictEqual(reader(bytes).int32(bytes.length), Number(BigInt.asIntN(32, v)))
      }),
      { numRuns: 1000 }
    )
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (v) => {
        // protobufjs writes a negative int32 as a 10-byte sign-extended varint
        const bytes = protobuf.Writer.create().int32(v).finish()
        assert.strictEqual(reader(bytes).int32(bytes.length), v)
        assert.strictEqual(reader(bytes).int64(bytes.length), v)
      })
    )
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
        const bytes = protobuf.Writer.create().int64(v.toString()).finish()
        assert.strictEqual(reader(bytes).int64(bytes.length), Number(v))
      })
    )
  })

  it("reads keys, bytes as views and strings", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 29 - 1 }),
        fc.uint8Array(),
        fc.string({ unit: "grapheme" }),
        (n, raw, s) => {
          const bytes = protobuf.Writer.create().uint32(((n << 3) | 2) >>> 0).bytes(raw).string(s).finish()
          const r = reader(bytes)
          assert.strictEqual(r.key(bytes.length), ((n << 3) | 2) >>> 0)
          const view = r.bytes(bytes.length)
          assert.deepStrictEqual(Array.from(view), Array.from(raw))
          assert.strictEqual(view.buffer, bytes.buffer)
          assert.strictEqual(r.string(bytes.length), s)
          assert.strictEqual(r.pos, bytes.length)
        }
      )
    )
  })

  it("skips every wire type to the field's end", () => {
    fc.assert(
      fc.property(fc.array(anyField, { maxLength: 8 }), (fields) => {
        const w = protobuf.Writer.create()
        const expected: Array<number> = []
        for (const f of fields) {
          writeField(w, f)
          expected.push(w.len)
        }
        const bytes = w.finish()
        assert.deepStrictEqual(skipAll(reader(bytes), bytes.length), expected)
      })
    )
  })

  it("throws a RangeError naming the message on a cut anywhere inside a field", () => {
    fc.assert(
      fc.property(fc.array(anyField, { minLength: 1, maxLength: 4 }), fc.nat(), (fields, at) => {
        const w = protobuf.Writer.create()
        const boundaries = new Set([0])
        for (const f of fields) boundaries.add(writeField(w, f).len)
        const bytes = w.finish()
        const cut = at % bytes.length
        if (boundaries.has(cut)) return
        // the cut as the end bound, and as the end of the bytes themselves
        assert.isTrue(throwsRange(() => skipAll(reader(bytes), cut)), `bound at ${cut}`)
        const short = bytes.subarray(0, cut)
        assert.isTrue(throwsRange(() => skipAll(reader(short), short.length)), `cut at ${cut}`)
        assert.isTrue(throwsRange(() => proto.decode(short, node, "TestMessage")), `decode cut at ${cut}`)
      }),
      { numRuns: 500 }
    )
  })

  it("throws on malformed keys, varints and wire types", () => {
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<number>]> = [
      ["field number 0", [0x00, 0x01]],
      ["a key over 32 bits", [0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00]],
      ["a varint over 10 bytes", [0x30, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
      ["a huge length", [0x32, 0xff, 0xff, 0xff, 0xff, 0x0f]],
      ["a start-group", [0x33, 0x34]],
      ["an end-group", [0x34]],
      ["wire type 6", [0x36, 0x00]],
      ["wire type 7", [0x37, 0x00]]
    ]
    for (const [what, bytes] of cases) {
      const input = Uint8Array.from(bytes)
      assert.isTrue(throwsRange(() => skipAll(reader(input), input.length)), what)
      assert.isTrue(throwsRange(() => proto.decode(input, node, "TestMessage")), what)
    }
    // a 10-byte varint's bits past the 64th are dropped, as protobufjs drops them
    const wide = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])
    const r = reader(wide)
    r.varint(wide.length)
    assert.deepStrictEqual([r.lo, r.hi], [0xffff_ffff, 0xffff_ffff])
  })

  it("decodes declared fields, skips unknown ones and rejects a known field on another wire type", () => {
    fc.assert(
      fc.property(
        fc.array(anyField.filter((f) => f.number > 5), { maxLength: 4 }),
        fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
        fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: undefined }),
        (unknown, names, n) => {
          const w = protobuf.Writer.create()
          for (const f of unknown) writeField(w, f)
          for (const name of names) w.uint32(0x1a).fork().uint32(0x0a).string(name).ldelim()
          if (n !== undefined) w.uint32(0x20).int64(n.toString())
          w.uint32(0x2a).bytes(Uint8Array.of(1, 2))
          const decoded = proto.decode(w.finish(), node, "TestMessage")
          assert.deepStrictEqual(
            { ...decoded, raw: Array.from(decoded.raw ?? []) },
            {
              ...(names.length > 0 ? { items: names.map((name) => ({ name })) } : {}),
              ...(n !== undefined ? { n: Number(n) } : {}),
              raw: [1, 2]
            }
          )
        }
      )
    )
    for (const bytes of [[0x08, 0x01], [0x15, 1, 2, 3, 4], [0x20 | 2, 0x00], [0x1a - 2, 0x00]]) {
      const input = Uint8Array.from(bytes)
      assert.isTrue(throwsRange(() => proto.decode(input, node, "TestMessage")), `${bytes}`)
    }
  })

  it("decodes nesting up to depth 100 and throws beyond", () => {
    let expected: Node = { name: "leaf" }
    for (let i = 0; i < 100; i++) expected = { child: expected }
    assert.deepStrictEqual(proto.decode(chain(100), node, "TestMessage"), expected)
    assert.isTrue(throwsRange(() => proto.decode(chain(101), node, "TestMessage")))
    assert.throws(() => proto.decode(chain(101), node, "TestMessage"), /nesting depth/)
  })
})
