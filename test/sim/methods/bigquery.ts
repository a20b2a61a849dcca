/**
 * The BigQuery write methods under simulation: `BigQuerySink.exactlyOnce` (BUFFERED streams, the
 * checkpoint protocol on the simulated store), `BigQuerySink.make` at least once (`_default`) and
 * `BigQuerySink.fileLoads` (Avro files staged in simulated Cloud Storage, load jobs at checkpoints),
 * each through the public API on `BigQueryClient.fromClients` (and `GcsClient.fromStorage`) with the
 * simulated services.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import {
  BigQueryClient,
  type BigQueryFailure,
  BigQuerySink,
  type Cdc,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import { Checkpoint, FailureHandler, GcsClient, type WriteSummary } from "../../../src/Sink.ts"
import * as BigQuery from "../bigquery.ts"
import * as FileLoads from "../fileLoads.ts"
// the file-loads writer is loaded on first use (its Avro and Cloud Storage packages are optional peers):
// loaded here, its import resolves at once inside a run, as every other step of the simulation
import * as FileLoadsWriter from "../../../src/internal/bigquery/fileLoads/writer.ts"
import * as Gcs from "../gcs.ts"
import { type Process, World } from "../kernel.ts"
import * as Life from "../life.ts"
import { make as makeRng, rate, type Rng } from "../random.ts"
import {
  type ByProcess,
  type Check,
  checkAtLeastOnce,
  checkExactlyOnce,
  checkLatency,
  checkRouting,
  checkSummary,
  firstApplied,
  type MethodRun,
  type RunOptions
} from "../run.ts"
import * as Schedules from "../schedules.ts"
import { idOf, source, type SourcePlan } from "../source.ts"
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

const schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }
const table = "sim.d.t"

interface Row {
  readonly id: number
}

/** A row's serialized size: the tag of field 1 and the id as a varint. */
const rowBytes = (id: number): number => {
  let size = 2
  for (let v = id; v >= 0x80; v = Math.floor(v / 0x80)) size++
  return size
}

/** A request-size bound and an in-flight byte bound of one to six such requests. */
const byteBounds = (rng: Rng) => {
  const request = rng.pick([undefined, rng.between(64, 4096)])
  return {
    maxAppendRequestBytes: request,
    maxInFlightBytes: request === undefined ? undefined : request * rng.between(1, 6)
  }
}

/** Swarm tuning of the `_default` stream writer: request and in-flight bounds, deadline, budgets. */
const atLeastOnceTuning = (rng: Rng) => ({
  ...byteBounds(rng),
  maxInFlightRequests: rng.pick([undefined, rng.between(1, 10)]),
  responseTimeout: Duration.millis(rng.between(200, 60_000)),
  retry: retryPolicy(rng),
  recovery: retryPolicy(rng)
})

/** Every AppendRows call of a process that ended (not killed) was closed. */
const released = (sim: BigQuery.BigQuerySim, result: Life.LifeResult): Check => () =>
  result.exited.flatMap((p) => {
    const open = sim.openOf(p)
    return open === 0 ? [] : [`leak: ${p.name} ended with ${open} AppendRows call(s) open`]
  })

/**
 * How the dead-letter sink consumes what it is given (drawn in swarm mode): everything; two failures
 * per run (the handler runs it again on the rest); or nothing (the write must fail with
 * `DeadLetterStalled`, which a restart repairs, instead of spinning).
 */
type Consumes = "all" | "some" | "none"

/**
 * The id of a routed record: its row's, or, for a record routed before it was serialized (a poison
 * record), the one its message names; -1 for neither (a routing no refusal explains).
 */
const routedId = (f: BigQueryFailure.BigQueryFailure): number =>
  f.payload !== undefined ? idOf(f.payload) : poisonOf(f.message) ?? -1

/** Routed rows, by process and id, for the invariants. */
const routing = (proc: Life.SimProcess, routed: Array<ByProcess>, consumes: Consumes = "all") => {
  const record = (fs: ReadonlyArray<BigQueryFailure.BigQueryFailure>) =>
    Effect.sync(() => {
      for (const f of fs) routed.push({ proc: proc.name, id: routedId(f) })
    })
  return FailureHandler.deadLetter(
    consumes === "all"
      ? Sink.forEach((f: BigQueryFailure.BigQueryFailure) => record([f]))
      : consumes === "some"
      ? Sink.take<BigQueryFailure.BigQueryFailure>(2).pipe(Sink.mapEffect(record))
      : Sink.fromEffect(Effect.void)
  )
}

