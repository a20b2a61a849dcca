import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { afterBudget, classify, isMissingFamily } from "../../../src/internal/bigtable/retry.ts"

const Code = Schema.UndefinedOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 16 })))

describe("Bigtable classification (reference 3.2)", () => {
  const table: ReadonlyArray<readonly [ReadonlyArray<number | undefined>, string]> = [
    [[0], "applied"],
    [[0, 0], "applied"],
    [[5], "tableNotFound"],
    [[14, 5], "tableNotFound"], // NOT_FOUND first, even beside a transient status
    [[3, 5], "tableNotFound"],
    [[14], "retry"],
    [[4], "retry"],
    [[10], "retry"],
    [[8], "retry"],
    [[3, 14], "retry"], // a transient status anywhere wins over INVALID_ARGUMENT
    [[3], "rowLevel"],
    [[undefined, 3], "rowLevel"], // first status with a code
    [[3, 13], "rowLevel"],
    [[13, 3], "fatal"],
    [[13], "fatal"], // INTERNAL (the emulator's answer to malformed data)
    [[7], "fatal"],
    [[16], "fatal"],
    [[9], "fatal"],
    [[11], "fatal"],
    [[2], "fatal"],
    [[1], "fatal"],
    [[undefined], "fatal"], // no status
    [[], "fatal"]
  ]
  for (const [chain, verdict] of table) {
    it(`${JSON.stringify(chain)} -> ${verdict}`, () => assert.strictEqual(classify(chain), verdict))
  }

  it.prop("classify is total and NOT_FOUND always wins", [Schema.Array(Code)], ([chain]) => {
    const verdict = classify(chain)
    assert.include(["applied", "tableNotFound", "retry", "rowLevel", "fatal"], verdict)
    if (chain.includes(5)) assert.strictEqual(verdict, "tableNotFound")
  })

  it("a retry verdict becomes fatal once the budget is spent", () => {
    assert.strictEqual(afterBudget("retry", 2, 3), "retry")
    assert.strictEqual(afterBudget("retry", 3, 3), "fatal")
    assert.strictEqual(afterBudget("rowLevel", 9, 3), "rowLevel")
  })

  it("recognises the service's missing-family phrase", () => {
    assert.isTrue(isMissingFamily("Requested column family not found."))
    assert.isFalse(isMissingFamily("table \"t\" not found"))
  })
})
