import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { packInOrder } from "../../../src/internal/core/packInOrder.ts"

/** Runs of weights under a limit on their sum and on their count (the two limits the callers use). */
const pack = (weights: ReadonlyArray<number>, maxWeight: number, maxCount: number) =>
  packInOrder(weights, (w) => w, (count, weight, next) => count >= maxCount || weight + next > maxWeight)

const sum = (run: ReadonlyArray<number>) => run.reduce((a, b) => a + b, 0)

describe("packInOrder", () => {
  it("keeps every item in order, in non-empty runs within the limits, each as full as the next item allows", () =>
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 }),
      fc.integer({ min: 1, max: 100 }),
      fc.integer({ min: 1, max: 10 }),
      (weights, maxWeight, maxCount) => {
        const runs = pack(weights, maxWeight, maxCount)
        assert.deepStrictEqual(runs.flat(), weights)
        runs.forEach((run, i) => {
          assert.isAbove(run.length, 0)
          assert.isAtMost(run.length, maxCount)
          // only an item heavier than the limit alone breaks it, alone
          if (run.length > 1) assert.isAtMost(sum(run), maxWeight)
          const next = runs[i + 1]?.[0]
          // maximal: the next run starts with the item that did not fit
          if (next !== undefined) assert.isTrue(run.length >= maxCount || sum(run) + next > maxWeight)
        })
      }
    )))

  it("an empty input gives no runs", () => assert.deepStrictEqual(pack([], 10, 10), []))
})