/** Routing by destination: each row in the table its record resolved to (`visibleIn[t]`: table `t`'s ids). */
const inTheirTables = (visibleIn: ReadonlyArray<ReadonlyArray<number>>, tableOf: (id: number) => number): Check => () =>
  visibleIn.flatMap((list, t) =>
    list.filter((id) => tableOf(id) !== t).slice(0, 3).map((id) =>
      `routing: row ${id} is in table t${t}, its record resolved to t${tableOf(id)}`
    )
  )

/** The ids of routed records (for the visibility invariants). */
const ids = (routed: ReadonlyArray<ByProcess>): Array<number> => routed.map((r) => r.id)

/**
 * Records refused on every attempt, drawn from the seed's own rng (`widened`): bad rows the service
 * answers with a row error wherever they go, and poison records whose user code throws (the
 * serializer's, in place or not: routed before admission).
 */
interface Refusals {
  readonly bad: Set<number>
  readonly poison: Set<number>
  /**
   * Records whose user code failed in one process only (flaky user code: a lookup that failed
   * there), by process: the processes route different records, so a zombie's rows at an offset
   * are not its successor's.
   */
  readonly flaky: Map<string, ReadonlySet<number>>
  /** The poison records' serializer throws inside `encodeInto` (in place) or returns a `RowSerializationError`. */
  inPlace: boolean
}

const noRefusals = (): Refusals => ({ bad: new Set(), poison: new Set(), flaky: new Map(), inPlace: true })

/** The records `proc`'s user code refuses: the poison ones and its flaky ones. */
const refusedBy = (refusals: Refusals, proc: string): (id: number) => boolean => {
  const flaky = refusals.flaky.get(proc)
  return flaky === undefined ? (id) => refusals.poison.has(id) : (id) => refusals.poison.has(id) || flaky.has(id)
}

/**
 * Draws the flaky records of each process (`refusals.flaky`) in a third of the seeds, each process
 * from an rng of its own forked when it starts; none without the widened rng.
 */
const flakyPerProcess = (refusals: Refusals, widen: Rng | undefined, total: number) => {
  const flakyRate = widen?.chance(1 / 3) === true ? widen.next() * 0.03 : 0
  return (proc: string): (id: number) => boolean => {
    if (flakyRate > 0 && widen !== undefined && !refusals.flaky.has(proc)) {
      const own = widen.fork()
      const flaky = new Set<number>()
      for (let id = 0; id < total; id++) if (own.chance(flakyRate)) flaky.add(id)
      refusals.flaky.set(proc, flaky)
    }
    return refusedBy(refusals, proc)
  }
}

/**
 * Draws the refusals of a source of `total` records into `into` (none without the widened rng, nor
 * without faults: `into` undefined); bad rows only with `badChance`.
 */
const drawRefusals = (
  into: Refusals | undefined,
  widen: Rng | undefined,
  total: number,
  chances: { readonly bad?: number; readonly poison?: number; readonly maxRate?: number } = {}
): Refusals => {
  if (into === undefined) return noRefusals()
  for (const id of refusedIds(widen, total, chances.bad ?? 0.3)) into.bad.add(id)
  for (const id of refusedIds(widen, total, chances.poison ?? 0.2, chances.maxRate)) {
    if (!into.bad.has(id)) into.poison.add(id)
  }
  into.inPlace = widen?.chance(0.5) ?? true
  return into
}

/** `serializer` whose user code fails for the poison records (with their id in the message). */
const poisoned = (
  serializer: RowSerializer.RowSerializer<Row>,
  poison: ReadonlySet<number> | ((id: number) => boolean),
  inPlace: boolean
): RowSerializer.RowSerializer<Row> => {
  if (typeof poison !== "function" && poison.size === 0) return serializer
  const refused = typeof poison === "function" ? poison : (id: number) => poison.has(id)
  return inPlace
    ? RowSerializer.contramap(serializer, (row: Row) => {
      if (refused(row.id)) throw new Error(poisonMessage(row.id))
      return row
    })
    : {
      tableSchema: serializer.tableSchema,
      serialize: (row, destination) =>
        refused(row.id)
          ? new RowSerializer.RowSerializationError({ path: "", reason: poisonMessage(row.id) })
          : serializer.serialize(row, destination)
    }
}

/** The routing invariant of a method: the refusals the service delivered and the sink's own. */
const routingChecked = (
  sim: BigQuery.BigQuerySim,
  refusals: Refusals,
  routed: ReadonlyArray<ByProcess>,
  total: number,
  finished: unknown
): Check =>
  checkRouting({
    routed,
    refused: sim.refused.map((r) => ({ proc: r.proc.name, id: idOf(r.row) })),
    poison: (id, proc) => refusedBy(refusals, proc)(id),
    alwaysRefused: (id) => refusals.poison.has(id) || refusals.bad.has(id),
    total,
    finished: finishedBy(finished)
  })

