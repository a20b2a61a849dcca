import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as SchemaUpdateOptions from "../../src/BigQuery/SchemaUpdateOptions.ts"

describe("SchemaUpdateOptions", () => {
  it.effect("defaults to no updates and validates flags", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(SchemaUpdateOptions.defaults, { allowNewFields: false, allowFieldRelaxation: false })
      assert.isFalse(SchemaUpdateOptions.isEnabled(SchemaUpdateOptions.defaults))
      const relax = yield* SchemaUpdateOptions.make({ allowFieldRelaxation: true })
      assert.deepStrictEqual(relax, { allowNewFields: false, allowFieldRelaxation: true })
      assert.isTrue(SchemaUpdateOptions.isEnabled(relax))
      const error = yield* Effect.flip(SchemaUpdateOptions.make({ allowNewFields: "yes" as unknown as boolean }))
      assert.deepStrictEqual([error.path, error.detail], [
        "schemaUpdateOptions.allowNewFields",
        "must be a boolean, was 'yes'"
      ])
    }))
})
