import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { jsonTextError, stringifyJson } from "../../../../src/internal/bigquery/encoding/jsonText.ts"

const parses = (s: string): boolean => {
  try {
    JSON.parse(s)
    return true
  } catch {
    return false
  }
}

describe("JSON text", () => {
  it("accepts what JSON.parse accepts", () => {
    fc.assert(fc.property(fc.json(), (s) => assert.isUndefined(jsonTextError(s))))
    const nearJson = fc.stringMatching(/^[\s{}[\]",:0-9.eE+\-truefalsn\\u]{0,12}$/)
    fc.assert(
      fc.property(fc.oneof(nearJson, fc.string()), (s) => {
        assert.strictEqual(jsonTextError(s) === undefined, parses(s), JSON.stringify(s))
      }),
      { numRuns: 2000 }
    )
  })

  it("limits nesting to 500 levels", () => {
    assert.isUndefined(jsonTextError("[".repeat(500) + "]".repeat(500)))
    assert.strictEqual(jsonTextError("[".repeat(502) + "]".repeat(502)), "nested deeper than 500")
  })

  it("stringifies JSON values like JSON.stringify and refuses what it would change", () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => assert.strictEqual(stringifyJson(v), JSON.stringify(v))))
    const cyclic: Array<unknown> = []
    cyclic.push(cyclic)
    assert.deepStrictEqual(stringifyJson(cyclic), { error: "a JSON value cannot contain itself" })
    assert.deepStrictEqual(stringifyJson({ a: Number.NaN }), { error: "JSON has no NaN" })
    assert.deepStrictEqual(stringifyJson([new Date(0)]), { error: "not a JSON value: object" })
    assert.deepStrictEqual(stringifyJson({ a: 1n }), { error: "not a JSON value: bigint" })
    assert.strictEqual(stringifyJson({ a: undefined, b: [1] }), "{\"b\":[1]}")
  })
})