/** The process that finished and its start position, from its program's value. */
const finishedBy = (value: unknown): { readonly proc: string; readonly from: number } | undefined => {
  const f = value as { readonly proc?: string; readonly from?: number } | undefined
  return f?.proc === undefined || f.from === undefined ? undefined : { proc: f.proc, from: f.from }
}

const columns = [{ name: "id", type: "INTEGER", mode: "REQUIRED" }]

/**
 * The world and the service; table `t` exists unless `withTable` is false (the caller decides
 * later). The refusals are drawn by the caller once it knows its source (the service reads them
 * when rows arrive); from the widened rng, a seed in three reports row errors before the offset check.
 */
const setup = (options: RunOptions, rng: Rng, seed: number, withTable = true) => {
  const world = new World({ rng, trace: options.trace })
  const widen = widened(seed, options)
  const refusals = noRefusals()
  const quiet = options.faults === false || options.lowRate === true
  const faults: BigQuery.Faults = quiet ? BigQuery.noFaults : {
    ...BigQuery.drawFaults(rng, 0.08, options.spikeMillis ?? 400_000),
    bad: (row) => refusals.bad.has(idOf(row)),
    rowErrorsFirst: widen?.chance(1 / 3) ?? false
  }
  const sim = BigQuery.make(world, faults)
  if (withTable) sim.createTable(table, columns)
  return { world, faults, sim, widen, refusals: quiet ? undefined : refusals }
}

/**
 * One process of a checkpointed writer on table `t`: resumes from the store, replays the source from
 * the stored position into the sink `sinkOf` builds, and returns where it started and its summary.
 */
const resumed = <E, R>(
  world: World,
  proc: Life.SimProcess,
  plan: SourcePlan & { readonly emitted?: Map<number, number> },
  sinkOf: (o: {
    readonly table: TableDestination.TableDestination
    readonly serializer: RowSerializer.RowSerializer<Row>
    readonly checkpoint: { readonly resume: Checkpoint.Resume<number>; readonly position: (row: Row) => number }
  }) => Sink.Sink<WriteSummary, Row, never, E, R>
) =>
  Effect.gen(function*() {
    const serializer = yield* RowSerializer.fromJson(schema)
    const destination = yield* TableDestination.make({ projectId: "sim", datasetId: "d", tableId: "t" })
    const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Number })
    const from = Option.getOrElse(resume.position, () => 0)
    world.trace(() => `${proc.name} resumes at ${from}`)
    const summary = yield* source(world, { ...plan, from, until: proc.handedOver }).pipe(
      Stream.run(sinkOf({ table: destination, serializer, checkpoint: { resume, position: (row) => row.id + 1 } }))
    )
    return { proc: proc.name, from, summary }
  })

export const exactlyOnce: MethodRun = async (seed, given) => {
  const rng = makeRng(seed)
  const timed = timedOf(seed, given)
  const options = timed.options
  const { sim, widen, world, ...drawn } = setup(options, rng, seed)
  const emitted = new Map<number, number>()
  const visibleAt = firstApplied()
  sim.onApplied.push((_, rows, at) => {
    for (const row of rows) visibleAt.record(idOf(row), at)
  })
  const schedules = Schedules.make(widen)
  const store = checkpointStore(world, rng, options, { schedules, rng: widen, sql: sqlStoreRng(seed, options) })
  const plan = sourcePlan(rng, options)
  const refusals = drawRefusals(drawn.refusals, widen, plan.total)
  const refusedIn = drawn.refusals === undefined
    ? () => refusedBy(refusals, "")
    : flakyPerProcess(refusals, widen, plan.total)
  const drawnEvery = every(rng, options)
  const checkpointEvery = timed.every === undefined ? drawnEvery : Duration.millis(timed.every)
  const method = WriteMethod.exactlyOnce({
    ...tuning(options, () => ({
      ...byteBounds(rng),
      destinationIdleTimeout: rng.pick([undefined, Duration.millis(rng.between(10, 5_000))]),
      retry: retryPolicy(rng),
      recovery: retryPolicy(rng)
    })),
    ...callerSchedules(schedules, ["retry", "recovery"])
  })
  const routed: Array<ByProcess> = []
  const lifePlan = checkpointedLife(rng, seed, options, plan)
  const program = (proc: Life.SimProcess) =>
    resumed(world, proc, { ...plan, emitted }, (o) =>
      BigQuerySink.make({
        ...o,
        serializer: poisoned(o.serializer, refusedIn(proc.name), refusals.inPlace),
        writeMethod: method,
        failureHandler: routing(proc, routed),
        checkpoint: { ...o.checkpoint, every: checkpointEvery }
      })).pipe(Effect.provide(Layer.merge(BigQueryClient.fromClients(sim.clients(proc)), store.layer(proc))))
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
  const visible = sim.visible(table).map(idOf)
  const checks: Array<Check> = [
    checkExactlyOnce({ total: plan.total, visible, routed: ids(routed) }),
    checkSummary({ total: plan.total, visible, finished: result.value, sizeOf: rowBytes }),
    routingChecked(sim, refusals, routed, plan.total, result.value),
    schedules.check,
    () => sim.rewinds.slice(0, 3).map((r) => `streams: ${r}`),
    ...(timed.every === undefined ? [] : [checkLatency({
      emitted,
      applied: visibleAt.times,
      bound: timed.every + lowRateBound,
      what: `visible (a checkpoint every ${timed.every} ms)`
    })]),
    released(sim, result)
  ]
  return { world, result, checks }
}

