/**
 * The cluster's scaling (issue 26, item 4): the same partitioned log written exactly once into BigQuery by 1,
 * 2 and 3 runner processes on `effect/cluster` (`test/Cluster/runnerChild.ts`, shard locks in a private
 * PostgreSQL), with a round trip injected in front of the BigQuery emulator's gRPC port (the fault proxy's
 * `latencyMillis`), as a writer far from the service sees it. The figure is the completion time of the whole
 * log, from the runners' start to the last partition's final checkpoint, so start-up hand-offs and an uneven
 * placement count against it; each run checks COUNT = DISTINCT = N, and reports the runners' CPU per row
 * (read from `/proc`).
 *
 *   npx node bench/cluster.bench.ts [--rtt 10] [--records 120000] [--partitions 12] [--chunk 500] [--rounds 1]
 */
import { Effect, Layer, Queue } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BigQueryEmulator } from "../test/support/BigQueryEmulator.ts"
import * as Clients from "../test/support/clients.ts"
import * as CrashProof from "../test/support/crashProof.ts"
import { freePort } from "../test/support/emulatorProcess.ts"
import * as FaultProxy from "../test/support/faultProxy.ts"
import { PostgresServer } from "../test/support/postgres.ts"
import { numberArg } from "./args.ts"

const here = path.dirname(new URL(import.meta.url).pathname)
const child = path.join(here, "..", "test", "Cluster", "runnerChild.ts")
const rtt = numberArg("rtt", 10)
const records = numberArg("records", 120_000)
const partitions = numberArg("partitions", 12)
const chunk = numberArg("chunk", 500)
const rounds = numberArg("rounds", 1)
const only = numberArg("runners", 0)
const patience = numberArg("patience-seconds", 600)

/** CPU seconds (user + system) a process has used so far, from `/proc/<pid>/stat`. */
const cpuSeconds = (pid: number): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) / 100
}

interface Result {
  readonly runners: number
  readonly seconds: number
  readonly rowsPerSecond: number
  readonly cpuMicrosPerRow: number
  readonly placement: ReadonlyArray<number>
  readonly handoffs: number
}

