import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { emptyArray, single, unset } from "../../src/internal/sitelessArrays.ts"

describe("sitelessArrays", () => {
  it("emptyArray is a fresh empty array each time", () => {
    const a = emptyArray<number>()
    const b = emptyArray<number>()
    assert.notStrictEqual(a, b)
    a.push(1)
    assert.deepStrictEqual([a, b], [[1], []])
  })

  it("single is a fresh array of its value alone, each time", () => {
    const a = single("x")
    const b = single("y")
    assert.deepStrictEqual([a, b], [["x"], ["y"]])
    a.push("z")
    assert.deepStrictEqual(single("w"), ["w"])
  })

  it.prop("unset is a fresh array of that many undefined slots, whatever was asked before", [
    Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 300 })))
  ], ([lengths]) => {
    for (const length of lengths) {
      const a = unset<string>(length)
      assert.strictEqual(a.length, length)
      assert.isTrue(a.every((x) => x === undefined) && Object.keys(a).length === length)
      a.fill("x")
      assert.isTrue(unset<string>(length).every((x) => x === undefined))
    }
  })
})
