/**
 * The BigQuery write methods under simulation: `BigQuerySink.exactlyOnce` (BUFFERED streams, the
 * checkpoint protocol on the simulated store) and `BigQuerySink.make` at least once (`_default`),
 * each through the public API on `BigQueryClient.fromClients` with the simulated service.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import {
  BigQueryClient,
  type BigQueryFailure,
  BigQuerySink,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import { Checkpoint, FailureHandler, type WriteSummary } from "../../../src/Sink.ts"
import * as BigQuery from "../bigquery.ts"
import { World } from "../kernel.ts"
import * as Life from "../life.ts"
import { make as makeRng, type Rng } from "../random.ts"
import { type Check, checkAtLeastOnce, checkExactlyOnce, type MethodRun, type RunOptions } from "../run.ts"
import { idOf, source } from "../source.ts"
import * as Store from "../store.ts"
import { every, horizon, limits, retryPolicy, sourcePlan, storeFaults } from "./common.ts"

const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }
const table = "sim.d.t"

interface Row {
  readonly id: number
}

/** A request-size bound and an in-flight byte bound of one to six such requests. */
const byteBounds = (rng: Rng) => {
  const request = rng.pick([undefined, rng.between(64, 4096)])
  return {
    maxAppendRequestBytes: request,
    maxInFlightBytes: request === undefined ? undefined : request * rng.between(1, 6)
  }
}

/** Routed rows, by id, for the invariants. */
const routing = (routed: Array<number>) =>
  FailureHandler.deadLetter(
    Sink.forEach((f: BigQueryFailure.BigQueryFailure) =>
      Effect.sync(() => {
        if (f.payload !== undefined) routed.push(idOf(f.payload))
      })
    )
  )

const setup = (seed: number, options: RunOptions, rng: Rng) => {
  const world = new World({ rng, trace: options.trace })
  const faults = options.faults === false
    ? BigQuery.noFaults
    : BigQuery.drawFaults(rng, 0.08, options.spikeMillis ?? 400_000)
  const sim = BigQuery.make(world, faults)
  sim.createTable(table, [{ name: "id", type: "INTEGER", mode: "REQUIRED" }])
  void seed
  return { world, faults, sim }
}

export const exactlyOnce: MethodRun = async (seed, options) => {
  const rng = makeRng(seed)
  const { sim, world } = setup(seed, options, rng)
  const store = Store.make(world, storeFaults(rng, options))
  const plan = sourcePlan(rng, options)
  const checkpointEvery = every(rng)
  const method = WriteMethod.exactlyOnce({
    ...byteBounds(rng),
    retry: retryPolicy(rng),
    recovery: retryPolicy(rng)
  })
  const routed: Array<number> = []
  const lifePlan = Life.drawPlan(rng, options.life === false ? 0 : horizon(plan), { zombies: options.life !== false })
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromJson(schema)
      const destination = yield* TableDestination.make({ projectId: sim.projectId, datasetId: "d", tableId: "t" })
      const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Number })
      const from = Option.getOrElse(resume.position, () => 0)
      world.trace(() => `${proc.name} resumes at ${from}`)
      const summary: WriteSummary = yield* source(world, { ...plan, from }).pipe(
        Stream.run(BigQuerySink.exactlyOnce({
          table: destination,
          serializer,
          writeMethod: method,
          failureHandler: routing(routed),
          checkpoint: { resume, every: checkpointEvery, position: (row: Row) => row.id + 1 }
        }))
      )
      return { from, summary }
    }).pipe(Effect.provide(Layer.merge(BigQueryClient.fromClients(sim.clients(proc)), store.layer(proc))))
  const result = await Life.live(world, lifePlan, program, () => {
    sim.calm()
    store.calm()
  }, limits(options))
  const checks: Array<Check> = [
    checkExactlyOnce({
      total: plan.total,
      visible: sim.visible(table).map(idOf),
      routed
    })
  ]
  return { world, result, checks }
}

export const atLeastOnce: MethodRun = async (seed, options) => {
  const rng = makeRng(seed)
  const { sim, world } = setup(seed, options, rng)
  const plan = sourcePlan(rng, options)
  const method = WriteMethod.atLeastOnce({
    ...byteBounds(rng),
    maxInFlightRequests: rng.pick([undefined, rng.between(1, 10)]),
    responseTimeout: Duration.millis(rng.between(200, 60_000)),
    retry: retryPolicy(rng),
    recovery: retryPolicy(rng)
  })
  const routed: Array<number> = []
  // at least once has no store: a restart replays the whole source (nothing is lost, all is doubled)
  const lifePlan = Life.drawPlan(rng, 0, { zombies: false })
  const programOf = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromJson(schema)
      const destination = yield* TableDestination.make({ projectId: sim.projectId, datasetId: "d", tableId: "t" })
      return yield* source(world, { ...plan, from: 0 }).pipe(
        Stream.run(BigQuerySink.make({
          table: destination,
          serializer,
          writeMethod: method,
          failureHandler: routing(routed)
        }))
      )
    }).pipe(Effect.provide(BigQueryClient.fromClients(sim.clients(proc))))
  const result = await Life.live(world, lifePlan, programOf, () => sim.calm(), limits(options))
  const checks: Array<Check> = [
    checkAtLeastOnce({
      total: plan.total,
      visible: sim.visible(table).map(idOf),
      routed,
      ambiguous: new Set(sim.ambiguous.map(idOf)),
      restarts: result.restarts
    })
  ]
  return { world, result, checks }
}
