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
import { make as makeRng } from "../random.ts"
import {
  type Check,
  checkAtLeastOnce,
  checkExactlyOnce,
  checkLatency,
  checkSummary,
  checkThat,
  firstApplied,
  type MethodRun,
  type RunOptions
} from "../run.ts"
import { source } from "../source.ts"
import {
  checkpointedLife,
  checkpointStore,
  every,
  limits,
  liveWithoutCrashes,
  lowRateBound,
  lowRateOf,
  retryPolicy,
  sourcePlan,
  tuning
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

const routing = (routed: Array<number>) =>
  FailureHandler.deadLetter(
    Sink.forEach((f: BigtableFailure.FailedMutation) =>
      Effect.sync(() => {
        if (f.rowKey !== undefined) routed.push(idOfKey(new TextDecoder().decode(f.rowKey)))
      })
    )
  )

const setup = (seed: number, given: RunOptions, lowRate: boolean) => {
  const rng = makeRng(seed)
  const options = lowRate ? lowRateOf(rng, given) : given
  const world = new World({ rng, trace: options.trace })
  const sim = Bigtable.make(
    world,
    options.faults === false || options.lowRate === true ? Bigtable.noFaults : Bigtable.drawFaults(rng, 0.08)
  )
  const table = TableDestination.make({ projectId: "sim", instanceId: "i", tableId: "t" })
  return { rng, world, sim, table, options }
}

export const atLeastOnce: MethodRun = async (seed, given) => {
  const { options, rng, sim, table, world } = setup(seed, given, true)
  const plan = sourcePlan(rng, options)
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
  const method = WriteMethod.atLeastOnce(tuned)
  const routed: Array<number> = []
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      return yield* source(world, { ...plan, from: 0, emitted }).pipe(
        Stream.run(BigtableSink.make({
          table: yield* table,
          serializer,
          writeMethod: method,
          failureHandler: routing(routed)
        }))
      )
    }).pipe(Effect.provide(sim.layer(proc)))
  const result = await liveWithoutCrashes(world, rng, program, sim.calm, options)
  const checks: Array<Check> = [
    checkAtLeastOnce({
      total: plan.total,
      visible: applied(sim, plan.total),
      routed,
      ambiguous: new Set(sim.ambiguous.map(idOfKey)),
      restarts: result.restarts
    }),
    ...(options.lowRate === true ? [checkLatency({ emitted, applied: first.times, bound: lowRateBound })] : []),
    // `batchElementCount` (default 100) bounds the entries of a request
    checkThat(
      () => sim.stats.maxEntries <= (tuned.batchElementCount ?? 100),
      () =>
        `memory: a MutateRows of ${sim.stats.maxEntries} entries (batchElementCount ${tuned.batchElementCount ?? 100})`
    )
  ]
  return { world, result, checks }
}

export const exactlyOnce: MethodRun = async (seed, given) => {
  const { options, rng, sim, table, world } = setup(seed, given, false)
  const store = checkpointStore(world, rng, options)
  const plan = sourcePlan(rng, options)
  const checkpointEvery = every(rng, options)
  const method = WriteMethod.exactlyOnce({
    markerFamily: "m",
    ...tuning(options, () => ({
      maxInFlightRequests: rng.pick([undefined, rng.between(1, 20)]),
      maxStagedEntries: rng.pick([undefined, rng.between(1, 200)]),
      responseTimeout: Duration.millis(rng.between(200, 60_000))
    }))
  })
  const routed: Array<number> = []
  const lifePlan = checkpointedLife(rng, seed, options, plan)
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Number })
      const from = Option.getOrElse(resume.position, () => 0)
      world.trace(() => `${proc.name} resumes at ${from}`)
      const summary: WriteSummary = yield* source(world, { ...plan, from, until: proc.handedOver }).pipe(
        Stream.run(BigtableSink.make({
          table: yield* table,
          serializer,
          writeMethod: method,
          failureHandler: routing(routed),
          checkpoint: { resume, every: checkpointEvery, position: (row: Row) => row.id + 1 }
        }))
      )
      return { from, summary }
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
    checkExactlyOnce({ total: plan.total, visible, routed }),
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
