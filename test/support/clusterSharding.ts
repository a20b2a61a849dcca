/**
 * `Sharding` for a runner process on loopback, as the cluster proof's runners and the demo's run it:
 * `NodeClusterSocket` with shard locks in PostgreSQL (`storage: "sql"` over `PgClient`), every setting
 * passed explicitly (the layer would otherwise read `HOST`, `PORT`, ... from the environment;
 * `RunnerAddress.make` is positional).
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import { PgClient } from "@effect/sql-pg"
import { Duration, Layer, Option } from "effect"
import { RunnerAddress } from "effect/cluster"

export interface ShardingOptions {
  readonly runnerPort: number
  readonly postgres: { readonly host: string; readonly port: number }
  readonly lockExpirationMillis: number
  readonly lockRefreshMillis: number
  /** The runner's PostgreSQL session name (seen in `pg_stat_activity`). */
  readonly applicationName: string
  /** Shards per group (default 300); `Partitions.layer`'s `shardsPerGroup` must be the same to spread partitions. */
  readonly shardsPerGroup?: number | undefined
}

export const shardingOverPostgres = (options: ShardingOptions) => {
  const address = Option.some(RunnerAddress.make("127.0.0.1", options.runnerPort))
  return NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: {
      runnerAddress: address,
      runnerListenAddress: address,
      shardsPerGroup: options.shardsPerGroup ?? 300,
      availableShardGroups: ["default"],
      assignedShardGroups: ["default"],
      shardLockExpiration: Duration.millis(options.lockExpirationMillis),
      shardLockRefreshInterval: Duration.millis(options.lockRefreshMillis),
      refreshAssignmentsInterval: Duration.seconds(1)
    }
  }).pipe(
    Layer.provide(PgClient.layer({
      host: options.postgres.host,
      port: options.postgres.port,
      database: "postgres",
      username: "postgres",
      applicationName: options.applicationName
    }))
  )
}
