/**
 * Partition writers as `effect/cluster` singletons: one per source partition, run by whichever runner owns
 * its shard, with the writer id `name-partition` wherever it runs.
 *
 * @since 0.1.0
 */
import type { Sharding } from "effect/cluster/Sharding"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type { Scope } from "effect/Scope"
import type * as Sink from "effect/Sink"
import type * as Stream from "effect/Stream"
import * as internal from "../internal/cluster/partitions.ts"
import type * as Checkpoint from "../Sink/Checkpoint.ts"
import type { CheckpointStore } from "../Sink/CheckpointStore.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"

/**
 * One partition's writer, as its `sink` sees it: the partition, its stable writer id and where it resumes.
 *
 * **Details**
 *
 * `resume` was read from the `CheckpointStore` by this owner just now; hand it to an exactly-once sink
 * (`checkpoint: { resume, position }`). An at-least-once sink may ignore it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Partition<P> {
  readonly name: string
  readonly partition: number
  readonly writerId: string
  readonly resume: Checkpoint.Resume<P>
}

/**
 * Options of {@link layer}.
 *
 * - `name`: the job's name (`A-Z a-z 0-9 _ . : -`); partition `i`'s writer id and singleton name are
 *   `name-i`. Every runner registers the same name and partition count.
 * - `partitions`: how many source partitions, 1 to 10,000.
 * - `positionSchema`: the `Schema` of source positions, stored as JSON in the checkpoint record.
 * - `source(partition, from)`: the partition's records from `from` (none: from its beginning). It must
 *   replay: records after the last checkpoint are read again by the next owner.
 * - `sink(partition)`: the partition's sink, built on each (re)start with that start's `resume`.
 * - `restartDelay` (default 5 seconds): the wait before a partition writer that was fenced or failed resumes
 *   again from the store (a fenced one waits one shard lock refresh before it).
 * - `stopTimeout` (default 5 seconds): how long a writer whose shard moves away may take to end its input and
 *   take its final checkpoint before it is interrupted. A moved partition waits for it: keep it at most half
 *   the cluster's shard lock expiry, so that a graceful move is not slower than a crash's failover.
 * - `shardGroup` (default `Sharding`'s `"default"`): the shard group of the singletons.
 * - `shardsPerGroup` (optional): the cluster's `ShardingConfig.shardsPerGroup`. Given, each partition's singleton
 *   is named so that the partitions fill the group's shards evenly (the writer id, which names the checkpoints, is
 *   unchanged); with `shardsPerGroup` equal to `partitions` (or a divisor of it), `Sharding`'s balanced shard
 *   assignment gives every runner the same number of partitions, within one. Without it, partitions hash onto
 *   shards at random and a few partitions spread unevenly (twelve on three runners: anywhere from 4/4/4 to 6/5/1).
 *
 * @category models
 * @since 0.1.0
 */
export interface PartitionsOptions<A, P, ES, RS, EK, RK> {
  readonly name: string
  readonly partitions: number
  readonly positionSchema: Schema.Codec<P, Schema.Json>
  readonly source: (partition: number, from: Option.Option<P>) => Stream.Stream<A, ES, RS>
  readonly sink: (partition: Partition<P>) => Sink.Sink<unknown, A, unknown, EK, RK>
  readonly restartDelay?: Duration.Input | undefined
  readonly stopTimeout?: Duration.Input | undefined
  readonly shardGroup?: string | undefined
  readonly shardsPerGroup?: number | undefined
}

/**
 * The writer id of a partition: `name-partition`, the same on every runner.
 *
 * **Example** (The third partition's writer id)
 * ```ts
 * import { Partitions } from "effect-gcp-sinks/Cluster"
 * Partitions.writerId("orders", 2) // => "orders-2"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const writerId: (name: string, partition: number) => string = internal.writerId

/**
 * Registers one cluster singleton per partition; the runner owning a partition's shard runs its writer.
 *
 * **When to use**
 *
 * When one process is no longer enough for a partitioned source: start the same layer on every runner of an
 * `effect/cluster` cluster, and `Sharding` places the partitions, moves them off a runner that stops or dies
 * (once its shard locks expire) and onto runners that join.
 *
 * **Details**
 *
 * On the owning runner, a partition's writer reads its checkpoint (`Checkpoint.resume` with writer id
 * `name-partition`), runs `source(partition, position)` into `sink(partition)`, and:
 *
 * - when its shard moves away, ends the source so the sink takes its final checkpoint (up to `stopTimeout`,
 *   while this runner still holds the shard's lock), then stops; at once if another owner has checkpointed the
 *   partition since this run restored (this runner lost the lock: its final checkpoint would be refused);
 * - when the sink fails with `CheckpointConflict` (another owner advanced the same writer: this one was
 *   fenced and its writer stopped without committing), waits one shard lock refresh
 *   (`ShardingConfig.shardLockRefreshInterval` if in context, else `Sharding`'s default), then `restartDelay`,
 *   and resumes from the store. A stale owner has lost its shard by then and is interrupted by `Sharding`
 *   without claiming the writer back; a current owner that a stale one fenced takes over again;
 * - on any other failure, logs it and resumes after `restartDelay` (the source replays from the checkpoint);
 *   a restart waits until this runner holds the partition's shard;
 * - when the source ends, idles until its shard moves.
 *
 * Exactly once relies on the checkpoint store's compare-and-set, not on `Sharding`: two runners may run a
 * partition at once (a paused process, a lock that expired under it), and only one of them commits. The
 * library needs `Sharding` only, so any runner storage works (`SqlRunnerStorage` through `@effect/sql-pg`,
 * for example); it never imports a database driver. Settings are validated when the layer is built. Each
 * partition's life on a runner is a `Partitions.partition` span, each run a `Partitions.run` span.
 *
 * **Example** (Partitions of a replayable source into an at-least-once sink)
 * ```ts
 * import { Effect, Option, Schema, Sink, Stream } from "effect"
 * import { Partitions } from "effect-gcp-sinks/Cluster"
 * const writers = Partitions.layer({
 *   name: "events",
 *   partitions: 8,
 *   positionSchema: Schema.Number,
 *   source: (partition, from) => Stream.range(Option.getOrElse(from, () => 0), 99).pipe(Stream.map((n) => ({ partition, n }))),
 *   sink: ({ writerId }) => Sink.forEach((row: { readonly n: number }) => Effect.logDebug(`${writerId}: ${row.n}`))
 * })
 * ```
 *
 * @see {@link Partition} for what each sink is given
 * @category layers
 * @since 0.1.0
 */
export const layer = <A, P, ES, RS, EK, RK>(
  options: PartitionsOptions<A, P, ES, RS, EK, RK>
): Layer.Layer<never, SinkConfigError, Sharding | CheckpointStore | Exclude<RS | RK, Scope>> =>
  Layer.effectDiscard(
    Effect.flatMap(
      internal.decodeSettings(options),
      (settings) => internal.register(settings, options)
    )
  )

/**
 * The defaults of {@link PartitionsOptions}' durations.
 *
 * @category configuration
 * @since 0.1.0
 */
export const defaults: { readonly restartDelay: Duration.Duration; readonly stopTimeout: Duration.Duration } =
  internal.defaults
