/**
 * The cluster's scaling with a CPU budget per runner (issue 40): the same partitioned log written exactly once by
 * 1, 2, 3 (and 4) runner processes on `effect/cluster` (`test/Cluster/runnerChild.ts`, shard locks in a private
 * PostgreSQL), each runner in a cgroup (v1 `cpu` controller) of its own with the same CFS quota, as a pod with
 * a CPU limit is on GKE. The server side runs outside the cgroups: the fake BigQueryWrite process
 * (bench/fakeBigQueryProcess.ts: BUFFERED streams and FlushRows, answered at once, rows only counted) behind the
 * fault proxy's injected round trip (`latencyMillis`), and PostgreSQL.
 *
 * Reported per run: the aggregate rate once placement has settled (rows made visible by FlushRows per second,
 * from the moment every partition writes and no hand-off happened for 3 s, to the first partition's end), the
 * completion time of the whole log, CPU per row (the runners', from `/proc`), each runner's CPU use against its
 * quota and how often it was throttled (cpu.stat), the server side's CPU (the fake, PostgreSQL, this process's
 * proxy), and the cluster's own overhead: PostgreSQL transactions per second (pg_stat_database), shard lock
 * refreshes per second (each runner refreshes every `min(refresh, expiry / 3)`), hand-offs at start. Every run
 * checks that exactly the log's rows were flushed. The partitions' singletons are named so that they fill
 * `--partitions` shards (`Partitions.layer`'s `shardsPerGroup`, the runners' `shardsPerGroup` set to the partition
 * count): each runner then owns the same number of partitions, within one; `--random-placement` hashes them onto
 * 300 shards instead (their writer ids as singleton names), as before.
 *
 * It creates a cgroup per runner under /sys/fs/cgroup/cpu (root only) and removes each when its runner is gone,
 * also on failure; without root or the cpu controller it says so and stops.
 *
 *   npx node bench/cluster.bench.ts [--runners 1,2,3] [--cpu 0.3] [--rtt 10] [--records 30000000]
 *     [--partitions 12] [--chunk 500] [--random-placement] [--rounds 1]
 */
import { Effect, Layer, Queue, Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CrashProof from "../test/support/crashProof.ts"
import { freePort } from "../test/support/emulatorProcess.ts"
import * as FaultProxy from "../test/support/faultProxy.ts"
import { binDir, PostgresServer } from "../test/support/postgres.ts"
import { flag, numberArg, textArg } from "./args.ts"
import * as FakeProcess from "./fakeBigQueryProcess.ts"

const here = path.dirname(new URL(import.meta.url).pathname)
const child = path.join(here, "..", "test", "Cluster", "runnerChild.ts")
const rtt = numberArg("rtt", 10)
const records = numberArg("records", 30_000_000)
const partitions = numberArg("partitions", 12)
const chunk = numberArg("chunk", 500)
const rounds = numberArg("rounds", 1)
const cpu = numberArg("cpu", 0.3)
const spread = !flag("random-placement")
const runnerCounts = textArg("runners", "1,2,3").split(",").map(Number)
const LOCK_EXPIRY_MS = 5_000
const LOCK_REFRESH_MS = 1_500
const PERIOD_US = 100_000
const CPU_ROOT = "/sys/fs/cgroup/cpu"

/** Why this machine cannot run the benchmark's cgroups, or `undefined` when it can. */
const cgroupsUnavailable = (): string | undefined => {
  if (process.getuid?.() !== 0) return "not root: creating cgroups under /sys/fs/cgroup/cpu needs root"
  if (!fs.existsSync(path.join(CPU_ROOT, "cpu.cfs_quota_us"))) {
    return `no cgroup v1 cpu controller at ${CPU_ROOT} (cpu.cfs_quota_us missing)`
  }
  try {
    fs.accessSync(CPU_ROOT, fs.constants.W_OK)
  } catch {
    return `${CPU_ROOT} is not writable`
  }
  return undefined
}

/** A cgroup with a CFS quota of `cpus` CPUs; removed (its processes moved out first) when the scope closes. */
const cpuGroup = (name: string, cpus: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = path.join(CPU_ROOT, name)
      fs.mkdirSync(dir)
      fs.writeFileSync(path.join(dir, "cpu.cfs_period_us"), String(PERIOD_US))
      fs.writeFileSync(path.join(dir, "cpu.cfs_quota_us"), String(Math.round(cpus * PERIOD_US)))
      return dir
    }),
    (dir) => Effect.sync(() => removeGroup(dir))
  )