/** `tableCreateOptions` that throws in the first process (user code that fails), and is empty after. */
const throwingInFirst = (proc: Life.SimProcess) => () => {
  if (proc.name === "p0") throw new Error("tableCreateOptions threw (simulated user code)")
  return {}
}

export const atLeastOnce: MethodRun = async (seed, given) => {
  const rng = makeRng(seed)
  const options = lowRateOf(rng, given)
  const { sim, widen, world, ...drawn } = setup(options, rng, seed, false)
  const plan = sourcePlan(rng, options)
  const refusals = drawRefusals(drawn.refusals, widen, plan.total)
  const emitted = new Map<number, number>()
  const applied = firstApplied()
  sim.onApplied.push((_, rows, at) => {
    for (const row of rows) applied.record(idOf(row), at)
  })
  const schedules = Schedules.make(widen)
  const tuned = {
    ...tuning(options, () => atLeastOnceTuning(rng)),
    ...callerSchedules(schedules, ["retry", "recovery"])
  }
  const consumes: Consumes = options.swarm === true ? rng.pick<Consumes>(["all", "all", "some", "none"]) : "all"
  // one seed in five (not the slow ones) starts without its table, and the first process's
  // tableCreateOptions throws: that write must fail with a typed error, never hang, and a restart
  // create the table
  const missing = options.lowRate !== true && rng.chance(0.2)
  if (!missing) sim.createTable(table, columns)
  const method = WriteMethod.atLeastOnce(tuned)
  const inFlight = {
    requests: tuned.maxInFlightRequests ?? 100,
    bytes: tuned.maxInFlightBytes ?? 100 * 1024 * 1024,
    request: tuned.maxAppendRequestBytes ?? 512 * 1024
  }
  const routed: Array<ByProcess> = []
  // at least once has no store: a restart replays the whole source (nothing is lost, all is doubled)
  const programOf = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromJson(schema)
      const destination = yield* TableDestination.make({ projectId: sim.projectId, datasetId: "d", tableId: "t" })
      const summary = yield* source(world, { ...plan, from: 0, emitted }).pipe(
        Stream.run(BigQuerySink.make({
          table: destination,
          serializer: poisoned(serializer, refusals.poison, refusals.inPlace),
          writeMethod: method,
          tableCreateOptions: throwingInFirst(proc),
          // a dead-letter sink that consumes nothing is mended by the restart it causes (records
          // refused on every attempt would stall every process)
          failureHandler: routing(proc, routed, proc.name !== "p0" && consumes === "none" ? "all" : consumes)
        }))
      )
      return { proc: proc.name, from: 0, summary }
    }).pipe(Effect.provide(BigQueryClient.fromClients(sim.clients(proc))))
  const result = await liveWithoutCrashes(world, rng, programOf, () => sim.calm(), options)
  const checks: Array<Check> = [
    checkAtLeastOnce({
      total: plan.total,
      visible: sim.visible(table).map(idOf),
      routed: ids(routed),
      ambiguous: new Set(sim.ambiguous.map(idOf)),
      restarts: result.restarts
    }),
    routingChecked(sim, refusals, routed, plan.total, result.value),
    schedules.check,
    ...(options.lowRate === true ? [checkLatency({ emitted, applied: applied.times, bound: lowRateBound })] : []),
    bounded(sim, result, inFlight),
    released(sim, result)
  ]
  return { world, result, checks }
}

