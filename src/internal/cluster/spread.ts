/**
 * Singleton names that spread partitions evenly over a shard group's shards.
 *
 * `Sharding` hashes a singleton's name onto one of `shardsPerGroup` shards, and balances shards, not singletons,
 * over runners (`HashRing.getShards` gives each runner `shardsPerGroup / runners` shards, within one). Twelve
 * singletons named by their writer ids land on twelve random shards of 300, so three runners own anywhere from
 * 4/4/4 to 6/5/1 of them. Named instead so that each shard holds the same number of partitions (within one), and
 * with `shardsPerGroup` equal to the partition count (or a divisor of it), every runner owns the same number of
 * partitions, within one per shard it owns more. The writer id, which names the checkpoints, does not change:
 * only the singleton's name does (`writerId`, else `writerId~1`, `writerId~2`, ...: the first whose shard is not
 * full yet).
 *
 * @internal
 */

/** How many names are tried per partition before the shard count is taken to be wrong. @internal */
export const triesPerShard = 64

/** Why no spread could be found: a shard number above `shardsPerGroup`, or no free shard among the tries. @internal */
export interface SpreadMismatch {
  readonly _tag: "SpreadMismatch"
  readonly message: string
}

/**
 * The singleton name of each writer id, chosen so that no shard of `shardOf` (1 to `shardsPerGroup`) holds
 * more than `ceil(writerIds / shardsPerGroup)` of them; a mismatch when `shardOf` answers outside that range or
 * no free shard turns up (the cluster's `shardsPerGroup` is not the one given).
 *
 * @internal
 */
export const spreadNames = (
  writerIds: ReadonlyArray<string>,
  shardsPerGroup: number,
  shardOf: (name: string) => number
): ReadonlyArray<string> | SpreadMismatch => {
  const capacity = Math.ceil(writerIds.length / shardsPerGroup)
  const load = new Map<number, number>()
  const names: Array<string> = []
  for (const writerId of writerIds) {
    let chosen: string | undefined
    for (let k = 0; chosen === undefined && k < triesPerShard * shardsPerGroup; k++) {
      const name = k === 0 ? writerId : `${writerId}~${k}`
      const shard = shardOf(name)
      if (!Number.isInteger(shard) || shard < 1 || shard > shardsPerGroup) {
        return mismatch(`'${name}' hashes to shard ${shard}, outside 1 to ${shardsPerGroup}`, shardsPerGroup)
      }
      if ((load.get(shard) ?? 0) < capacity) {
        load.set(shard, (load.get(shard) ?? 0) + 1)
        chosen = name
      }
    }
    if (chosen === undefined) {
      return mismatch(`no free shard for '${writerId}' in ${triesPerShard * shardsPerGroup} names`, shardsPerGroup)
    }
    names.push(chosen)
  }
  return names
}

const mismatch = (detail: string, shardsPerGroup: number): SpreadMismatch => ({
  _tag: "SpreadMismatch",
  message: `shardsPerGroup ${shardsPerGroup} is not the cluster's (${detail}): pass the ShardingConfig's shardsPerGroup`
})