/** One run: a fresh PostgreSQL, table and store; `n` runners until every partition is done. */
const runWith = (n: number) =>
  Effect.gen(function*() {
    const pg = yield* PostgresServer
    const emulator = yield* BigQueryEmulator
    const proxy = yield* FaultProxy.start({
      upstreamHost: emulator.grpcHost,
      upstreamPort: emulator.grpcPort,
      unavailableEvery: 0,
      latencyMillis: rtt
    })
    const bq = yield* Clients.bigQuery(emulator)
    const datasetId = Clients.uniqueId("scale")
    yield* Effect.tryPromise(() => bq.createDataset(datasetId))
    yield* Effect.tryPromise(() =>
      bq.dataset(datasetId).createTable("ids", {
        schema: { fields: [{ name: "id", type: "INT64", mode: "REQUIRED" }] }
      })
    )
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "cluster-bench-"))),
      (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
    )
    const done = new Set<number>()
    /** Each partition's steps, for the message of a run that does not finish. */
    const log = new Map<number, Array<string>>()
    const started = new Map<number, number>()
    let handoffs = 0
    const t0 = performance.now()
    const runners: Array<CrashProof.Child> = []
    for (let r = 0; r < n; r++) {
      const port = yield* freePort
      const c = yield* CrashProof.startChild({
        script: child,
        env: {
          CLUSTER_PG_HOST: pg.host,
          CLUSTER_PG_PORT: String(pg.port),
          CLUSTER_RUNNER_PORT: String(port),
          CLUSTER_BQ_GRPC: proxy.target,
          CLUSTER_BQ_REST: `127.0.0.1:${emulator.restPort}`,
          CLUSTER_PROJECT: emulator.projectId,
          CLUSTER_DATASET: datasetId,
          CLUSTER_TABLE: "ids",
          CLUSTER_STORE_DIR: dir,
          CLUSTER_NAME: `scale-${datasetId}`,
          CLUSTER_PARTITIONS: String(partitions),
          CLUSTER_TOTAL: String(records),
          CLUSTER_CHUNK: String(chunk),
          CLUSTER_CHUNK_DELAY_MS: "0",
          CLUSTER_EVERY: "1000",
          CLUSTER_LOCK_EXPIRY_MS: "5000",
          CLUSTER_LOCK_REFRESH_MS: "1500",
          METADATA_SERVER_DETECTION: "none"
        }
      })
      runners.push(c)
      yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
        const e = yield* Queue.take(c.events)
        const data = typeof e.data === "object" && e.data !== null ? (e.data as Record<string, unknown>) : {}
        const partition = typeof data.partition === "number" ? data.partition : -1
        const steps = log.get(partition) ?? []
        steps.push(`${e.name}@runner${r}${"from" in data ? ` from ${String(data.from)}` : ""}`)
        log.set(partition, steps)
        if (e.name === "started") started.set(partition, r)
        if (e.name === "partitionDone") done.add(partition)
        if (e.name === "handedOff") handoffs++
      })))
    }
    const deadline = performance.now() + patience * 1000
    while (done.size < partitions) {
      if (performance.now() > deadline) {
        const stuck = Array.from({ length: partitions }, (_, p) => p).filter((p) => !done.has(p))
          .map((p) => `  partition ${p}: ${(log.get(p) ?? []).join(", ")}`)
        return yield* Effect.die(
          new Error(`${n} runners: ${done.size} of ${partitions} partitions done in ${patience} s\n${stuck.join("\n")}`)
        )
      }
      yield* Effect.sleep("50 millis")
    }
    const seconds = (performance.now() - t0) / 1000
    const cpu = runners.reduce((sum, c) => sum + cpuSeconds(c.pid), 0)
    const [rows] = yield* Effect.tryPromise(() =>
      bq.query({
        query: `SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM \`${emulator.projectId}.${datasetId}.ids\``,
        useQueryCache: false
      })
    )
    const row = (rows as Array<{ n: unknown; d: unknown }>)[0]
    if (Number(row?.n) !== records || Number(row?.d) !== records) {
      return yield* Effect.die(new Error(`${n} runners: COUNT ${row?.n}, DISTINCT ${row?.d}, expected ${records}`))
    }
    const placement = Array.from({ length: n }, (_, r) => [...started.values()].filter((o) => o === r).length)
    const result: Result = {
      runners: n,
      seconds,
      rowsPerSecond: records / seconds,
      cpuMicrosPerRow: (cpu / records) * 1e6,
      placement,
      handoffs
    }
    console.log(
      `${n} runner(s): ${seconds.toFixed(1)} s, ${Math.round(result.rowsPerSecond)} rows/s, ` +
        `${result.cpuMicrosPerRow.toFixed(1)} us CPU/row (runners), last placement ${JSON.stringify(placement)}, ` +
        `${handoffs} hand-offs; COUNT = DISTINCT = ${records}`
    )
    return result
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.mergeAll(PostgresServer.layer, BigQueryEmulator.layerIsolated).pipe(Layer.fresh))
  )

const main = Effect.gen(function*() {
  console.log(
    `cluster scaling: ${records} rows, ${partitions} partitions, chunks of ${chunk}, ${rtt} ms round trip, ` +
      `${os.availableParallelism()} cores, node ${process.version}`
  )
  const results: Array<Result> = []
  for (let round = 0; round < rounds; round++) {
    // alternate the order, so neither end of a round always meets the warmer machine
    for (const n of round % 2 === 0 ? [1, 2, 3] : [3, 2, 1]) {
      if (only === 0 || only === n) results.push(yield* runWith(n))
    }
  }
  const best = (n: number) => Math.max(...results.filter((r) => r.runners === n).map((r) => r.rowsPerSecond))
  if (only === 0) {
    console.log(
      `\nrows/s relative to one runner (best of ${rounds}): 2 runners ${(best(2) / best(1)).toFixed(2)}x, ` +
        `3 runners ${(best(3) / best(1)).toFixed(2)}x`
    )
  }
  const results_ = path.join(here, "results")
  fs.mkdirSync(results_, { recursive: true })
  const date = new Date().toISOString()
  fs.appendFileSync(
    path.join(results_, "cluster.jsonl"),
    results.map((r) => JSON.stringify({ bench: "cluster", date, rtt, records, partitions, chunk, ...r })).join("\n") +
      "\n"
  )
})

await Effect.runPromise(main)