/** Sent and unanswered requests of every ended process stayed within the writer's bounds. */
const bounded = (
  sim: BigQuery.BigQuerySim,
  result: Life.LifeResult,
  bound: { readonly requests: number; readonly bytes: number; readonly request: number }
): Check =>
() =>
  result.exited.flatMap((p) => {
    const peak = sim.peakInFlight(p)
    // a request's framing (stream name, offsets, a first request's descriptor) is outside the byte budget
    const slack = peak.requests * 512
    return [
      ...(peak.requests > bound.requests
        ? [`memory: ${p.name} had ${peak.requests} requests in flight (maxInFlightRequests ${bound.requests})`]
        : []),
      ...(peak.bytes > bound.bytes + slack
        ? [`memory: ${p.name} had ${peak.bytes} request bytes in flight (maxInFlightBytes ${bound.bytes})`]
        : []),
      ...(peak.largest > bound.request + 512
        ? [`memory: ${p.name} sent a request of ${peak.largest} bytes (maxAppendRequestBytes ${bound.request})`]
        : [])
    ]
  })

/**
 * A long run of at least once over several tables: records minutes apart for hours of virtual time,
 * each burst to one table, destinations idling out (`destinationIdleTimeout`, with a `flushInterval`
 * barrier to release them). Besides nothing lost: a process never holds more AppendRows calls than
 * tables, after a quiet spell longer than the idle timeout it holds at most one, and its requests in
 * flight stay within `maxInFlightRequests` and `maxInFlightBytes`.
 */
export const destinations: MethodRun = async (seed, options) => {
  const rng = makeRng(seed)
  const { sim, widen, world, ...drawn } = setup(options, rng, seed)
  const tables = rng.between(2, 6)
  for (let t = 0; t < tables; t++) sim.createTable(`sim.d.t${t}`, [{ name: "id", type: "INTEGER", mode: "REQUIRED" }])
  const idle = rng.between(30_000, 300_000)
  const interval = rng.between(10_000, 60_000)
  const drawnPlan = { total: rng.between(20, 80), chunk: rng.between(1, 5), gap: rng.pick([10_000, 60_000, 600_000]) }
  const maxInFlightRequests = rng.pick([100, rng.between(1, 10)])
  const bounds = byteBounds(rng)
  const method = WriteMethod.atLeastOnce({
    ...bounds,
    maxInFlightRequests,
    destinationIdleTimeout: Duration.millis(idle),
    flushInterval: Duration.millis(interval),
    ...tuning(options, () => ({ retry: retryPolicy(rng), recovery: retryPolicy(rng) }))
  })
  // a short source (20 to 80 records): poison records in most seeds, up to 15% of them
  const refusals = drawRefusals(drawn.refusals, widen, drawnPlan.total, { poison: 0.6, maxRate: 0.15 })
  const { plan, refuser, tableOf } = drawLayout(widen, drawnPlan, tables)
  world.trace(() => `${tables} tables; ${refuser} refuses ${[...refusals.poison].join(", ") || "nothing"}`)
  const routed: Array<ByProcess> = []
  const quiet: Array<string> = []
  let widest = 0
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const rows = yield* RowSerializer.fromJson(schema)
      const targets = yield* Effect.forEach(
        Array.from({ length: tables }, (_, t) => t),
        (t) => TableDestination.make({ projectId: sim.projectId, datasetId: "d", tableId: `t${t}` })
      )
      const poisonedBy = (by: typeof refuser) => (by === refuser ? refusals.poison : new Set<number>())
      const { resolve, serializer } = withRefusingUserCode(
        (row: Row) => targets[tableOf(row.id)] as TableDestination.TableDestination,
        poisoned(rows, poisonedBy("serializer"), refusals.inPlace),
        poisonedBy("resolver"),
        poisonedBy("fingerprint")
      )
      const summary = yield* source(world, { ...plan, from: 0 }).pipe(
        // per chunk, keeping the chunks whole (`Stream.tap` hands them on one record at a time)
        Stream.mapArrayEffect((chunk) =>
          Effect.sync(() => {
            const open = sim.openOf(proc)
            widest = Math.max(widest, open)
            if (plan.gap > idle + 2 * interval + 10_000 && open > 1) {
              quiet.push(
                `${open} calls open at ${world.now.toFixed(0)} ms after ${plan.gap} ms quiet (idle timeout ${idle})`
              )
            }
            return chunk
          })
        ),
        Stream.run(BigQuerySink.make({
          destinationResolver: resolve,
          serializer,
          writeMethod: method,
          failureHandler: routing(proc, routed)
        }))
      )
      return { proc: proc.name, from: 0, summary }
    }).pipe(Effect.provide(BigQueryClient.fromClients(sim.clients(proc))))
  const result = await liveWithoutCrashes(world, rng, program, () => sim.calm(), options)
  const visibleIn = Array.from({ length: tables }, (_, t) => sim.visible(`sim.d.t${t}`).map(idOf))
  const checks: Array<Check> = [
    checkAtLeastOnce({
      total: plan.total,
      visible: visibleIn.flat(),
      routed: ids(routed),
      ambiguous: new Set(sim.ambiguous.map(idOf)),
      restarts: result.restarts
    }),
    routingChecked(sim, refusals, routed, plan.total, result.value),
    inTheirTables(visibleIn, tableOf),
    () => quiet.slice(0, 3).map((q) => `memory: destinations did not idle out: ${q}`),
    () => (widest > tables ? [`memory: ${widest} AppendRows calls open for ${tables} tables`] : []),
    bounded(sim, result, {
      requests: maxInFlightRequests,
      bytes: bounds.maxInFlightBytes ?? 100 * 1024 * 1024,
      request: bounds.maxAppendRequestBytes ?? 512 * 1024
    }),
    released(sim, result)
  ]
  return { world, result, checks }
}

