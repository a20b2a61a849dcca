/**
 * The Bigtable write methods under simulation: `BigtableSink.make` at least once (`MutateRows`) and
 * `BigtableSink.exactlyOnce` (staged entries committed by marker-guarded `CheckAndMutateRow` after
 * each checkpoint is saved), through the public API on `BigtableClient.fromClients` with the
 * simulated service. Each record adds 1 to the counter cell of its own row, so a row's sum is how
 * many times the record was applied.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import {
  type BigtableFailure,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../src/Bigtable/index.ts"
import { entryByteSize } from "../../../src/internal/bigtable/transport/mutationProto.ts"
import { Checkpoint, FailureHandler, type WriteSummary } from "../../../src/Sink.ts"
import * as Bigtable from "../bigtable.ts"
import { World } from "../kernel.ts"
import * as Life from "../life.ts"
import { make as makeRng, type Rng } from "../random.ts"
import {
  type ByProcess,
  type Check,
  checkAtLeastOnce,
  checkExactlyOnce,
  checkLatency,
  checkRouting,
  checkSummary,
  checkThat,
  firstApplied,
  type MethodRun,
  type RunOptions
} from "../run.ts"
import * as Schedules from "../schedules.ts"
import { source } from "../source.ts"
import {
  callerSchedules,
  checkpointedLife,
  checkpointStore,
  every,
  limits,
  liveWithoutCrashes,
  lowRateBound,
  lowRateOf,
  poisonMessage,
  poisonOf,
  refusedIds,
  retryPolicy,
  sourcePlan,
  sqlStoreRng,
  timedOf,
  tuning,
  widened
} from "./common.ts"

interface Row {
  readonly id: number
}

const rowKey = (id: number) => `r${id}`

const serializer = (row: Row) =>
  RowMutationEntry.make(
    rowKey(row.id),
    Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: 1n })
  )

/** {@link serializer}, throwing for the poison records (routed before they are sent or staged). */
const poisoned = (poison: ReadonlySet<number>) => (row: Row) => {
  if (poison.has(row.id)) throw new Error(poisonMessage(row.id))
  return serializer(row)
}

/** Each id repeated as many times as its row's counter says it was applied. */
const applied = (sim: Bigtable.BigtableSim, total: number): Array<number> => {
  const out: Array<number> = []
  for (let id = 0; id < total; id++) {
    const n = Number(sim.sums.get(`${rowKey(id)}|c|n`) ?? 0n)
    for (let i = 0; i < n; i++) out.push(id)
  }
  return out
}

const idOfKey = (key: string): number => Number(key.slice(1))

/** Routed entries by process and id: the row key's, else the id a poison record's message names (-1: neither). */
const routing = (proc: Life.SimProcess, routed: Array<ByProcess>) =>
  FailureHandler.deadLetter(
    Sink.forEach((f: BigtableFailure.FailedMutation) =>
      Effect.sync(() => {
        const id = f.rowKey !== undefined ? idOfKey(new TextDecoder().decode(f.rowKey)) : poisonOf(f.message) ?? -1
        routed.push({ proc: proc.name, id })
      })
    )
  )

/** Rows refused on every attempt: bad ones by the service, poison ones by the serializer. */
interface Refusals {
  readonly bad: ReadonlySet<number>
  readonly poison: ReadonlySet<number>
}

const routingChecked = (
  sim: Bigtable.BigtableSim,
  refusals: Refusals,
  routed: ReadonlyArray<ByProcess>,
  total: number,
  finished: unknown
): Check =>
  checkRouting({
    routed,
    refused: sim.refused.map((r) => ({ proc: r.proc.name, id: idOfKey(r.rowKey) })),
    poison: (id) => refusals.poison.has(id),
    alwaysRefused: (id) => refusals.poison.has(id) || refusals.bad.has(id),
    total,
    finished: (() => {
      const f = finished as { readonly proc?: string; readonly from?: number } | undefined
      return f?.proc === undefined || f.from === undefined ? undefined : { proc: f.proc, from: f.from }
    })()
  })

/**
 * Tables lost under the writer (`bigtable.atLeastOnce`, a seed in four of the widened ones): one
 * to three tables, written through a resolver, created under `CREATE_IF_NEEDED` with the counters'
 * aggregate family; each lost (deleted as a `MutateRows` arrives) at most `maxLosses` times, fewer
 * than the recovery budget, so each loss must be repaired. Half of them draw no other fault: the
 * write must then end without an error. A tenth of them are a burst of more entries than the
 * writer's queue holds (1,024): 1,100 to 1,400 in flight at once when a table goes missing.
 */
interface Losses {
  readonly tables: number
  readonly maxLosses: number
  readonly recoveryAttempts: number
  readonly repairOnly: boolean
  readonly burst: boolean
}

