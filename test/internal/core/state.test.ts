/**
 * The owner's commands that carry records are class instances: a literal's allocation site can be
 * pretenured, and a command born old keeps its young records alive until a full collection; a
 * literal's hidden class is also shared with the application's (ADR 0056).
 */
import { assert, describe, it } from "@effect/vitest"
import { type Method, Slice } from "../../../src/internal/core/backend.ts"
import { Permit } from "../../../src/internal/core/flowControl.ts"
import { Admit, Completed } from "../../../src/internal/core/state.ts"
import { sameHiddenClass } from "../../support/hiddenClass.ts"

describe("owner commands", () => {
  it("Admit and Completed are classes with the tagged fields of the literals they replace", () => {
    const slice = new Slice<ReadonlyArray<number>>([1, 2], 2, 8, 8)
    const admit = new Admit<Method>(slice, [], [], undefined, undefined)
    const literal = { _tag: "Admit", slice, routed: [], skipped: [], routedDone: undefined, routedPermit: undefined }
    assert.deepStrictEqual(Object.entries(admit), Object.entries(literal))
    assert.isFalse(sameHiddenClass(admit, literal))
    const completed = new Completed<Method>([1], "ok")
    assert.deepStrictEqual(Object.entries(completed), [["_tag", "Completed"], ["batch", [1]], ["outcome", "ok"]])
    assert.isFalse(sameHiddenClass(completed, { _tag: "Completed", batch: [1], outcome: "ok" }))
  })

  it("permits and slices are classes", () => {
    assert.isFalse(sameHiddenClass(new Permit(1, 2), { units: 1, bytes: 2 }))
    assert.isFalse(sameHiddenClass(new Slice([], 0, 0, 0), { payload: [], units: 0, bytes: 0, permitBytes: 0 }))
  })
})
