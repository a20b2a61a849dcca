/** What the simulated methods share: drawn retry budgets, the run's limits, the store's faults. */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type { CheckpointStore, RetryPolicy } from "../../../src/Sink.ts"
import * as FileSystem from "../fileSystem.ts"
import * as Gcs from "../gcs.ts"
import type { Process, World } from "../kernel.ts"
import * as Life from "../life.ts"
import * as Ownership from "../ownership.ts"
import { make as makeRng, type Rng } from "../random.ts"
import type { RunOptions } from "../run.ts"
import type * as Schedules from "../schedules.ts"
import type { SourcePlan } from "../source.ts"
import * as SqlDatabase from "../sqlDatabase.ts"
import * as Store from "../store.ts"

/** A retry or recovery budget drawn from the seed. */
export const retryPolicy = (rng: Rng) => ({
  initialBackoff: Duration.millis(rng.between(1, 200)),
  maxBackoff: Duration.millis(rng.between(200, 5000)),
  maxAttempts: rng.between(2, 10)
})

/** Two days of virtual time, five million steps: past either, the run hangs. */
export const limits = (options: RunOptions) => ({ maxTime: options.maxTime ?? 48 * 3_600_000, maxSteps: 5_000_000 })

export const sourcePlan = (rng: Rng, options: RunOptions): SourcePlan =>
  options.source ?? { total: rng.between(1, 300), chunk: rng.between(1, 25), gap: rng.pick([0, 0, 1, 10, 100]) }

/** How long the writer's source runs, roughly: the window crashes and zombies are drawn in. */
export const horizon = (plan: SourcePlan): number => Math.max(1, plan.total / plan.chunk) * (plan.gap + 20) + 200

/**
 * The life of a checkpointed writer: crashes, a zombie and a handover within the source's horizon
 * (none with `life: false`; no handover with `handovers: false`). The handover draws from an rng of
 * its own, derived from the seed, so a seed's other draws are what they were before handovers.
 */
export const checkpointedLife = (rng: Rng, seed: number, options: RunOptions, plan: SourcePlan): Life.LifePlan => {
  const life = Life.drawPlan(rng, options.life === false ? 0 : horizon(plan), {
    zombies: options.life !== false,
    handovers: options.handovers === false ? undefined : makeRng((seed ^ 0x68616e64) >>> 0)
  })
  // a seed in four of the widened ones: each crash takes the machine down (a power loss), from an
  // rng of its own so that the method's other widened draws stay what they are
  const machine = options.widen !== false && makeRng((seed ^ 0x6d616368) >>> 0).chance(0.25)
  return machine ? { ...life, machine } : life
}

/**
 * The writer's checkpoint store, drawn per seed: `CheckpointStore.gcs`'s own code on simulated
 * Cloud Storage, `CheckpointStore.file`'s on a simulated file system, or the compare-and-set memory
 * store's code behind a faulty network; each watched by {@link Ownership} (the life's `Watch`). Widened: a caller's reading `retry` schedule for the GCS
 * store; for the file store, in three seeds in ten, the call after the first `mkdir` that creates a
 * directory fails (a first save that fails after its `mkdir`). A quarter of the seeds given an SQL
 * rng ({@link sqlStoreRng}) take `CheckpointStore.sql`'s code on a simulated database instead,
 * drawn after the other stores were (so every draw of the seed but the store's is what it was).
 */
export const checkpointStore = (
  world: World,
  rng: Rng,
  options: RunOptions,
  widened: {
    readonly schedules?: Schedules.CallerSchedules
    readonly rng?: Rng | undefined
    readonly sql?: Rng | undefined
  } = {}
): {
  readonly layer: (proc: Process) => Layer.Layer<CheckpointStore>
  readonly calm: () => void
  readonly watch: Life.Watch
} => {
  const others = drawStore(world, rng, options, widened)
  const drawn = widened.sql?.chance(0.25) === true ? sqlStore(world, widened.sql, options) : others
  const ownership = Ownership.make(world)
  return { layer: (proc) => ownership.watched(proc, drawn.layer(proc)), calm: drawn.calm, watch: ownership }
}

/**
 * The rng of the SQL store's draw and of its database (a quarter of the seeds take it), of its own
 * (derived from the seed); `undefined` with `sqlStore: false` or `widen: false` (the regression seeds
 * found before it keep the store they were found with).
 */
export const sqlStoreRng = (seed: number, options: RunOptions): Rng | undefined =>
  options.sqlStore === false || options.widen === false ? undefined : makeRng((seed ^ 0x73716c21) >>> 0)

const sqlStore = (world: World, rng: Rng, options: RunOptions) => {
  const faults = SqlDatabase.drawFaults(rng, options.faults === false ? 0 : 0.1)
  const database = SqlDatabase.make(world, rng.fork(), faults)
  return { layer: database.store, calm: database.calm }
}

