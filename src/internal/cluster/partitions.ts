/**
 * Partition writers on `effect/cluster` (DESIGN section 11, ADR 0034): one cluster singleton per source
 * partition, whose run is the partition's writer. Placement, shard locks and failover are `Sharding`'s; this
 * file only turns a singleton's life into a writer's:
 *
 * - start: resume from the checkpoint store (`writerId = name-partition`), run the source from the stored
 *   position into the partition's sink;
 * - shard moves away (the singleton is interrupted): end the source, so the sink sees the end of input and takes
 *   its final checkpoint, within `stopTimeout`, before `Sharding` releases the shard's lock; past it, interrupt
 *   (the writer then commits nothing and the next owner replays from the last checkpoint);
 * - `CheckpointConflict`: another owner advanced this writer, so this one was fenced; its writer has stopped
 *   without committing. Wait one shard lock refresh, so that `Sharding`'s view of the shard is newer than the
 *   fence: a zombie owner has lost the shard by then and is interrupted instead of restarting (a restart would
 *   claim the writer back from its new owner and commit the claimed checkpoint again). A live owner fenced by a
 *   zombie's claim still holds its shard and resumes from the store after `restartDelay`.
 * - any other failure: logged, and the partition restarts after `restartDelay` from its last checkpoint;
 * - every restart waits until this runner holds the partition's shard (one that lost it is being stopped);
 * - the source ends: the partition is complete and idles until its shard moves.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as EntityId from "effect/cluster/EntityId"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import * as Checkpoint from "../../Sink/Checkpoint.ts"
import type { CheckpointStore } from "../../Sink/CheckpointStore.ts"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as S from "../options/schema.ts"
import * as OwnSaves from "./ownSaves.ts"
import { spreadNames } from "./spread.ts"

/** The largest partition count: each partition is a singleton, a fiber and a writer on its owner. @internal */
export const MAX_PARTITIONS = 10_000

/** The defaults of the durations. @internal */
export const defaults = { restartDelay: Duration.seconds(5), stopTimeout: Duration.seconds(5) } as const

/** The scalar options, decoded. @internal */
export interface Settings {
  readonly name: string
  readonly partitions: number
  readonly restartDelay: Duration.Duration
  readonly stopTimeout: Duration.Duration
  readonly shardGroup: string | undefined
  readonly shardsPerGroup: number | undefined
}

const Name = S.Component.check(
  Schema.makeFilter((s: string) => /^[A-Za-z0-9_.:-]+$/.test(s), { rule: "must use only A-Z a-z 0-9 _ . : -" })
)

/** @internal */
export const SettingsSchema = Schema.Struct({
  name: S.requiredValue(Name),
  partitions: S.requiredValue(S.Int({ min: 1, max: MAX_PARTITIONS })),
  restartDelay: S.DurationSchema("positive").pipe(S.withDefault(defaults.restartDelay)),
  stopTimeout: S.DurationSchema("positive").pipe(S.withDefault(defaults.stopTimeout)),
  shardGroup: S.maybe(S.Component),
  shardsPerGroup: S.maybe(S.Int({ min: 1, max: 1_000_000 }))
})

/** Decodes the scalar options (the functions and the position schema are taken as given). @internal */
export const decodeSettings = (options: {
  readonly name: unknown
  readonly partitions: unknown
  readonly restartDelay?: unknown
  readonly stopTimeout?: unknown
  readonly shardGroup?: unknown
  readonly shardsPerGroup?: unknown
}): Effect.Effect<Settings, SinkConfigError> => {
  const input: Record<string, unknown> = { name: options.name, partitions: options.partitions }
  if (options.restartDelay !== undefined) input.restartDelay = options.restartDelay
  if (options.stopTimeout !== undefined) input.stopTimeout = options.stopTimeout
  if (options.shardGroup !== undefined) input.shardGroup = options.shardGroup
  if (options.shardsPerGroup !== undefined) input.shardsPerGroup = options.shardsPerGroup
  return S.decode(SettingsSchema)(input)
}

/** The writer id of a partition, stable wherever it runs: `name-partition`. @internal */
export const writerId = (name: string, partition: number): string => `${name}-${partition}`

/** The partitions `0 .. partitions - 1`. @internal */
export const indices = (partitions: number): ReadonlyArray<number> => Array.from({ length: partitions }, (_, i) => i)

/** A partition's writer, as its sink and source see it. @internal */
export interface Partition<P> {
  readonly name: string
  readonly partition: number
  readonly writerId: string
  readonly resume: Checkpoint.Resume<P>
}

