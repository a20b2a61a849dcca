import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { TableDestination } from "../../../src/Bigtable/index.ts"
import * as prepare from "../../../src/internal/bigtable/prepare.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })

const item = (bytes: number): prepare.Item => ({
  table,
  key: "p.i.t",
  entry: { rowKey: new Uint8Array(0), mutations: [] },
  units: 1,
  bytes,
  mutations: 1,
  permitBytes: bytes,
  attempts: 0,
  isolated: false
})

const Bound = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 500 }))

describe("prepare.slices", () => {
  it.prop(
    "slices keep every entry once, in order; each slice's permit is its entries' sum, within the bounds",
    [Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1000 }))), Bound, Bound, Bound, Bound],
    ([sizes, maxUnits, maxBytes, batchElementCount, batchByteSize]) => {
      const items = sizes.map(item)
      const out = prepare.slices(
        { items: [...items], routed: [], skipped: [] },
        { maxUnits, maxBytes },
        { batchElementCount, batchByteSize }
      )
      assert.deepStrictEqual(out.slices.flatMap((slice) => slice.payload), items)
      for (const slice of out.slices) {
        assert.strictEqual(slice.units, slice.payload.length)
        assert.strictEqual(slice.permitBytes, slice.payload.reduce((n, i) => n + i.permitBytes, 0))
        assert.strictEqual(slice.bytes, slice.payload.reduce((n, i) => n + i.bytes, 0))
        assert.isAtMost(slice.units, Math.min(maxUnits, batchElementCount))
        // a slice passes the byte bound only when it holds one entry (clamped to the writer's bound)
        if (slice.units > 1) assert.isAtMost(slice.permitBytes, Math.min(maxBytes, batchByteSize))
        else assert.isAtMost(slice.permitBytes, maxBytes)
      }
    }
  )
})
