/**
 * `CdcTableOptions` (reference 2.12): primary key 1..16 columns, not blank, distinct ignoring case;
 * `maxStaleness` positive, whole microseconds, at most ~292 years, exclusive with `clearMaxStaleness`;
 * the label hash a pure function of the lower-cased key and the staleness setting.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as fc from "fast-check"
import { CdcTableOptions } from "../../../../src/BigQuery/index.ts"
import { SinkConfigError } from "../../../../src/Sink.ts"

const rejects = (input: unknown, path: string, rule: RegExp) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(CdcTableOptions.make(input as CdcTableOptions.CdcTableOptionsInput))
    assert.instanceOf(error, SinkConfigError)
    assert.strictEqual(error.path, path)
    assert.match(error.detail, rule)
  })

describe("CdcTableOptions", () => {
  it.effect("primary key rules", () =>
    Effect.gen(function*() {
      const p = "cdc.tableOptions.primaryKey"
      yield* rejects({ primaryKey: [] }, p, /1 to 16 columns, had 0/)
      yield* rejects({ primaryKey: Array.from({ length: 17 }, (_, i) => `c${i}`) }, p, /had 17/)
      yield* rejects({ primaryKey: ["a", " "] }, `${p}[1]`, /blank/)
      yield* rejects({ primaryKey: ["a", "b", "A"] }, `${p}[2]`, /repeats 'A'/)
      yield* rejects({ primaryKey: "id" }, p, /^must be an array of 1 to 16 column names, was 'id'$/)
      const sixteen = yield* CdcTableOptions.make({ primaryKey: Array.from({ length: 16 }, (_, i) => `c${i}`) })
      assert.strictEqual(sixteen.primaryKey.length, 16)
      const none = yield* CdcTableOptions.make({})
      assert.deepStrictEqual(none, { primaryKey: [], maxStaleness: { _tag: "Unmanaged" } })
    }))

  it.effect("max staleness rules", () =>
    Effect.gen(function*() {
      const p = "cdc.tableOptions"
      yield* rejects({ maxStaleness: 0 }, `${p}.maxStaleness`, /positive/)
      yield* rejects({ maxStaleness: Duration.nanos(1500n) }, `${p}.maxStaleness`, /whole microseconds/)
      yield* rejects({ maxStaleness: "x" }, `${p}.maxStaleness`, /duration/)
      yield* rejects({ maxStaleness: "1 minute", clearMaxStaleness: true }, `${p}.clearMaxStaleness`, /not both/)
      yield* rejects({ clearMaxStaleness: "yes" }, `${p}.clearMaxStaleness`, /boolean/)
      yield* rejects({ primaryKey: ["a"], other: 1 }, `${p}.other`, /not an option/)
      const set = yield* CdcTableOptions.make({ primaryKey: ["id"], maxStaleness: "15 minutes" })
      assert.deepStrictEqual(set.maxStaleness, { _tag: "Set", micros: 900_000_000n })
      const max = yield* CdcTableOptions.make({ maxStaleness: Duration.micros(9_223_372_036_854_775n) })
      assert.deepStrictEqual(max.maxStaleness, { _tag: "Set", micros: 9_223_372_036_854_775n })
      const clear = yield* CdcTableOptions.make({ clearMaxStaleness: true })
      assert.deepStrictEqual(clear.maxStaleness, { _tag: "Clear" })
      const notCleared = yield* CdcTableOptions.make({ clearMaxStaleness: false })
      assert.deepStrictEqual(notCleared.maxStaleness, { _tag: "Unmanaged" })
    }))

  it("the hash: 32 hex digits, case-insensitive in the key, sensitive to order and staleness", () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,6}$/)
    const staleness = fc.oneof(
      fc.constant({ _tag: "Unmanaged" } as const),
      fc.constant({ _tag: "Clear" } as const),
      fc.bigInt({ min: 1n, max: 1n << 40n }).map((micros) => ({ _tag: "Set", micros }) as const)
    )
    fc.assert(fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 4 }), staleness, staleness, (key, a, b) => {
      const hash = CdcTableOptions.specHash({ primaryKey: key, maxStaleness: a })
      assert.match(hash, /^[0-9a-f]{32}$/)
      assert.strictEqual(
        CdcTableOptions.specHash({ primaryKey: key.map((k) => k.toUpperCase()), maxStaleness: a }),
        hash
      )
      const same = a._tag === b._tag && (a._tag !== "Set" || (b._tag === "Set" && a.micros === b.micros))
      assert.strictEqual(CdcTableOptions.specHash({ primaryKey: key, maxStaleness: b }) === hash, same)
      if (key.length > 1) {
        assert.notStrictEqual(CdcTableOptions.specHash({ primaryKey: key.toReversed(), maxStaleness: a }), hash)
      }
    }))
    // the input is NUL-separated: ["ab"] and ["a", "b"] differ
    const unmanaged = { _tag: "Unmanaged" } as const
    assert.notStrictEqual(
      CdcTableOptions.specHash({ primaryKey: ["ab"], maxStaleness: unmanaged }),
      CdcTableOptions.specHash({ primaryKey: ["a", "b"], maxStaleness: unmanaged })
    )
  })
})