const drawStore = (
  world: World,
  rng: Rng,
  options: RunOptions,
  widened: { readonly schedules?: Schedules.CallerSchedules; readonly rng?: Rng | undefined }
): { readonly layer: (proc: Process) => Layer.Layer<CheckpointStore>; readonly calm: () => void } => {
  const faulty = options.faults !== false
  const kind = rng.int(3)
  if (kind === 0) {
    const gcs = Gcs.make(world, faulty ? Gcs.drawFaults(rng, 0.1) : Gcs.drawFaults(rng, 0))
    const retry = widened.schedules?.draw("CheckpointStore.gcs retry")
    return { layer: (proc) => gcs.store(proc, retry), calm: gcs.calm }
  }
  if (kind === 1) {
    const drawn = FileSystem.drawFaults(rng, faulty ? 0.1 : 0)
    const aimed = faulty && widened.rng?.chance(0.3) === true
    const fs = FileSystem.make(world, aimed ? { ...drawn, failAfterFirstMkdir: true } : drawn, {
      directory: "/data/checkpoints",
      exists: rng.chance(0.5)
    })
    return { layer: fs.store, calm: fs.calm }
  }
  const store = Store.make(world, {
    latency: [1, rng.between(2, 30)],
    failBeforeSave: !faulty || rng.chance(0.5) ? 0 : rng.next() * 0.1,
    lostAfterSave: !faulty || rng.chance(0.5) ? 0 : rng.next() * 0.1
  })
  return { layer: store.layer, calm: store.calm }
}

/**
 * The rng of the inputs drawn since issue 36, of its own (derived from the seed), so that every
 * earlier draw of a seed stays what it was; `undefined` with `widen: false` (each such input off).
 */
export const widened = (seed: number, options: RunOptions): Rng | undefined =>
  options.widen === false ? undefined : makeRng((seed ^ 0x77696465) >>> 0)

/**
 * Ids of `0..total-1` refused on every attempt, drawn for a fraction of the seeds (`chance`): each
 * id with a drawn rate of up to `maxRate` (5%); none without an rng.
 */
export const refusedIds = (
  rng: Rng | undefined,
  total: number,
  chance: number,
  maxRate = 0.05
): ReadonlySet<number> => {
  if (rng === undefined || !rng.chance(chance)) return new Set()
  const rate = rng.next() * maxRate
  const ids = new Set<number>()
  for (let id = 0; id < total; id++) if (rng.chance(rate)) ids.add(id)
  return ids
}

/** The message a poison record's user code throws with: the record's id, so that its routing is known by identity. */
export const poisonMessage = (id: number): string => `poison record ${id}`

/** The id a routed record's message names (`poisonMessage`), if any. */
export const poisonOf = (message: string): number | undefined => {
  const m = /poison record (\d+)/.exec(message)
  return m === null ? undefined : Number(m[1])
}

/** The options `names` a caller's reading schedule replaces, as a write method's options. */
export const callerSchedules = (
  schedules: Schedules.CallerSchedules,
  names: ReadonlyArray<string>
): Record<string, RetryPolicy> => {
  const out: Record<string, RetryPolicy> = {}
  for (const name of names) {
    const policy = schedules.draw(name)
    if (policy !== undefined) out[name] = policy
  }
  return out
}

/** A checkpoint interval (swarm: every record, every few, many, or a duration; else 10 records). */
export const every = (rng: Rng, options: RunOptions): number | Duration.Duration =>
  options.swarm === true
    ? rng.pick<number | Duration.Duration>([1, 5, rng.between(2, 100), Duration.millis(rng.between(10, 2000))])
    : 10

/** Tuning drawn in swarm mode; the library's defaults (none given) otherwise. */
export const tuning = <A extends object>(options: RunOptions, draw: () => A): Partial<A> =>
  options.swarm === true ? draw() : {}

/** "Sent within about one round trip (under a second)": the documented bound of a record at a low rate. */
export const lowRateBound = 1000

/** One seed in five of an at-least-once method (unless the caller chose) runs a slow source without faults. */
export const lowRateOf = (rng: Rng, options: RunOptions): RunOptions => {
  const lowRate = options.lowRate ?? (options.source === undefined && rng.chance(0.2))
  return lowRate
    ? {
      ...options,
      lowRate,
      source: options.source ?? { total: rng.between(2, 12), chunk: 1, gap: rng.between(1000, 5000) }
    }
    : options
}

/**
 * A timed checkpoint (`every` a duration) of an exactly-once method: in a tenth of the widened seeds
 * (from an rng of their own, drawn before anything else), a slow source without faults, crashes or
 * handovers, checkpointing every 100 ms to 3 s. The docs' "records become visible at checkpoints ...
 * latency is bounded by `every`": each record must be visible within `every` and a second of
 * leaving the source (the drain, the save and the commit's round trips).
 */
export const timedOf = (
  seed: number,
  options: RunOptions
): { readonly options: RunOptions; readonly every: number | undefined } => {
  if (options.widen === false || options.source !== undefined) return { options, every: undefined }
  const rng = makeRng((seed ^ 0x74696d65) >>> 0)
  if (!rng.chance(0.1)) return { options, every: undefined }
  return {
    options: {
      ...options,
      faults: false,
      life: false,
      source: { total: rng.between(2, 12), chunk: 1, gap: rng.between(1000, 5000) }
    },
    every: rng.between(100, 3000)
  }
}

/** The life of an at-least-once writer: no store to restart from, so no planned crash (a typed error still restarts it). */
export const liveWithoutCrashes = (
  world: World,
  rng: Rng,
  program: (proc: Life.SimProcess) => Effect.Effect<unknown, unknown>,
  calm: () => void,
  options: RunOptions
): Promise<Life.LifeResult> =>
  Life.live(world, Life.drawPlan(rng, 0, { zombies: false }), program, calm, limits(options))