const removeGroup = (dir: string): void => {
  if (!fs.existsSync(dir)) return
  for (const pid of fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter((l) => l !== "")) {
    try {
      fs.writeFileSync(path.join(CPU_ROOT, "cgroup.procs"), pid)
    } catch {
      // gone meanwhile
    }
  }
  fs.rmdirSync(dir)
}

/** Moves process `pid` (all its threads) into the cgroup `dir`. */
const join = (dir: string, pid: number): void => fs.writeFileSync(path.join(dir, "cgroup.procs"), String(pid))

/** `nr_throttled` and `throttled_time` (ns) of a cgroup. */
const throttling = (dir: string): { readonly periods: number; readonly throttled: number; readonly nanos: number } => {
  const stat = Object.fromEntries(
    fs.readFileSync(path.join(dir, "cpu.stat"), "utf8").split("\n").filter((l) => l !== "").map((l) => {
      const [k, v] = l.split(" ")
      return [k, Number(v)]
    })
  )
  return { periods: stat["nr_periods"] ?? 0, throttled: stat["nr_throttled"] ?? 0, nanos: stat["throttled_time"] ?? 0 }
}

/** CPU seconds (user + system) a process has used so far, from `/proc/<pid>/stat`; 0 once it is gone. */
const cpuSeconds = (pid: number): number => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

/** Transactions PostgreSQL has counted in the database so far (each statement of the runners is one). */
const pgTransactions = (bin: string, host: string, port: number): number =>
  Number(
    execFileSync(path.join(bin, "psql"), [
      "-h",
      host,
      "-p",
      String(port),
      "-U",
      "postgres",
      "-d",
      "postgres",
      "-Atc",
      "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'postgres'"
    ], { encoding: "utf8" }).trim()
  )

interface Sample {
  readonly at: number
  readonly flushed: number
  /** CPU seconds each runner has used so far. */
  readonly cpu: ReadonlyArray<number>
}

interface Result {
  readonly runners: number
  readonly seconds: number
  readonly settledAfter: number
  readonly rowsPerSecond: number
  readonly windowSeconds: number
  readonly cpuMicrosPerRow: number
  readonly runnerCpu: ReadonlyArray<number>
  readonly throttledShare: ReadonlyArray<number>
  readonly serverCpu: number
  readonly pgTransactionsPerSecond: number
  readonly lockRefreshesPerSecond: number
  readonly placement: ReadonlyArray<number>
  readonly handoffsAtStart: number
  readonly handoffs: number
}

/** What the runners reported, folded as it arrives. */
class Progress {
  readonly owner = new Map<number, number>()
  readonly writing = new Set<number>()
  readonly done = new Set<number>()
  lastMove = 0
  handoffs = 0
  firstDone = Number.POSITIVE_INFINITY
  readonly handoffTimes: Array<number> = []

  handoffsBefore(at: number): number {
    return this.handoffTimes.filter((t) => t <= at).length
  }

  add(runner: number, name: string, partition: number, at: number): void {
    if (name === "started") {
      this.owner.set(partition, runner)
      this.lastMove = at
    }
    if (name === "handedOff") {
      this.handoffs++
      this.handoffTimes.push(at)
      this.lastMove = at
    }
    if (name === "first") this.writing.add(partition)
    if (name === "partitionDone") {
      this.done.add(partition)
      this.firstDone = Math.min(this.firstDone, at)
    }
  }
}

const now = (): number => performance.timeOrigin + performance.now()

