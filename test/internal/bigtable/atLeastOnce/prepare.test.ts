import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Mutation, RowMutationEntry, TableDestination } from "../../../../src/Bigtable/index.ts"
import * as prepare from "../../../../src/internal/bigtable/atLeastOnce/prepare.ts"
import { unresolved } from "../../../../src/Sink/FailedElement.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })

const item = (bytes: number): prepare.Item =>
  new prepare.Item(table, "p.i.t", { rowKey: new Uint8Array(0), mutations: [] }, bytes)

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

describe("prepare.Item", () => {
  it("an item in trouble writes its own state; the others keep the prototype's", () => {
    const entry = RowMutationEntry.make("k", [
      Mutation.setCell({ family: "f", qualifier: "q", value: "v" }),
      Mutation.deleteFromRow()
    ])
    const a = new prepare.Item(table, "p.i.t", entry, 40)
    const b = new prepare.Item(table, "p.i.t", entry, 40)
    assert.deepStrictEqual([a.units, a.mutations, a.permitBytes, a.isolated, a.parked, a.repairs], [
      1,
      2,
      40,
      false,
      false,
      0
    ])
    a.isolated = true
    a.parked = true
    a.repairs++
    assert.deepStrictEqual([a.isolated, a.parked, a.repairs], [true, true, 1])
    assert.deepStrictEqual([b.isolated, b.parked, b.repairs], [false, false, 0])
    assert.deepStrictEqual(Object.keys(b).toSorted(), [
      "attempts",
      "bytes",
      "entry",
      "epoch",
      "generation",
      "key",
      "permitBytes",
      "table"
    ])
  })
})

describe("prepare.prepare", () => {
  const entry = RowMutationEntry.make("k", Mutation.setCell({ family: "f", qualifier: "q", value: "v" }))

  it.effect("a resolver that throws is routed unresolved; the other records go on", () =>
    Effect.gen(function*() {
      const out = yield* prepare.prepare(
        [1, 2, 3],
        (n: number) => {
          if (n === 2) throw new Error("no table for 2")
          return table
        },
        () => entry
      )
      assert.strictEqual(out.items.length, 2)
      assert.strictEqual(out.routed.length, 1)
      const [failed] = out.routed
      assert.strictEqual(failed?.destination, unresolved)
      assert.include(failed?.message, "no table for 2")
      assert.instanceOf(failed?.cause, Error)
    }))

  it.effect("a serializer whose Effect dies is a failed mutation, as one whose Effect fails", () =>
    Effect.gen(function*() {
      const out = yield* prepare.prepare(
        [1, 2, 3],
        () => table,
        (n: number) => n === 1 ? Effect.die(new Error("boom")) : n === 2 ? Effect.fail("nope") : Effect.succeed(entry)
      )
      assert.strictEqual(out.items.length, 1)
      assert.deepStrictEqual(out.routed.map((f) => f.destination), [String(table), String(table)])
      assert.include(out.routed[0]?.message, "boom")
      assert.include(out.routed[1]?.message, "nope")
    }))
})
