import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as suggest from "../../../src/internal/options/suggest.ts"

const Word = Schema.String.check(Schema.isPattern(/^[a-zA-Z]{0,12}$/))
const known = ["maxInFlightRequests", "maxInFlightBytes", "retry", "recovery", "responseTimeout", "flushInterval"]

describe("suggest", () => {
  it.prop("distance is a metric: zero on itself, symmetric, at most the longer length", [Word, Word], ([a, b]) => {
    assert.strictEqual(suggest.distance(a, a), 0)
    assert.strictEqual(suggest.distance(a, b), suggest.distance(b, a))
    assert.isAtMost(suggest.distance(a, b), Math.max(a.length, b.length))
  })

  it.prop("a known option with one letter changed is suggested", [
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 18 }))
  ], ([at]) => {
    for (const name of known.filter((n) => n.length > 9)) {
      const i = at % name.length
      const slip = `${name.slice(0, i)}${name[i] === "x" ? "y" : "x"}${name.slice(i + 1)}`
      assert.strictEqual(suggest.closest(slip, known), name)
    }
  })

  it("names renamed options, and lists the options when nothing is close", () => {
    assert.strictEqual(suggest.closest("maxInflightRequests", known), "maxInFlightRequests")
    assert.strictEqual(suggest.closest("retryMaxAttempts", known), "retry")
    assert.strictEqual(
      suggest.unknownKey("maxInflightBytes", known),
      "is not an option here: did you mean 'maxInFlightBytes'?"
    )
    assert.strictEqual(suggest.unknownKey("zzz", ["a", "b"]), "is not an option here; the options here are 'a', 'b'")
  })
})
