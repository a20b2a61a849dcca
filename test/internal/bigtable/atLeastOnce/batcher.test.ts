import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as batcher from "../../../../src/internal/bigtable/atLeastOnce/batcher.ts"
import { sameHiddenClass } from "../../../support/hiddenClass.ts"

const Item = Schema.Struct({
  bytes: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5_000 })),
  mutations: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100_000 }))
})
const Thresholds = Schema.Struct({
  batchElementCount: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 50 })),
  batchByteSize: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 20_000 }))
})

describe("batcher", () => {
  // An application's literal with the same first field must not share (and widen) a batch's hidden
  // class: a number stored in its `items` deoptimized the batching code (ADR 0056).
  it("batches and admission groups have hidden classes of their own", () => {
    const batch = batcher.empty<typeof Item.Type>()
    assert.isFalse(sameHiddenClass(batch, { items: batch.items, bytes: 0, mutations: 0 }))
    const [group] = batcher.admissionGroups([{ bytes: 1, mutations: 1 }], (item) => item.bytes, 10, 10)
    assert.isDefined(group)
    if (group !== undefined) assert.isFalse(sameHiddenClass(group, { items: group.items, bytes: group.bytes }))
  })

  it.prop("batches keep every entry once, in order, within count, bytes and 100,000 mutations", [
    Schema.Array(Item),
    Thresholds
  ], ([items, thresholds]) => {
    const batch = batcher.empty<typeof Item.Type>()
    const sent: Array<Array<typeof Item.Type>> = []
    for (const item of items) sent.push(...batcher.add(batch, item, thresholds))
    if (batch.items.length > 0) sent.push(batcher.cut(batch))
    assert.deepStrictEqual(sent.flat(), [...items])
    for (const request of sent) {
      assert.isAtMost(request.length, thresholds.batchElementCount)
      assert.isAtMost(request.reduce((n, i) => n + i.mutations, 0), batcher.maxMutationsPerRequest)
      // A batch only passes the byte threshold by its last entry.
      assert.isBelow(request.slice(0, -1).reduce((n, i) => n + i.bytes, 0), thresholds.batchByteSize)
    }
  })

  it("sends at the element count and at the byte size", () => {
    const batch = batcher.empty<{ bytes: number; mutations: number }>()
    const t = { batchElementCount: 3, batchByteSize: 100 }
    assert.deepStrictEqual(batcher.add(batch, { bytes: 1, mutations: 1 }, t), [])
    assert.deepStrictEqual(batcher.add(batch, { bytes: 1, mutations: 1 }, t), [])
    assert.strictEqual(batcher.add(batch, { bytes: 1, mutations: 1 }, t).length, 1)
    assert.strictEqual(batcher.add(batch, { bytes: 150, mutations: 1 }, t).length, 1)
    assert.strictEqual(batch.items.length, 0)
  })

  it("closes the open batch before an entry that would take it over 100,000 mutations", () => {
    const batch = batcher.empty<{ bytes: number; mutations: number }>()
    const t = { batchElementCount: 100, batchByteSize: 1_000_000 }
    batcher.add(batch, { bytes: 1, mutations: 60_000 }, t)
    const ready = batcher.add(batch, { bytes: 1, mutations: 50_000 }, t)
    assert.deepStrictEqual(ready.map((r) => r.length), [1])
    assert.strictEqual(batch.mutations, 50_000)
  })

  it.prop("requests keep the order within count, bytes and 100,000 mutations", [Schema.Array(Item), Thresholds], (
    [items, thresholds]
  ) => {
    const requests = batcher.requests(items, thresholds)
    assert.deepStrictEqual(requests.flat(), [...items])
    for (const r of requests) {
      assert.isAtMost(r.length, thresholds.batchElementCount)
      assert.isAtMost(r.reduce((n, i) => n + i.mutations, 0), batcher.maxMutationsPerRequest)
      assert.isBelow(r.slice(0, -1).reduce((n, i) => n + i.bytes, 0), thresholds.batchByteSize)
    }
  })

  it.prop("a batch add cut comes out of requests whole", [Schema.Array(Item), Thresholds], ([items, thresholds]) => {
    const batch = batcher.empty<typeof Item.Type>()
    const sent: Array<Array<typeof Item.Type>> = []
    for (const item of items) sent.push(...batcher.add(batch, item, thresholds))
    if (batch.items.length > 0) sent.push(batcher.cut(batch))
    for (const request of sent) {
      const out = batcher.requests(request, thresholds)
      assert.deepStrictEqual(out, [request])
      // not copied: the batch is the request
      assert.strictEqual(out[0], request)
    }
  })

  it.prop("admission groups fit the bounds; an overweight entry is a group of its own", [
    Schema.Array(Schema.Struct({ bytes: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 300 })) })),
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 })),
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 200 }))
  ], ([items, maxUnits, maxBytes]) => {
    const groups = batcher.admissionGroups(items, (i) => i.bytes, maxUnits, maxBytes)
    assert.deepStrictEqual(groups.flatMap((g) => g.items), [...items])
    for (const g of groups) {
      assert.isAtMost(g.items.length, maxUnits)
      assert.isTrue(g.bytes <= maxBytes || g.items.length === 1)
      assert.strictEqual(g.bytes, g.items.reduce((n, i) => n + i.bytes, 0))
    }
  })
})