const drawLosses = (widen: Rng | undefined): Losses | undefined => {
  if (widen === undefined || !widen.chance(0.25)) return undefined
  const recoveryAttempts = widen.between(3, 8)
  return {
    tables: widen.between(1, 3),
    maxLosses: widen.between(1, recoveryAttempts - 1),
    recoveryAttempts,
    repairOnly: widen.chance(0.5),
    burst: widen.chance(0.1)
  }
}

const tableNameOf = (t: number) => `projects/sim/instances/i/tables/t${t}`

/**
 * The world, the service and the seed's drawn inputs. From the widened rng (`widened`): bad rows
 * (`bad`, for the at-least-once sink: exactly once commits them one by one and fails on a refusal
 * by design), their status fanned out to whole requests in half of those seeds; poison records;
 * lost tables (`losses`).
 */
const setup = (
  seed: number,
  given: RunOptions,
  lowRate: boolean,
  options: { readonly bad: boolean; readonly losses: boolean }
) => {
  const rng = makeRng(seed)
  const opts = lowRate ? lowRateOf(rng, given) : given
  const world = new World({ rng, trace: opts.trace })
  const widen = widened(seed, opts)
  const quiet = opts.faults === false || opts.lowRate === true
  const losses = options.losses && !quiet ? drawLosses(widen) : undefined
  const bad = new Set<number>()
  const fanOut = widen?.chance(0.5) ?? false
  // drawn as before the widened inputs (the same draws of the seed's rng), then perhaps set aside
  const drawn = quiet ? Bigtable.noFaults : Bigtable.drawFaults(rng, 0.08)
  const faults: Bigtable.Faults = quiet ? Bigtable.noFaults : {
    ...(losses?.repairOnly === true ? Bigtable.noFaults : drawn),
    bad: (key) => bad.has(idOfKey(key)),
    fanOut,
    ...(losses === undefined ? {} : { tableLoss: 0.2, maxLosses: losses.maxLosses })
  }
  const sim = Bigtable.make(
    world,
    faults,
    "sim",
    losses === undefined ? undefined : Array.from({ length: losses.tables }, (_, t) => tableNameOf(t))
  )
  const table = TableDestination.make({ projectId: "sim", instanceId: "i", tableId: "t" })
  /** Draws the refusals once the source is known. */
  const refusals = (total: number): Refusals => {
    if (quiet) return { bad, poison: new Set() }
    if (options.bad) { for (const id of refusedIds(widen, total, 0.3)) bad.add(id) }
    const poison = new Set([...refusedIds(widen, total, 0.2)].filter((id) => !bad.has(id)))
    return { bad, poison }
  }
  return { rng, world, sim, table, options: opts, widen, refusals, losses }
}

/** Where the at-least-once writer's records go: table `t`, or `t0..` through a resolver when tables are lost. */
const destinationsOf = (losses: Losses | undefined) =>
  losses === undefined
    ? Effect.map(TableDestination.make({ projectId: "sim", instanceId: "i", tableId: "t" }), (table) => ({ table }))
    : Effect.map(
      Effect.forEach(
        Array.from({ length: losses.tables }, (_, t) => t),
        (t) => TableDestination.make({ projectId: "sim", instanceId: "i", tableId: `t${t}` })
      ),
      (tables) => ({
        destinationResolver: (row: Row) => tables[row.id % tables.length] as TableDestination.TableDestination,
        createDisposition: "CREATE_IF_NEEDED" as const,
        tableCreateOptions: { columnFamilies: { c: { type: "INT64_SUM" as const } } }
      })
    )