/**
 * Where `bigquery.destinations`'s records go and whose user code refuses a poison record (the
 * resolver, `fingerprint` or the serializer), from the widened rng: each chunk of the source to one
 * table (bursts that leave the others idle); or, in chunks of 4 to 12 (records of several tables in
 * one write), runs of one to three records to a table (a record's table differs from the one before
 * it, and is the next one's).
 */
const drawLayout = (widen: Rng | undefined, drawnPlan: SourcePlan, tables: number) => {
  const refuser = widen?.pick(["resolver", "fingerprint", "fingerprint", "serializer"] as const) ?? "serializer"
  const run = widen?.pick([0, 1, 2, 3]) ?? 0
  const plan = run === 0 || widen === undefined ? drawnPlan : { ...drawnPlan, chunk: widen.between(4, 12) }
  const tableOf = run === 0
    ? (id: number) => Math.floor(id / plan.chunk) % tables
    : (id: number) => Math.floor(id / run) % tables
  return { plan, refuser, tableOf }
}

/**
 * A resolver and serializer whose user code refuses the poison records: the resolver answers
 * `Unroutable` for those of `byResolver`, and `fingerprint` throws for those of `byFingerprint` (it is
 * read for each record right after the record is resolved, in one synchronous block, so the last
 * record resolved is the one it is read for; the opening of a destination reads it too, and then no
 * record is pending).
 */
const withRefusingUserCode = (
  resolveRow: (row: Row) => TableDestination.TableDestination,
  serializer: RowSerializer.RowSerializer<Row>,
  byResolver: ReadonlySet<number>,
  byFingerprint: ReadonlySet<number>
) => {
  let pending: number | undefined
  const resolve = (row: Row) => {
    pending = byFingerprint.has(row.id) ? row.id : undefined
    return byResolver.has(row.id)
      ? TableDestination.unroutable({ reason: poisonMessage(row.id) })
      : resolveRow(row)
  }
  if (byFingerprint.size === 0) return { resolve, serializer }
  const fingerprint = () => {
    const id = pending
    pending = undefined
    if (id !== undefined) throw new Error(poisonMessage(id))
    return "v1"
  }
  return {
    resolve,
    serializer: RowSerializer.make({
      tableSchema: serializer.tableSchema,
      serialize: serializer.serialize,
      encodeInto: serializer.encodeInto,
      fingerprint
    })
  }
}

interface Change {
  readonly id: number
  readonly key: bigint
  readonly op: Cdc.ChangeType
}

const cdcSchema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "key", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "version", type: "INT64", mode: "REQUIRED" })
  ]
}

/**
 * At least once with `cdc`: source record `i` is a change of key `i mod keys` (a DELETE now and
 * then) with sequence number `i`, applied by the service by primary key. Replays and duplicates
 * are harmless by design, so after any faults and restarts the table holds, per key, exactly the
 * source's last change of it (none for a key last deleted). Row rejections are off: a rejected
 * change is routed, and the key's state then depends on the handler.
 */
