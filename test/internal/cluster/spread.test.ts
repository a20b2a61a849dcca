import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { spreadNames, triesPerShard } from "../../../src/internal/cluster/spread.ts"

/** A stand-in for the cluster's hash: deterministic, spread, and unrelated to the names' order. */
const shardOf = (shards: number, seed: number) => (name: string): number => {
  let h = seed
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193)
  return (Math.abs(h) % shards) + 1
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `job-${i}`)

describe("spreadNames", () => {
  it("puts at most ceil(partitions / shards) partitions on any shard, names unique, first choice the writer id", () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 60 }),
      fc.integer({ min: 1, max: 40 }),
      fc.integer(),
      (partitions, shards, seed) => {
        const hash = shardOf(shards, seed)
        const names = spreadNames(ids(partitions), shards, hash)
        if ("_tag" in names) return assert.fail(names.message)
        assert.strictEqual(names.length, partitions)
        assert.strictEqual(new Set(names).size, partitions)
        const load = new Map<number, number>()
        for (const name of names) load.set(hash(name), (load.get(hash(name)) ?? 0) + 1)
        assert.isAtMost(Math.max(...load.values()), Math.ceil(partitions / shards))
        names.forEach((name, i) => assert.isTrue(name === `job-${i}` || name.startsWith(`job-${i}~`)))
      }
    ))
  })

  it("with as many shards as partitions, every shard holds exactly one", () => {
    const hash = shardOf(12, 7)
    const names = spreadNames(ids(12), 12, hash)
    if ("_tag" in names) return assert.fail(names.message)
    assert.deepStrictEqual(names.map(hash).toSorted((a, b) => a - b), Array.from({ length: 12 }, (_, i) => i + 1))
  })

  it("says the shard count is wrong when the hash answers past it, or never reaches a free shard", () => {
    const tooFew = spreadNames(ids(4), 3, shardOf(300, 1))
    assert.isTrue("_tag" in tooFew && tooFew.message.includes("outside 1 to 3"))
    // a cluster with fewer shards than given: shards above 2 never come up
    const tooMany = spreadNames(ids(4), 4, shardOf(2, 1))
    assert.isTrue("_tag" in tooMany && tooMany.message.includes(`${triesPerShard * 4} names`))
  })
})
