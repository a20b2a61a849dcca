/**
 * The BigQuery write methods under simulation: `BigQuerySink.exactlyOnce` (BUFFERED streams, the
 * checkpoint protocol on the simulated store), `BigQuerySink.make` at least once (`_default`) and
 * `BigQuerySink.fileLoads` (Avro files staged in simulated Cloud Storage, load jobs at checkpoints),
 * each through the public API on `BigQueryClient.fromClients` (and `GcsClient.fromStorage`) with the
 * simulated services.
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
import { World } from "../kernel.ts"
import * as Life from "../life.ts"
import { make as makeRng, rate, type Rng } from "../random.ts"
import {
  type Check,
  checkAtLeastOnce,
  checkExactlyOnce,
  checkLatency,
  checkSummary,
  firstApplied,
  type MethodRun,
  type RunOptions
} from "../run.ts"
import { idOf, source, type SourcePlan } from "../source.ts"
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

/** Routed rows, by id, for the invariants. */
const routing = (routed: Array<number>, consumes: Consumes = "all") => {
  const record = (fs: ReadonlyArray<BigQueryFailure.BigQueryFailure>) =>
    Effect.sync(() => {
      for (const f of fs) if (f.payload !== undefined) routed.push(idOf(f.payload))
    })
  return FailureHandler.deadLetter(
    consumes === "all"
      ? Sink.forEach((f: BigQueryFailure.BigQueryFailure) => record([f]))
      : consumes === "some"
      ? Sink.take<BigQueryFailure.BigQueryFailure>(2).pipe(Sink.mapEffect(record))
      : Sink.fromEffect(Effect.void)
  )
}

const columns = [{ name: "id", type: "INTEGER", mode: "REQUIRED" }]

/** The world and the service; table `t` exists unless `withTable` is false (the caller decides later). */
const setup = (options: RunOptions, rng: Rng, withTable = true) => {
  const world = new World({ rng, trace: options.trace })
  const faults = options.faults === false || options.lowRate === true
    ? BigQuery.noFaults
    : BigQuery.drawFaults(rng, 0.08, options.spikeMillis ?? 400_000)
  const sim = BigQuery.make(world, faults)
  if (withTable) sim.createTable(table, columns)
  return { world, faults, sim }
}

/**
 * One process of a checkpointed writer on table `t`: resumes from the store, replays the source from
 * the stored position into the sink `sinkOf` builds, and returns where it started and its summary.
 */
const resumed = <E, R>(
  world: World,
  proc: Life.SimProcess,
  plan: SourcePlan,
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
    return { from, summary }
  })