/** The runner processes, each moved into its cgroup as soon as it is spawned. */
const startRunners = Effect.fnUntraced(function*(
  n: number,
  env: (port: number) => Record<string, string>,
  progress: Progress,
  groups: ReadonlyArray<string>
) {
  const runners: Array<CrashProof.Child> = []
  for (let r = 0; r < n; r++) {
    const port = yield* freePort
    const c = yield* CrashProof.startChild({ script: child, env: env(port) })
    const group = groups[r]
    if (group !== undefined) join(group, c.pid)
    runners.push(c)
    yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
      const e = yield* Queue.take(c.events)
      const data = typeof e.data === "object" && e.data !== null ? (e.data as Record<string, unknown>) : {}
      if (typeof data.partition === "number" && data.backend === "bq") {
        progress.add(r, e.name, data.partition, typeof data.at === "number" ? data.at : now())
      }
    })))
  }
  return runners
})

/** Samples the rows flushed and the runners' CPU every 250 ms until every partition is done (60 s without a flush fails). */
const sampleUntilDone = Effect.fnUntraced(function*(
  fake: FakeProcess.FakeProcess,
  progress: Progress,
  runners: ReadonlyArray<CrashProof.Child>
) {
  const samples: Array<Sample> = []
  const flushedRows = fake.flushedRows
  if (flushedRows === undefined) return yield* Effect.die(new Error("the fake process does not count flushes"))
  let lastChange = now()
  while (progress.done.size < partitions) {
    const flushed = yield* Effect.promise(flushedRows)
    if (samples.length === 0 || flushed !== samples[samples.length - 1]?.flushed) lastChange = now()
    samples.push({ at: now(), flushed, cpu: runners.map((r) => cpuSeconds(r.pid)) })
    if (now() - lastChange > 60_000) {
      return yield* Effect.die(new Error(`no row flushed for 60 s; ${progress.done.size} of ${partitions} done`))
    }
    yield* Effect.sleep("250 millis")
  }
  samples.push({ at: now(), flushed: yield* Effect.promise(flushedRows), cpu: runners.map((r) => cpuSeconds(r.pid)) })
  return samples
})

/** The flushed rows at `at`, interpolated between samples. */
const flushedAt = (samples: ReadonlyArray<Sample>, at: number): number => {
  const after = samples.findIndex((s) => s.at >= at)
  const b = samples[after]
  const a = samples[after - 1]
  if (b === undefined) return samples[samples.length - 1]?.flushed ?? 0
  if (a === undefined) return b.flushed
  return a.flushed + ((b.flushed - a.flushed) * (at - a.at)) / (b.at - a.at)
}

const runnerEnv = (
  pg: { readonly host: string; readonly port: number },
  proxy: FaultProxy.FaultProxy,
  fake: FakeProcess.FakeProcess,
  dir: string
) =>
(port: number): Record<string, string> => ({
  CLUSTER_PG_HOST: pg.host,
  CLUSTER_PG_PORT: String(pg.port),
  CLUSTER_RUNNER_PORT: String(port),
  CLUSTER_BQ_GRPC: proxy.target,
  CLUSTER_BQ_REST: fake.restEndpoint,
  CLUSTER_PROJECT: fake.projectId,
  CLUSTER_DATASET: "d",
  CLUSTER_TABLE: "t",
  CLUSTER_STORE_DIR: dir,
  CLUSTER_NAME: `scale-${path.basename(dir)}`,
  CLUSTER_PARTITIONS: String(partitions),
  CLUSTER_TOTAL: String(records),
  CLUSTER_CHUNK: String(chunk),
  CLUSTER_CHUNK_DELAY_MS: "0",
  CLUSTER_EVERY: "1000",
  CLUSTER_LOCK_EXPIRY_MS: String(LOCK_EXPIRY_MS),
  CLUSTER_LOCK_REFRESH_MS: String(LOCK_REFRESH_MS),
  CLUSTER_SHARDS_PER_GROUP: String(spread ? partitions : 300),
  CLUSTER_SPREAD: spread ? "1" : "0",
  METADATA_SERVER_DETECTION: "none"
})