/** How a run of a partition's writer ended, short of interruption. @internal */
export type Outcome =
  | { readonly _tag: "Completed" }
  | { readonly _tag: "Fenced"; readonly message: string }
  | { readonly _tag: "Failed"; readonly cause: Cause.Cause<unknown> }

const isConflict = (u: unknown): boolean => Predicate.isTagged(u, "CheckpointConflict")

/**
 * What a run's exit means: a `CheckpointConflict` anywhere in the cause is a fence (whatever else failed
 * with it), any other failure a failure; `undefined` for an interruption, which is not handled here.
 *
 * @internal
 */
export const classify = (cause: Cause.Cause<unknown>): Outcome | undefined => {
  for (const reason of cause.reasons) {
    if (Cause.isFailReason(reason) && isConflict(reason.error)) {
      return { _tag: "Fenced", message: String(reason.error) }
    }
  }
  return Cause.hasInterruptsOnly(cause) ? undefined : { _tag: "Failed", cause }
}

/** What {@link runPartition} needs beyond the settings. @internal */
export interface Behaviour<A, P, ES, RS, EK, RK> {
  readonly positionSchema: Schema.Codec<P, Schema.Json>
  readonly source: (partition: number, from: Option.Option<P>) => Stream.Stream<A, ES, RS>
  readonly sink: (partition: Partition<P>) => Sink.Sink<unknown, A, unknown, EK, RK>
}

/**
 * One run of a partition's writer: resume, then the source into the sink. Interrupted, it ends the source
 * instead, so the sink ends its input (final checkpoint), and waits up to `stopTimeout` for it, unless another
 * owner has checkpointed the partition since this run restored (`ownSaves.ts`): that final checkpoint would be
 * refused, and the wait would only keep the partition from its new owner.
 *
 * @internal
 */
export const runOnce = Effect.fnUntraced(
  function*<A, P, ES, RS, EK, RK>(settings: Settings, behaviour: Behaviour<A, P, ES, RS, EK, RK>, partition: number) {
    const id = writerId(settings.name, partition)
    const resumed = yield* Checkpoint.resume({ writerId: id, positionSchema: behaviour.positionSchema })
    const saves = OwnSaves.track(resumed.store, resumed.claimId)
    const resume: Checkpoint.Resume<P> = { ...resumed, store: saves.store }
    yield* Effect.logInfo("partition writer started").pipe(
      Effect.annotateLogs({ from: Option.isSome(resume.position) ? JSON.stringify(resume.position.value) : "start" })
    )
    const stop = yield* Deferred.make<void>()
    const sink = behaviour.sink({ name: settings.name, partition, writerId: id, resume })
    const fiber = yield* behaviour.source(partition, resume.position).pipe(
      Stream.interruptWhen(Deferred.await(stop)),
      Stream.run(sink),
      Effect.forkChild
    )
    yield* Fiber.join(fiber).pipe(Effect.onInterrupt(() => stopGracefully(settings, fiber, stop, saves, id)))
  },
  (effect, settings, _behaviour, partition) =>
    effect.pipe(Effect.withSpan("Partitions.run", {
      attributes: { "writer.id": writerId(settings.name, partition), "partition": partition }
    }))
)

/** Ends the run's input and waits for its final checkpoint: at most `stopTimeout`, and not once it is fenced. */
const stopGracefully = Effect.fnUntraced(function*(
  settings: Settings,
  fiber: Fiber.Fiber<unknown, unknown>,
  stop: Deferred.Deferred<void>,
  saves: OwnSaves.OwnSaves,
  id: string
) {
  yield* Effect.logInfo("partition moving away: ending its input for a final checkpoint")
  yield* Deferred.succeed(stop, undefined)
  const ended = yield* Effect.raceFirst(
    Effect.as(Fiber.await(fiber), "stopped" as const),
    Effect.as(OwnSaves.superseded(saves, id), "superseded" as const)
  ).pipe(Effect.timeoutOption(settings.stopTimeout))
  if (Option.isNone(ended)) {
    yield* Effect.logWarning(
      `partition writer did not stop within ${Duration.format(settings.stopTimeout)}: interrupted, no commit`
    )
  } else if (ended.value === "superseded") {
    yield* Effect.logWarning("another owner has checkpointed this partition since: interrupted, no final checkpoint")
  }
})

/**
 * What a partition's writer knows of its shard: whether this runner holds it, as of `Sharding`'s last lock
 * refresh, and how often that view is refreshed.
 *
 * @internal
 */
export interface ShardView {
  readonly held: () => boolean
  readonly refreshInterval: Duration.Duration
}