export const exactlyOnce: MethodRun = async (seed, options) => {
  const rng = makeRng(seed)
  const { sim, world } = setup(options, rng)
  const store = checkpointStore(world, rng, options)
  const plan = sourcePlan(rng, options)
  const checkpointEvery = every(rng, options)
  const method = WriteMethod.exactlyOnce(tuning(options, () => ({
    ...byteBounds(rng),
    destinationIdleTimeout: rng.pick([undefined, Duration.millis(rng.between(10, 5_000))]),
    retry: retryPolicy(rng),
    recovery: retryPolicy(rng)
  })))
  const routed: Array<number> = []
  const lifePlan = checkpointedLife(rng, seed, options, plan)
  const program = (proc: Life.SimProcess) =>
    resumed(world, proc, plan, (o) =>
      BigQuerySink.make({
        ...o,
        writeMethod: method,
        failureHandler: routing(routed),
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
    checkExactlyOnce({ total: plan.total, visible, routed }),
    checkSummary({ total: plan.total, visible, finished: result.value, sizeOf: rowBytes }),
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
  const { sim, world } = setup(options, rng, false)
  const plan = sourcePlan(rng, options)
  const emitted = new Map<number, number>()
  const applied = firstApplied()
  sim.onApplied.push((_, rows, at) => {
    for (const row of rows) applied.record(idOf(row), at)
  })
  const tuned = tuning(options, () => atLeastOnceTuning(rng))
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
  const routed: Array<number> = []
  // at least once has no store: a restart replays the whole source (nothing is lost, all is doubled)
  const programOf = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromJson(schema)
      const destination = yield* TableDestination.make({ projectId: sim.projectId, datasetId: "d", tableId: "t" })
      return yield* source(world, { ...plan, from: 0, emitted }).pipe(
        Stream.run(BigQuerySink.make({
          table: destination,
          serializer,
          writeMethod: method,
          tableCreateOptions: throwingInFirst(proc),
          failureHandler: routing(routed, consumes)
        }))
      )
    }).pipe(Effect.provide(BigQueryClient.fromClients(sim.clients(proc))))
  const result = await liveWithoutCrashes(world, rng, programOf, () => sim.calm(), options)
  const checks: Array<Check> = [
    checkAtLeastOnce({
      total: plan.total,
      visible: sim.visible(table).map(idOf),
      routed,
      ambiguous: new Set(sim.ambiguous.map(idOf)),
      restarts: result.restarts
    }),
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
  const { sim, world } = setup(options, rng)
  const tables = rng.between(2, 6)
  for (let t = 0; t < tables; t++) sim.createTable(`sim.d.t${t}`, [{ name: "id", type: "INTEGER", mode: "REQUIRED" }])
  const idle = rng.between(30_000, 300_000)
  const interval = rng.between(10_000, 60_000)
  const plan = { total: rng.between(20, 80), chunk: rng.between(1, 5), gap: rng.pick([10_000, 60_000, 600_000]) }
  const maxInFlightRequests = rng.pick([100, rng.between(1, 10)])
  const bounds = byteBounds(rng)
  const method = WriteMethod.atLeastOnce({
    ...bounds,
    maxInFlightRequests,
    destinationIdleTimeout: Duration.millis(idle),
    flushInterval: Duration.millis(interval),
    ...tuning(options, () => ({ retry: retryPolicy(rng), recovery: retryPolicy(rng) }))
  })
  const routed: Array<number> = []
  const quiet: Array<string> = []
  let widest = 0
  const program = (proc: Life.SimProcess) =>
    Effect.gen(function*() {
      const serializer = yield* RowSerializer.fromJson(schema)
      const targets = yield* Effect.forEach(
        Array.from({ length: tables }, (_, t) => t),
        (t) => TableDestination.make({ projectId: sim.projectId, datasetId: "d", tableId: `t${t}` })
      )
      // each chunk of the source goes to one table: bursts that leave the others idle
      const resolve = (row: Row) =>
        targets[Math.floor(row.id / plan.chunk) % tables] as TableDestination.TableDestination
      return yield* source(world, { ...plan, from: 0 }).pipe(
        Stream.tap(() =>
          Effect.sync(() => {
            const open = sim.openOf(proc)
            widest = Math.max(widest, open)
            if (plan.gap > idle + 2 * interval + 10_000 && open > 1) {
              quiet.push(
                `${open} calls open at ${world.now.toFixed(0)} ms after ${plan.gap} ms quiet (idle timeout ${idle})`
              )
            }
          })
        ),
        Stream.run(BigQuerySink.make({
          destinationResolver: resolve,
          serializer,
          writeMethod: method,
          failureHandler: routing(routed)
        }))
      )
    }).pipe(Effect.provide(BigQueryClient.fromClients(sim.clients(proc))))
  const result = await liveWithoutCrashes(world, rng, program, () => sim.calm(), options)
  const visible = Array.from({ length: tables }, (_, t) => sim.visible(`sim.d.t${t}`).map(idOf)).flat()
  const checks: Array<Check> = [
    checkAtLeastOnce({
      total: plan.total,
      visible,
      routed,
      ambiguous: new Set(sim.ambiguous.map(idOf)),
      restarts: result.restarts
    }),
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
  const routed: Array<number> = []
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
          failureHandler: routing(routed)
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
  const store = checkpointStore(world, rng, options)
  const plan = sourcePlan(rng, options)
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
  const method = WriteMethod.fileLoads({ stagingPath: "gs://sim-staging/loads", ...tuned })
  const routed: Array<number> = []
  const lifePlan = checkpointedLife(rng, seed, options, plan)
  const program = (proc: Life.SimProcess) =>
    resumed(world, proc, plan, (o) =>
      BigQuerySink.make({
        ...o,
        writeMethod: method,
        failureHandler: routing(routed),
        checkpoint: { ...o.checkpoint, every: checkpointEvery }
      })).pipe(Effect.provide(Layer.mergeAll(
        BigQueryClient.fromClients(loads.clients(proc)),
        GcsClient.fromStorage({ projectId: sim.projectId, storage: gcs.storage(proc) }),
        store.layer(proc)
      )))
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
  const attempts = tuned.reconcile?.maxAttempts ?? 10
  const visible = sim.visible(table).map(idOf)
  const checks: Array<Check> = [
    checkExactlyOnce({ total: plan.total, visible, routed }),
    // the finishing process counts what it staged (from its position on) and loaded
    checkSummary({ total: plan.total, visible, finished: result.value, sizeOf: rowBytes }),
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
  return { world, result, checks }
}

/** Loaded with this module (see its import). */
export const preloaded = FileLoadsWriter.make !== undefined