/** One run: a fresh PostgreSQL, fake and store; `n` runners, each in its cgroup, until every partition is done. */
const runWith = (n: number, bin: string) =>
  Effect.gen(function*() {
    const pg = yield* PostgresServer
    const scope = yield* Effect.scope
    const fake = yield* Effect.acquireRelease(Effect.promise(() => FakeProcess.start(0)), (f) => Effect.sync(f.close))
    const [host, port] = fake.grpcEndpoint.split(":")
    const proxy = yield* FaultProxy.start({
      upstreamHost: host ?? "127.0.0.1",
      upstreamPort: Number(port),
      unavailableEvery: 0,
      latencyMillis: rtt
    })
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "cluster-bench-"))),
      (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
    )
    // the groups outlive the runners: a runner's scope closes (it is killed) before its group's
    const groups: Array<string> = []
    for (let r = 0; r < n; r++) groups.push(yield* cpuGroup(`effect-gcp-sinks-bench-${process.pid}-${r}`, cpu))
    const progress = new Progress()
    const t0 = now()
    const serverCpu0 = cpuSeconds(fake.pid ?? -1) + cpuSeconds(pg.pid) + cpuSeconds(process.pid)
    const runners = yield* startRunners(n, runnerEnv(pg, proxy, fake, dir), progress, groups).pipe(Scope.provide(scope))
    const samples = yield* sampleUntilDone(fake, progress, runners)
    return yield* report(n, bin, { pg, fake, groups, runners, progress, samples, t0, serverCpu0 })
  }).pipe(Effect.scoped, Effect.provide(PostgresServer.layer.pipe(Layer.fresh)))

interface Finished {
  readonly pg: { readonly host: string; readonly port: number; readonly pid: number }
  readonly fake: FakeProcess.FakeProcess
  readonly groups: ReadonlyArray<string>
  readonly runners: ReadonlyArray<CrashProof.Child>
  readonly progress: Progress
  readonly samples: ReadonlyArray<Sample>
  readonly t0: number
  readonly serverCpu0: number
}

/**
 * The figures of a finished run. The settled window starts once every partition writes and no partition has
 * started or been handed off for 3 s, and ends at the first partition's end.
 */
const report = Effect.fnUntraced(function*(n: number, bin: string, run: Finished) {
  const { progress, samples } = run
  const end = samples[samples.length - 1]?.at ?? now()
  const seconds = (end - run.t0) / 1000
  const flushed = samples[samples.length - 1]?.flushed ?? 0
  if (flushed !== records) return yield* Effect.die(new Error(`${n} runners: ${flushed} rows flushed, not ${records}`))
  const settled = samples.find((s) => progress.writing.size === partitions && s.at > progress.lastMove + 3_000)?.at ??
    Number.NaN
  const windowEnd = Math.min(progress.firstDone, end)
  const windowSeconds = (windowEnd - settled) / 1000
  const rowsPerSecond = (flushedAt(samples, windowEnd) - flushedAt(samples, settled)) / windowSeconds
  const first = samples.find((s) => s.at >= settled)
  const last = samples.findLast((s) => s.at <= windowEnd)
  const windowCpu = first === undefined || last === undefined
    ? run.runners.map(() => Number.NaN)
    : last.cpu.map((c, i) => c - (first.cpu[i] ?? 0))
  const windowRows = first === undefined || last === undefined ? Number.NaN : last.flushed - first.flushed
  const windowWall = first === undefined || last === undefined ? Number.NaN : (last.at - first.at) / 1000
  const transactions = pgTransactions(bin, run.pg.host, run.pg.port)
  const serverCpu = cpuSeconds(run.fake.pid ?? -1) + cpuSeconds(run.pg.pid) + cpuSeconds(process.pid) - run.serverCpu0
  const result: Result = {
    runners: n,
    seconds,
    settledAfter: (settled - run.t0) / 1000,
    rowsPerSecond,
    windowSeconds,
    cpuMicrosPerRow: (windowCpu.reduce((a, b) => a + b, 0) / windowRows) * 1e6,
    runnerCpu: windowCpu.map((c) => c / windowWall),
    throttledShare: run.groups.map((g) => {
      const t = throttling(g)
      return t.periods === 0 ? 0 : t.throttled / t.periods
    }),
    serverCpu: serverCpu / seconds,
    pgTransactionsPerSecond: transactions / seconds,
    lockRefreshesPerSecond: n / (Math.min(LOCK_REFRESH_MS, LOCK_EXPIRY_MS / 3) / 1000),
    placement: Array.from({ length: n }, (_, r) => [...progress.owner.values()].filter((o) => o === r).length),
    handoffsAtStart: progress.handoffsBefore(settled),
    handoffs: progress.handoffs
  }
  console.log(
    `${n} runner(s) at ${cpu} CPU each: settled after ${result.settledAfter.toFixed(1)} s, ` +
      `${Math.round(rowsPerSecond)} rows/s over ${windowSeconds.toFixed(1)} s settled, whole log ${
        seconds.toFixed(1)
      } s; ` +
      `${result.cpuMicrosPerRow.toFixed(1)} us runner CPU/row and runners' CPU ${
        fmt(result.runnerCpu)
      } while settled ` +
      `(throttled in ${fmt(result.throttledShare)} of periods); server side ${result.serverCpu.toFixed(2)} CPU; ` +
      `PostgreSQL ${Math.round(result.pgTransactionsPerSecond)} transactions/s, ` +
      `${result.lockRefreshesPerSecond.toFixed(1)} lock refreshes/s; placement ${JSON.stringify(result.placement)}, ` +
      `${result.handoffsAtStart} hand-offs at start (${progress.handoffs} in all); ${records} rows flushed exactly`
  )
  return result
})