export const atLeastOnce: MethodRun = async (seed, given) => {
  const { losses, options, refusals: drawRefusals, rng, sim, widen, world } = setup(seed, given, true, {
    bad: true,
    losses: true
  })
  const drawnPlan = sourcePlan(rng, options)
  const plan = losses?.burst === true && widen !== undefined
    ? { total: widen.between(1100, 1400), chunk: widen.between(200, 1400), gap: 0 }
    : drawnPlan
  const refusals = drawRefusals(plan.total)
  const emitted = new Map<number, number>()
  const first = firstApplied()
  sim.onApplied.push((key, at) => first.record(idOfKey(key), at))
  const tuned = tuning(options, () => ({
    batchElementCount: rng.pick([undefined, rng.between(1, 50)]),
    maxInFlightEntries: rng.pick([undefined, rng.between(1, 100)]),
    responseTimeout: Duration.millis(rng.between(200, 60_000)),
    retry: retryPolicy(rng),
    recovery: retryPolicy(rng)
  }))
  const schedules = Schedules.make(widen)
  const method = WriteMethod.atLeastOnce({
    ...tuned,
    // not the recovery of lost tables: its budget is what the repair invariant counts on
    ...callerSchedules(schedules, losses === undefined ? ["retry", "recovery"] : ["retry"]),
    ...(losses === undefined ? {} : {
      // each table lost fewer times than its recovery budget
      recovery: {
        ...(tuned.recovery ?? { initialBackoff: 500, maxBackoff: 10_000 }),
        maxAttempts: losses.recoveryAttempts
      },
      ...(losses.burst ? { maxInFlightEntries: plan.total } : {})
    })
  })
  const routed: Array<ByProcess> = []
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const destinations = yield* destinationsOf(losses)
      const summary = yield* source(world, { ...plan, from: 0, emitted }).pipe(
        Stream.run(BigtableSink.make({
          ...destinations,
          serializer: poisoned(refusals.poison),
          writeMethod: method,
          failureHandler: routing(proc, routed)
        }))
      )
      return { proc: proc.name, from: 0, summary }
    }).pipe(Effect.provide(sim.layer(proc)))
  const result = await liveWithoutCrashes(world, rng, program, sim.calm, options)
  const batchElementCount = tuned.batchElementCount ?? 100
  const checks: Array<Check> = [
    checkAtLeastOnce({
      total: plan.total,
      visible: applied(sim, plan.total),
      routed: routed.map((r) => r.id),
      ambiguous: new Set(sim.ambiguous.map(idOfKey)),
      restarts: result.restarts
    }),
    routingChecked(sim, refusals, routed, plan.total, result.value),
    schedules.check,
    ...(options.lowRate === true ? [checkLatency({ emitted, applied: first.times, bound: lowRateBound })] : []),
    // `batchElementCount` (default 100) bounds the entries of a request
    checkThat(
      () => sim.stats.maxEntries <= batchElementCount,
      () => `memory: a MutateRows of ${sim.stats.maxEntries} entries (batchElementCount ${batchElementCount})`
    ),
    // README: a missing table is repairable, "the sink creates the table ... then re-sends"
    ...(losses?.repairOnly === true
      ? [checkThat(
        () => result.errors.length === 0,
        () =>
          `repair: tables lost ${sim.lost.length} times (at most ${losses.maxLosses} each, recovery budget ` +
          `${losses.recoveryAttempts}) and nothing else went wrong, yet the writer failed: ${result.errors.join(", ")}`
      )]
      : [])
  ]
  return { world, result, checks }
}

export const exactlyOnce: MethodRun = async (seed, given) => {
  const timed = timedOf(seed, given)
  const { options, refusals: drawRefusals, rng, sim, table, widen, world } = setup(seed, timed.options, false, {
    bad: false,
    losses: false
  })
  const emitted = new Map<number, number>()
  const visibleAt = firstApplied()
  sim.onApplied.push((key, at) => visibleAt.record(idOfKey(key), at))
  const schedules = Schedules.make(widen)
  const store = checkpointStore(world, rng, options, { schedules, rng: widen, sql: sqlStoreRng(seed, options) })
  const plan = sourcePlan(rng, options)
  const refusals = drawRefusals(plan.total)
  const drawnEvery = every(rng, options)
  const checkpointEvery = timed.every === undefined ? drawnEvery : Duration.millis(timed.every)
  const method = WriteMethod.exactlyOnce({
    markerFamily: "m",
    ...tuning(options, () => ({
      maxInFlightRequests: rng.pick([undefined, rng.between(1, 20)]),
      maxStagedEntries: rng.pick([undefined, rng.between(1, 200)]),
      responseTimeout: Duration.millis(rng.between(200, 60_000))
    }))
  })
  const routed: Array<ByProcess> = []
  const lifePlan = checkpointedLife(rng, seed, options, plan)
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Number })
      const from = Option.getOrElse(resume.position, () => 0)
      world.trace(() => `${proc.name} resumes at ${from}`)
      const summary: WriteSummary = yield* source(world, { ...plan, from, emitted, until: proc.handedOver }).pipe(
        Stream.run(BigtableSink.make({
          table: yield* table,
          serializer: poisoned(refusals.poison),
          writeMethod: method,
          failureHandler: routing(proc, routed),
          checkpoint: { resume, every: checkpointEvery, position: (row: Row) => row.id + 1 }
        }))
      )
      return { proc: proc.name, from, summary }
    }).pipe(Effect.provide(Layer.merge(sim.layer(proc), store.layer(proc))))
  const result = await Life.live(
    world,
    lifePlan,
    program,
    () => {
      sim.calm()
      store.calm()
    },
    limits(options),
    store.watch
  )
  const visible = applied(sim, plan.total)
  const checks: Array<Check> = [
    checkExactlyOnce({ total: plan.total, visible, routed: routed.map((r) => r.id) }),
    routingChecked(sim, refusals, routed, plan.total, result.value),
    schedules.check,
    ...(timed.every === undefined ? [] : [checkLatency({
      emitted,
      applied: visibleAt.times,
      bound: timed.every + lowRateBound,
      what: `committed (a checkpoint every ${timed.every} ms)`
    })]),
    // the at-least-once sink's count of an entry's bytes: its serialized size, without the marker
    checkSummary({
      total: plan.total,
      visible,
      finished: result.value,
      sizeOf: (id) => entryByteSize(serializer({ id }))
    })
  ]
  return { world, result, checks }
}
