import { assert, describe, it } from "@effect/vitest"
import { emptyArray, single } from "../../src/internal/sitelessArrays.ts"

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
})