export const cdc: MethodRun = async (seed, options) => {
  const rng = makeRng(seed)
  const world = new World({ rng, trace: options.trace })
  const faults = options.faults === false ? BigQuery.noFaults : BigQuery.drawFaults(rng, 0.08, 400_000)
  const sim = BigQuery.make(world, { ...faults, rowError: 0 })
  sim.createTable(
    "sim.d.cdc",
    [{ name: "key", type: "INTEGER", mode: "REQUIRED" }, { name: "version", type: "INTEGER", mode: "REQUIRED" }],
    { tableConstraints: { primaryKey: { columns: ["key"] } } }
  )
  const plan = sourcePlan(rng, options)
  const keys = rng.between(1, 12)
  const change = (id: number): Change => ({
    id,
    key: BigInt(id % keys),
    op: id % 7 === 6 ? "DELETE" : "UPSERT"
  })
  const method = WriteMethod.atLeastOnce({
    cdc: { changeType: (c: Change) => c.op, sequenceNumber: (c: Change) => c.id.toString(16).toUpperCase() },
    ...tuning(options, () => atLeastOnceTuning(rng))
  })
  const routed: Array<ByProcess> = []
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const rows = yield* RowSerializer.fromJson(cdcSchema)
      const serializer = RowSerializer.contramap(rows, (c: Change) => ({ key: c.key, version: BigInt(c.id) }))
      const destination = yield* TableDestination.make({ projectId: sim.projectId, datasetId: "d", tableId: "cdc" })
      return yield* source(world, { ...plan, from: 0 }).pipe(
        Stream.map(({ id }) => change(id)),
        Stream.run(BigQuerySink.make({
          table: destination,
          createDisposition: "CREATE_NEVER",
          serializer,
          writeMethod: method,
          failureHandler: routing(proc, routed)
        }))
      )
    }).pipe(Effect.provide(BigQueryClient.fromClients(sim.clients(proc))))
  const result = await liveWithoutCrashes(world, rng, program, () => sim.calm(), options)
  const expected = new Map<string, string>()
  for (let id = 0; id < plan.total; id++) {
    const c = change(id)
    if (c.op === "DELETE") expected.delete(String(c.key))
    else expected.set(String(c.key), String(id))
  }
  const checks: Array<Check> = [
    () => (routed.length > 0 ? [`cdc: ${routed.length} changes routed with row rejections off`] : []),
    () => {
      const live = new Map(sim.cdcRows("sim.d.cdc").map((r) => [String(r["key"]), String(r["version"])]))
      const wrong = [...new Set([...expected.keys(), ...live.keys()])]
        .filter((k) => expected.get(k) !== live.get(k))
        .map((k) =>
          `key ${k}: ${live.get(k) ?? "absent"} where the source's last change says ${expected.get(k) ?? "absent"}`
        )
      return wrong.length === 0 ? [] : [`cdc: ${wrong.slice(0, 4).join("; ")}`]
    },
    released(sim, result)
  ]
  return { world, result, checks }
}

/**
 * `BigQuerySink.fileLoads`: records staged as Avro files in a simulated bucket, loaded at each
 * checkpoint by load jobs of deterministic ids on the simulated jobs service, crashes and zombies
 * restoring from the drawn store. Besides exactly once: no job id runs twice and no staged file is
 * loaded by two jobs; every file a job loaded is deleted by the end, unless every delete of it the
 * sink's `reconcile` budget allowed met a fault.
 */
export const fileLoads: MethodRun = async (seed, options) => {
  const rng = makeRng(seed)
  const world = new World({ rng, trace: options.trace })
  const faulty = options.faults !== false
  const sim = BigQuery.make(
    world,
    faulty ? { ...BigQuery.noFaults, restTransient: rate(rng, 0.08) } : BigQuery.noFaults
  )
  const location = rng.pick(["US", "EU", "asia-northeast1"])
  if (rng.chance(0.8)) sim.createTable(table, columns)
  const adminMillis = options.swarm === true ? rng.between(500, 60_000) : 60_000
  const spikeMillis = adminMillis + rng.between(1, 30_000)
  const gcs = Gcs.make(world, faulty ? Gcs.drawStagingFaults(rng, 0.08, spikeMillis) : Gcs.noFaults)
  const loads = FileLoads.make(
    world,
    faulty ? FileLoads.drawFaults(rng, 0.08, spikeMillis) : FileLoads.noFaults,
    { bigquery: sim, gcs, datasets: { d: location }, location: rng.pick([undefined, location]) }
  )
  const widen = widened(seed, options)
  const schedules = Schedules.make(widen)
  const store = checkpointStore(world, rng, options, { schedules, rng: widen, sql: sqlStoreRng(seed, options) })
  const plan = sourcePlan(rng, options)
  // poison records only (load jobs refuse no row the serializer made); their serializer fails with
  // a RowSerializationError: the file loads path calls `serialize` (it has no in-place writer)
  const refusals = drawRefusals(faulty ? noRefusals() : undefined, widen, plan.total, { bad: 0 })
  const checkpointEvery = every(rng, options)
  const reconcile = retryPolicy(rng)
  const tuned = tuning(options, () => ({
    maxStagingFileBytes: rng.pick([undefined, rng.between(1, 64), rng.between(64, 4096)]),
    adminTimeout: Duration.millis(adminMillis),
    reconcile,
    poll: {
      initialBackoff: Duration.millis(rng.between(1, 1000)),
      maxBackoff: Duration.millis(rng.between(1000, 30_000)),
      maxAttempts: rng.between(100, 1000)
    }
  }))
  const method = WriteMethod.fileLoads({
    stagingPath: "gs://sim-staging/loads",
    ...tuned,
    ...callerSchedules(schedules, ["poll", "reconcile"])
  })
  const routed: Array<ByProcess> = []
  const lifePlan = checkpointedLife(rng, seed, options, plan)
  /** How each process that was not killed ended: `done`, or its typed error's tag. */
  const endings = new Map<Process, string>()
  const program = (proc: Life.SimProcess) =>
    resumed(world, proc, plan, (o) =>
      BigQuerySink.make({
        ...o,
        serializer: poisoned(o.serializer, refusals.poison, false),
        writeMethod: method,
        failureHandler: routing(proc, routed),
        checkpoint: { ...o.checkpoint, every: checkpointEvery }
      })).pipe(
        Effect.provide(Layer.mergeAll(
          BigQueryClient.fromClients(loads.clients(proc)),
          GcsClient.fromStorage({ projectId: sim.projectId, storage: gcs.storage(proc) }),
          store.layer(proc)
        )),
        Effect.onExit((exit) =>
          Effect.sync(() => {
            const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
            endings.set(proc, Option.isSome(error) ? tagOf(error.value) : "done")
          })
        )
      )
  const result = await Life.live(
    world,
    lifePlan,
    program,
    () => {
      sim.calm()
      gcs.calm()
      loads.calm()
      store.calm()
    },
    limits(options),
    store.watch
  )
  const attempts = schedules.attempts("reconcile") ?? tuned.reconcile?.maxAttempts ?? 10
  const visible = sim.visible(table).map(idOf)
  const checks: Array<Check> = [
    checkExactlyOnce({ total: plan.total, visible, routed: ids(routed) }),
    routingChecked(sim, refusals, routed, plan.total, result.value),
    schedules.check,
    // the finishing process counts what it staged (from its position on) and loaded
    checkSummary({ total: plan.total, visible, finished: result.value, sizeOf: rowBytes }),
    ...jobsAndFiles(gcs, loads, attempts),
    orphans(gcs, loads, endings)
  ]
  return { world, result, checks }
}