/**
 * Waits until a restart may claim the partition's writer: after a fence, one lock refresh first (the fence
 * proves another runner held the shard, and only a refresh begun since shows whether this one still does); then,
 * on any restart, until this runner holds the shard.
 */
const untilHeld = Effect.fnUntraced(function*(shard: ShardView, fenced: boolean) {
  if (fenced) yield* Effect.sleep(shard.refreshInterval)
  while (!shard.held()) yield* Effect.sleep(shard.refreshInterval)
})

/**
 * A partition's writer for as long as this runner owns it: runs, restarts after a fence or a failure (once the
 * runner is seen to hold the shard, {@link untilHeld}), idles once complete. Never fails; ends only by
 * interruption.
 *
 * @internal
 */
export const runPartition = <A, P, ES, RS, EK, RK>(
  settings: Settings,
  behaviour: Behaviour<A, P, ES, RS, EK, RK>,
  partition: number,
  shard: ShardView
): Effect.Effect<never, never, RS | RK | CheckpointStore> =>
  runOnce(settings, behaviour, partition).pipe(
    Effect.matchCauseEffect({
      onSuccess: () => Effect.as(Effect.logInfo("partition complete: its source ended"), "Completed" as const),
      onFailure: (cause) => {
        const outcome = classify(cause)
        // an interruption (the shard moved) passes through unchanged
        if (outcome === undefined) return Effect.failCause(cause)
        const logged = outcome._tag === "Fenced"
          ? Effect.logWarning(`partition writer fenced, stopped without committing: ${outcome.message}`)
          : Effect.logError("partition writer failed; restarting from its checkpoint", cause)
        return Effect.andThen(logged, Effect.as(untilHeld(shard, outcome._tag === "Fenced"), "Restart" as const))
      }
    }),
    // each restart is a new iteration of one loop, not a continuation nested in the previous run's handlers:
    // a partition fenced or failing for days keeps a constant stack
    Effect.repeat({ schedule: Schedule.spaced(settings.restartDelay), while: (next) => next === "Restart" }),
    Effect.andThen(Effect.never),
    Effect.orDie,
    Effect.annotateLogs({ partition, writerId: writerId(settings.name, partition) }),
    // the partition's life on this runner (one singleton), around each of its runs
    Effect.withSpan("Partitions.partition", {
      attributes: { "writer.id": writerId(settings.name, partition), "partition": partition }
    })
  )

/**
 * The singleton name of each partition: its writer id, or with `shardsPerGroup` a name that spreads the
 * partitions evenly over the group's shards (`spread.ts`), found with the runner's own shard hash.
 *
 * @internal
 */
export const singletonNames = (
  settings: Settings,
  shardOf: (name: string) => number
): Effect.Effect<ReadonlyArray<string>, SinkConfigError> => {
  const ids = indices(settings.partitions).map((p) => writerId(settings.name, p))
  if (settings.shardsPerGroup === undefined) return Effect.succeed(ids)
  const names = spreadNames(ids, settings.shardsPerGroup, shardOf)
  return "_tag" in names
    ? Effect.fail(new SinkConfigError({ path: "shardsPerGroup", detail: names.message }))
    : Effect.succeed(names)
}

/**
 * Registers one singleton per partition with `Sharding` (named by {@link singletonNames}); the registrations
 * last as long as the scope.
 *
 * @internal
 */
export const register = Effect.fnUntraced(function*<A, P, ES, RS, EK, RK>(
  settings: Settings,
  behaviour: Behaviour<A, P, ES, RS, EK, RK>
) {
  const sharding = yield* Sharding.Sharding
  // the cluster's lock refresh interval when its config is in context (`NodeClusterSocket.layer` keeps it to
  // itself), else `Sharding`'s default
  const config = yield* Effect.serviceOption(ShardingConfig.ShardingConfig)
  const refreshInterval = Duration.fromInputUnsafe(
    Option.isSome(config)
      ? config.value.shardLockRefreshInterval
      : ShardingConfig.defaults.shardLockRefreshInterval
  )
  const group = settings.shardGroup ?? "default"
  const names = yield* singletonNames(settings, (name) => sharding.getShardId(EntityId.make(name), group).id)
  for (const partition of indices(settings.partitions)) {
    const name = names[partition] ?? writerId(settings.name, partition)
    const shardId = sharding.getShardId(EntityId.make(name), group)
    yield* sharding.registerSingleton(
      name,
      runPartition(settings, behaviour, partition, { held: () => sharding.hasShardId(shardId), refreshInterval }),
      settings.shardGroup === undefined ? undefined : { shardGroup: settings.shardGroup }
    )
  }
})