const fmt = (xs: ReadonlyArray<number>): string => `[${xs.map((x) => x.toFixed(2)).join(", ")}]`

const main = Effect.gen(function*() {
  const unavailable = cgroupsUnavailable()
  if (unavailable !== undefined) {
    console.error(`cluster bench: cannot give each runner a CPU quota: ${unavailable}. Nothing was run.`)
    process.exitCode = 2
    return
  }
  const bin = yield* binDir
  const load = os.loadavg().map((l) => l.toFixed(2)).join(", ")
  console.log(
    `cluster scaling: ${records} rows, ${partitions} partitions${spread ? " (spread over as many shards)" : ""}, ` +
      `chunks of ${chunk}, ${rtt} ms round trip, exactly once into the fake BigQueryWrite, ${cpu} CPU per runner; ` +
      `${os.availableParallelism()} cores, load average ${load}, node ${process.version}`
  )
  const results: Array<Result> = []
  for (let round = 0; round < rounds; round++) {
    for (const n of round % 2 === 0 ? runnerCounts : runnerCounts.toReversed()) results.push(yield* runWith(n, bin))
  }
  const best = (n: number) => Math.max(...results.filter((r) => r.runners === n).map((r) => r.rowsPerSecond))
  const fastest = (n: number) => Math.min(...results.filter((r) => r.runners === n).map((r) => r.seconds))
  if (runnerCounts.includes(1)) {
    const base = best(1)
    console.log(
      `\nsettled rate relative to one runner (best of ${rounds}): ` +
        runnerCounts.filter((n) => n > 1).map((n) =>
          `${n} runners ${(best(n) / base).toFixed(2)}x (whole log ${(fastest(1) / fastest(n)).toFixed(2)}x)`
        ).join(", ") + `; load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(", ")}`
    )
  }
  const dir = path.join(here, "results")
  fs.mkdirSync(dir, { recursive: true })
  const date = new Date().toISOString()
  fs.appendFileSync(
    path.join(dir, "cluster.jsonl"),
    results.map((r) =>
      JSON.stringify({ bench: "cluster", date, rtt, records, partitions, chunk, cpu, spread, load, ...r })
    ).join("\n") + "\n"
  )
})

await Effect.runPromise(main)
