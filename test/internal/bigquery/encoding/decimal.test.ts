import { assert, describe, it } from "@effect/vitest"
import { BigDecimal } from "effect"
import * as fc from "fast-check"
import * as decimal from "../../../../src/internal/bigquery/encoding/decimal.ts"

const acceptsNumeric = (s: string) => decimal.checkDecimal(s, decimal.numericLimits) === undefined
const acceptsBigNumeric = (s: string) => decimal.checkDecimal(s, decimal.bigNumericLimits) === undefined

describe("decimal", () => {
  it("accepts NUMERIC values of up to 29 integer and 9 fractional digits, ignoring padding zeros", () => {
    const ok = acceptsNumeric
    assert.isTrue(ok("99999999999999999999999999999.999999999"))
    assert.isTrue(ok("-0000099999999999999999999999999999.9999999990000"))
    assert.isTrue(ok("0"))
    assert.isTrue(ok("-0.000000001"))
    assert.isFalse(ok("100000000000000000000000000000"))
    assert.isFalse(ok("0.0000000001"))
    for (const bad of ["", "-", ".5", "5.", "+5", "1e3", "1,5", " 1", "0x10", "١"]) assert.isFalse(ok(bad), bad)
  })

  it("bounds BIGNUMERIC exactly at ±2^255 / 10^38", () => {
    const ok = acceptsBigNumeric
    const max = "578960446186580977117854925043439539266.34992332820282019728792003956564819967"
    assert.isTrue(ok(max))
    assert.isFalse(ok(max.slice(0, -1) + "8"))
    assert.isTrue(ok(`-${max.slice(0, -1)}8`))
    assert.isFalse(ok(`-${max.slice(0, -1)}9`))
    assert.isTrue(ok("578960446186580977117854925043439539266"))
    assert.isFalse(ok("578960446186580977117854925043439539267"))
    assert.isFalse(ok("1".repeat(40)))
    assert.isTrue(ok("0." + "1".repeat(38)))
    assert.isFalse(ok("0." + "1".repeat(39)))
  })

  it("agrees with BigInt arithmetic on random decimals", () => {
    const arb = fc.tuple(
      fc.boolean(),
      fc.stringMatching(/^[0-9]{1,45}$/),
      fc.option(fc.stringMatching(/^[0-9]{1,45}$/))
    )
    fc.assert(
      fc.property(arb, ([negative, int, frac]) => {
        const s = `${negative ? "-" : ""}${int}${frac === null ? "" : `.${frac}`}`
        const fraction = (frac ?? "").replace(/0+$/, "")
        const integer = BigInt(int)
        const numericOk = fraction.length <= 9 && integer < 10n ** 29n
        assert.strictEqual(decimal.checkDecimal(s, decimal.numericLimits) === undefined, numericOk, s)
        const scaled = BigInt(int + fraction.padEnd(38, "0").slice(0, 38)) * (negative ? -1n : 1n)
        const bigOk = fraction.length <= 38 && scaled >= -(2n ** 255n) && scaled <= 2n ** 255n - 1n
        assert.strictEqual(decimal.checkDecimal(s, decimal.bigNumericLimits) === undefined, bigOk, s)
      }),
      { numRuns: 500 }
    )
  })

  it("honours NUMERIC(P, S) and takes strings, bigints and BigDecimals, never numbers", () => {
    const limits = decimal.limitsOf("NUMERIC", 5, 2)
    assert.strictEqual(decimal.decimalString("999.99", limits), "999.99")
    assert.deepStrictEqual(decimal.decimalString("1000", limits), {
      error: "NUMERIC takes at most 3 integer digits, was '1000'"
    })
    assert.deepStrictEqual(decimal.decimalString("1.001", limits), {
      error: "NUMERIC takes at most 2 fractional digits, was '1.001'"
    })
    assert.strictEqual(decimal.decimalString(-12n, decimal.numericLimits), "-12")
    assert.strictEqual(decimal.decimalString(BigDecimal.fromStringUnsafe("-0.05"), decimal.numericLimits), "-0.05")
    assert.strictEqual(decimal.decimalString(BigDecimal.make(12n, -3), decimal.numericLimits), "12000")
    assert.deepStrictEqual(decimal.decimalString(1.5, decimal.numericLimits), {
      error: "NUMERIC takes a decimal string, a bigint or a BigDecimal (numbers are inexact)"
    })
  })
})