/** Loaded with this module (see its import). */
export const preloaded = FileLoadsWriter.make !== undefined

/**
 * No job id runs twice and no staged file is loaded by two jobs; every loaded file is deleted unless
 * every delete of it the `reconcile` budget (`attempts`) allowed met a fault.
 */
const jobsAndFiles = (gcs: Gcs.GcsSim, loads: FileLoads.FileLoadsSim, attempts: number): ReadonlyArray<Check> => [
  () => [...loads.runs].filter(([, n]) => n > 1).slice(0, 3).map(([id, n]) => `job ${id} ran ${n} times`),
  () =>
    [...loads.loaded].filter(([, jobs]) => jobs.length > 1).slice(0, 3).map(([uri, jobs]) =>
      `${uri} loaded by ${jobs.length} jobs: ${jobs.join(", ")}`
    ),
  () =>
    [...loads.loaded.keys()].filter((uri) =>
      gcs.read(uri) !== undefined && (gcs.deletes.get(uri)?.faulted ?? 0) < attempts
    ).slice(0, 3).map((uri) => {
      const d = gcs.deletes.get(uri)
      return `leak: ${uri} was loaded and is still staged (${d?.asked ?? 0} deletes asked, ${
        d?.faulted ?? 0
      } refused; the budget is ${attempts})`
    })
]

const tagOf = (e: unknown): string => typeof e === "object" && e !== null && "_tag" in e ? String(e._tag) : String(e)

/**
 * Cleanup (issue 36: no object left in a bucket that no record names): a staged object no job
 * loaded was never named by a checkpoint that became the writer's state, so nothing will ever load
 * or delete it. A process killed leaves its own (its memory is gone); a process that finished or
 * was fenced (`CheckpointConflict`) must not. Objects of processes that ended in another typed
 * error are counted apart (`leftBy`), as the docs keep them.
 */
const orphans = (
  gcs: Gcs.GcsSim,
  loads: FileLoads.FileLoadsSim,
  endings: ReadonlyMap<Process, string>
): Check =>
() => {
  const left = gcs.live("sim-staging").filter((uri) => !loads.loaded.has(uri))
  const byEnding = new Map<string, Array<string>>()
  for (const uri of left) {
    const proc = gcs.uploadedBy.get(uri)
    const ending = proc === undefined ? undefined : endings.get(proc)
    if (proc === undefined || proc.state === "dead" || (ending !== "done" && ending !== "CheckpointConflict")) continue
    const list = byEnding.get(`${proc.name} (${ending})`) ?? []
    list.push(uri)
    byEnding.set(`${proc.name} (${ending})`, list)
  }
  return [...byEnding].slice(0, 3).map(([who, uris]) =>
    `leak: ${uris.length} staged object(s) of ${who} no checkpoint named and no job loaded, left in the bucket: ${
      uris.slice(0, 2).join(", ")
    }`
  )
}
