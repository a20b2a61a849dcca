/**
 * `npm start -- --cluster`: the demo's event log split into partitions and written exactly once into BigQuery, and
 * into Bigtable exactly-once counters (per kind of event: how many, and their amounts in cents), by three runner
 * processes on `effect/cluster` (`Partitions.layer`), with shard locks in a private PostgreSQL.
 *
 * It starts the local emulators (as `npm start` does) and PostgreSQL (the tests' harness, test/support/postgres.ts:
 * Debian's package installed when missing, `initdb` into the ignored `.tmp/postgres/`, a free loopback port), then
 * three runners (`cluster/runner.ts`, child processes), and shows which runner owns which partition and how many
 * events of each are committed. Once a third of the log is in, it SIGKILLs the runner owning the most partitions:
 * its shard locks expire (5 s) and its partitions resume on the other two from their last checkpoints; the demo
 * prints the time from the kill to each moved partition's first write on its new owner. At the end it reads both
 * back: COUNT = COUNT DISTINCT = N in BigQuery, and every Bigtable counter equal to the log's. The runners are stopped (SIGTERM, then SIGKILL) and PostgreSQL and the
 * emulators with them, at the end, on a failure, or on Ctrl-C.
 */
import { Clock, Data, Effect, Fiber, Layer, Option } from "effect"
import { BigQueryClient, RowSerializer, TableDestination, TableSchema } from "effect-gcp-sinks/BigQuery"
import { BigtableClient } from "effect-gcp-sinks/Bigtable"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"
import { freePort } from "../../../test/support/emulatorProcess.ts"
import * as Postgres from "../../../test/support/postgres.ts"
import { demoProject, type Endpoints } from "../emulators.ts"
import { Event as EventSchema, event } from "../events.ts"
import type { DemoConfig } from "../flags.ts"
import { bigtableCounters } from "../readback.ts"

/** What `--cluster` fails with: a runner that died on its own, a step that did not come in time, a count off. */
export class ClusterDemoError extends Data.TaggedError("ClusterDemoError")<{ readonly message: string }> {}

export const RUNNERS = 3
export const PARTITIONS = 12
const LOCK_EXPIRY_MS = 5_000
const LOCK_REFRESH_MS = 1_500
/** The pause between two chunks of one partition; a partition is written in about `CHUNKS` of them. */
const CHUNK_DELAY_MS = 1_000
const CHUNKS = 30

const runnerScript = fileURLToPath(new URL("./runner.ts", import.meta.url))

const now = (): number => Math.round(performance.timeOrigin + performance.now())

interface Step {
  readonly runner: number
  readonly backend: string
  readonly name: string
  readonly partition: number | undefined
  readonly at: number
  readonly data: Record<string, unknown>
}

interface Runner {
  readonly index: number
  readonly pid: number
  readonly exited: () => boolean
  readonly stderrTail: () => string
  /** SIGTERM to its process group, SIGKILL after `grace` if it is still running. */
  readonly stop: (grace: number) => Effect.Effect<void>
  readonly kill: Effect.Effect<void>
}

const asRecord = (u: unknown): Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? { ...u } : {}

/** One runner process, in its own process group (Ctrl-C reaches the demo, which stops the runners in order). */
const spawnRunner = (index: number, env: Record<string, string>, onStep: (step: Step) => void): Runner => {
  const child = spawn(process.execPath, ["--conditions=effect-gcp-sinks:source", runnerScript], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  const tail: Array<string> = []
  const remember = (line: string) => {
    tail.push(line)
    if (tail.length > 30) tail.shift()
  }
  let closed = false
  const close = new Promise<void>((resolve) =>
    child.once("close", () => {
      closed = true
      resolve()
    })
  )
  child.once("error", (error) => remember(`spawn failed: ${String(error)}`))
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    const match = /^STEP (\S+) (.*)$/.exec(line)
    if (match?.[1] === undefined) return remember(line)
    let data: Record<string, unknown> = {}
    try {
      data = asRecord(JSON.parse(match[2] ?? "null"))
    } catch {
      return remember(line)
    }
    onStep({
      runner: index,
      backend: typeof data["backend"] === "string" ? data["backend"] : "",
      name: match[1],
      partition: typeof data["partition"] === "number" ? data["partition"] : undefined,
      at: typeof data["at"] === "number" ? data["at"] : now(),
      data
    })
  })
  readline.createInterface({ input: child.stderr }).on("line", remember)
  const signal = (sig: NodeJS.Signals) => {
    if (closed || child.pid === undefined) return
    try {
      process.kill(-child.pid, sig)
    } catch {
      // already gone
    }
  }
  return {
    index,
    pid: child.pid ?? -1,
    exited: () => closed,
    stderrTail: () => tail.join("\n"),
    kill: Effect.sync(() => signal("SIGKILL")),
    stop: (grace) =>
      Effect.gen(function*() {
        if (closed) return
        signal("SIGTERM")
        const stopped = yield* Effect.promise(() => close).pipe(Effect.timeoutOption(`${grace} millis`))
        if (Option.isNone(stopped)) {
          signal("SIGKILL")
          yield* Effect.promise(() => close).pipe(Effect.timeoutOption("2 seconds"))
        }
      })
  }
}

/**
 * What the runners reported so far, folded as it arrives: owners and committed events of the BigQuery writers
 * (the Bigtable writers' partitions hash to shards of their own), and the partitions done of both.
 */
class State {
  readonly steps: Array<Step> = []
  /** The runner that last started each BigQuery partition. */
  readonly owner = new Map<number, number>()
  /** Events of each partition in the table (its last committed checkpoint's position). */
  readonly committed = new Map<number, number>()
  readonly done = new Set<number>()
  /** Bigtable partitions whose counters are complete. */
  readonly countersDone = new Set<number>()

  add(step: Step): void {
    this.steps.push(step)
    const p = step.partition
    if (p === undefined) return
    if (step.backend === "bt") {
      if (step.name === "done") this.countersDone.add(p)
      return
    }
    if (step.name === "started") this.owner.set(p, step.runner)
    if (step.name === "committed") {
      const position = Number(step.data["position"])
      if (position > (this.committed.get(p) ?? 0)) this.committed.set(p, position)
    }
    if (step.name === "done") this.done.add(p)
  }

  get totalCommitted(): number {
    let sum = 0
    for (const n of this.committed.values()) sum += n
    return sum
  }

  ownedBy(runner: number): Array<number> {
    return [...this.owner].filter(([, r]) => r === runner).map(([p]) => p).toSorted((a, b) => a - b)
  }
}

const formatInt = (n: number): string => n.toLocaleString("en-US")

const say = (line: string): Effect.Effect<void> => Effect.sync(() => void process.stdout.write(`${line}\n`))

/** The run's live view: who owns what and how much of each partition is committed, every 3 seconds. */
const frame = (
  state: State,
  runners: ReadonlyArray<Runner>,
  total: number,
  sizeOf: (p: number) => number,
  t0: number
) =>
  Effect.gen(function*() {
    const seconds = ((yield* Clock.currentTimeMillis) - t0) / 1000
    const lines = [
      `[${seconds.toFixed(1).padStart(5)} s] ${formatInt(state.totalCommitted)} of ${formatInt(total)} events ` +
      `committed to BigQuery (partition: events committed of ${formatInt(sizeOf(PARTITIONS - 1))}, + complete); ` +
      `Bigtable counters complete for ${state.countersDone.size} of ${PARTITIONS} partitions`
    ]
    for (const r of runners) {
      const owned = state.ownedBy(r.index)
      const parts = owned.map((p) => `p${p} ${state.committed.get(p) ?? 0}${state.done.has(p) ? "+" : ""}`)
      lines.push(
        `  runner ${r.index}: ` +
          (r.exited() ? `dead (pid ${r.pid} SIGKILLed)` : owned.length === 0 ? "no partitions" : parts.join("  "))
      )
    }
    yield* say(lines.join("\n"))
  })

/** What the counters hold once every event `0 .. total - 1` is counted once: per kind, events and cents. */
const expectedCounters = (total: number): Map<string, { readonly n: bigint; readonly cents: bigint }> => {
  const sums = new Map<string, { n: bigint; cents: bigint }>()
  for (let n = 0; n < total; n++) {
    const e = event(n, 0)
    const row = `kind-${e.kind}`
    const sum = sums.get(row) ?? { n: 0n, cents: 0n }
    sums.set(row, { n: sum.n + 1n, cents: sum.cents + (e.id % 10_000n) })
  }
  return sums
}

/** Runs the cluster demo against the emulators at `local`; fails when the read-back does not match. */
export const run = (config: DemoConfig, local: Endpoints) => {
  const state = new State()
  return Effect.gen(function*() {
    const total = config.events
    const sizeOf = (p: number): number => Math.max(0, Math.ceil((total - p) / PARTITIONS))
    const chunk = Math.max(1, Math.ceil(sizeOf(0) / CHUNKS))

    yield* Effect.log("starting PostgreSQL for the runner storage (shard locks)")
    const pg = yield* Postgres.start
    yield* Effect.log(`PostgreSQL on ${pg.host}:${pg.port} (pid ${pg.pid}, data in ${pg.dataDir})`)

    const bigquery = yield* BigQueryClient.BigQueryClient
    const tableId = `cluster_events_${Date.now()}`
    const table = yield* TableDestination.make({ projectId: demoProject, datasetId: config.dataset, tableId })
    const serializer = yield* RowSerializer.fromSchema(EventSchema)
    yield* Effect.tryPromise(() => bigquery.rest.dataset(config.dataset).get({ autoCreate: true }))
    yield* Effect.tryPromise(() =>
      bigquery.rest.dataset(config.dataset).createTable(tableId, {
        schema: TableSchema.toRest(serializer.tableSchema(table))
      })
    )
    // the Bigtable counters: an aggregate family `c` (INT64 sums) and the exactly-once marker family `m`
    const countersTable = `cluster_counters_${Date.now()}`
    yield* Effect.gen(function*() {
      const admin = yield* BigtableClient.BigtableClient
      yield* admin.createTable({
        instanceName: `projects/${demoProject}/instances/${config.instance}`,
        tableId: countersTable,
        columnFamilies: {
          c: {
            valueType: { aggregateType: { inputType: { int64Type: { encoding: { bigEndianBytes: {} } } }, sum: {} } }
          },
          m: {}
        }
      })
    }).pipe(
      Effect.provide(Layer.fresh(BigtableClient.layer({ projectId: demoProject, emulator: { grpc: local.bigtable } })))
    )
    const storeDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-gcp-sinks-cluster-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )

    const runners: Array<Runner> = []
    // one finalizer for all runners: stopped together, before PostgreSQL and the emulators (released later)
    yield* Effect.addFinalizer(() =>
      Effect.forEach(runners, (r) => r.stop(5_000), { concurrency: "unbounded", discard: true })
    )
    const t0 = yield* Clock.currentTimeMillis
    const elapsed = (at: number) => `${((at - t0) / 1000).toFixed(1).padStart(5)} s`
    let victim = -1
    let killAt = 0
    const onStep = (step: Step) => {
      state.add(step)
      const p = `p${step.partition}`
      // the Bigtable writers' steps are not shown one by one: the frame and the final check cover them
      const line = step.backend === "bt" ? undefined : step.name === "ready"
        ? `runner ${step.runner} joined the cluster`
        : step.name === "started"
        ? `${p} starts on runner ${step.runner} at event ${String(step.data["from"])} of ${sizeOf(step.partition ?? 0)}`
        : step.name === "handedOff"
        ? `${p} handed off by runner ${step.runner} (final checkpoint taken)`
        : step.name === "fenced"
        ? `${p} on runner ${step.runner} fenced by the checkpoint store (another runner owns it now)`
        : step.name === "done"
        ? `${p} complete on runner ${step.runner}`
        : step.name === "first" && killAt > 0 && step.runner !== victim && wasOwned(step.partition)
        ? `${p} writing again on runner ${step.runner}, ${formatInt(step.at - killAt)} ms after the kill`
        : undefined
      if (line !== undefined) process.stdout.write(`[${elapsed(step.at)}] ${line}\n`)
    }
    let moved: ReadonlyArray<number> = []
    const wasOwned = (p: number | undefined) => p !== undefined && moved.includes(p)

    const env = (port: number): Record<string, string> => ({
      DEMO_CLUSTER_NAME: `demo-${tableId}`,
      DEMO_CLUSTER_PARTITIONS: String(PARTITIONS),
      DEMO_CLUSTER_EVENTS: String(total),
      DEMO_CLUSTER_CHUNK: String(chunk),
      DEMO_CLUSTER_CHUNK_DELAY_MS: String(CHUNK_DELAY_MS),
      DEMO_CLUSTER_RUNNER_PORT: String(port),
      DEMO_CLUSTER_STORE_DIR: storeDir,
      DEMO_CLUSTER_PROJECT: demoProject,
      DEMO_CLUSTER_DATASET: config.dataset,
      DEMO_CLUSTER_TABLE: tableId,
      DEMO_CLUSTER_BQ_GRPC: local.bigqueryGrpc,
      DEMO_CLUSTER_BQ_REST: local.bigqueryRest,
      DEMO_CLUSTER_BT_EMULATOR: local.bigtable,
      DEMO_CLUSTER_BT_INSTANCE: config.instance,
      DEMO_CLUSTER_BT_TABLE: countersTable,
      DEMO_CLUSTER_PG_HOST: pg.host,
      DEMO_CLUSTER_PG_PORT: String(pg.port),
      DEMO_CLUSTER_LOCK_EXPIRY_MS: String(LOCK_EXPIRY_MS),
      DEMO_CLUSTER_LOCK_REFRESH_MS: String(LOCK_REFRESH_MS),
      METADATA_SERVER_DETECTION: "none"
    })
    yield* Effect.log(
      `${RUNNERS} runners, ${PARTITIONS} partitions, ${formatInt(total)} events into BigQuery ${table} and Bigtable ` +
        `counters ${countersTable}, each exactly once; ` +
        `shard lock expiry ${LOCK_EXPIRY_MS / 1000} s, refresh ${LOCK_REFRESH_MS / 1000} s`
    )
    for (let i = 0; i < RUNNERS; i++) {
      const port = yield* freePort
      runners.push(spawnRunner(i, env(port), onStep))
    }

    const display = yield* Effect.forkScoped(
      Effect.forever(Effect.andThen(Effect.sleep("3 seconds"), frame(state, runners, total, sizeOf, t0)))
    )
    /** Waits until `done()`, checking every 200 ms; fails after `within` ms or when a live runner dies. */
    const until = (done: () => boolean, within: number, what: string) =>
      Effect.gen(function*() {
        const deadline = now() + within
        while (!done()) {
          const dead = runners.find((r) => r.index !== victim && r.exited())
          if (dead !== undefined) {
            return yield* new ClusterDemoError({
              message: `runner ${dead.index} exited on its own while waiting for ${what}:\n${dead.stderrTail()}`
            })
          }
          if (now() > deadline) {
            return yield* new ClusterDemoError({
              message: `timed out waiting for ${what}\n` +
                runners.map((r) => `--- runner ${r.index} ---\n${r.stderrTail()}`).join("\n")
            })
          }
          yield* Effect.sleep("200 millis")
        }
      })

    // placed, the start-up hand-off settled (runners started together first run everything on one), and a
    // third of the log in: then the runner owning the most partitions dies
    let stableSince = now()
    let last = ""
    yield* until(
      () => {
        const placement = JSON.stringify([...state.owner].toSorted(([a], [b]) => a - b))
        if (placement !== last) {
          last = placement
          stableSince = now()
        }
        return state.owner.size === PARTITIONS && now() - stableSince > 2_000 &&
          new Set(state.owner.values()).size >= 2 && state.totalCommitted >= total / 3
      },
      90_000,
      "the partitions to be placed and a third of the log to be written"
    )
    const counts = runners.map((r) => state.ownedBy(r.index).length)
    victim = counts.indexOf(Math.max(...counts))
    moved = state.ownedBy(victim)
    const target = runners[victim]
    if (target === undefined) return yield* new ClusterDemoError({ message: "no runner to kill" })
    yield* frame(state, runners, total, sizeOf, t0)
    killAt = now()
    yield* target.kill
    yield* say(
      `[${elapsed(killAt)}] SIGKILL runner ${victim} (pid ${target.pid}), owner of ${
        moved.map((p) => `p${p}`).join(", ")
      }: ` +
        `its shard locks expire within ${LOCK_EXPIRY_MS / 1000} s, then its partitions resume elsewhere`
    )
    const firstAfterKill = (p: number) =>
      state.steps.find((s) =>
        s.backend === "bq" && s.name === "first" && s.partition === p && s.runner !== victim && s.at > killAt
      )
    yield* until(
      () => moved.every((p) => firstAfterKill(p) !== undefined),
      45_000,
      "the killed runner's partitions to move"
    )
    yield* until(
      () => state.done.size === PARTITIONS && state.countersDone.size === PARTITIONS,
      180_000,
      "every partition of both backends to complete"
    )
    const writtenAt = now()
    yield* Fiber.interrupt(display)
    yield* frame(state, runners, total, sizeOf, t0)

    const [rows] = yield* Effect.tryPromise(() =>
      bigquery.rest.query({
        query: `SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM \`${table}\``,
        useQueryCache: false
      })
    )
    const first = asRecord(rows[0])
    const count = Number(first["n"])
    const distinct = Number(first["d"])
    const failover = moved.map((p) => {
      const s = firstAfterKill(p)
      return { p, runner: s?.runner ?? -1, millis: s === undefined ? Number.NaN : s.at - killAt }
    })
    const fenced = state.steps.filter((s) => s.name === "fenced").length
    const read = yield* bigtableCounters({
      projectId: demoProject,
      instanceId: config.instance,
      tableId: countersTable,
      emulator: local.bigtable
    })
    const expected = expectedCounters(total)
    const countersExact = [...expected].every(([row, want]) => {
      const got = read.get(row)
      return got !== undefined && got.n === want.n && got.cents === want.cents
    }) && read.size === expected.size
    yield* say(
      `\nfailover (SIGKILL -> first write on the new owner; lock expiry ${LOCK_EXPIRY_MS / 1000} s):\n` +
        failover.map((f) => `  p${f.p} -> runner ${f.runner}: ${formatInt(f.millis)} ms`).join("\n") +
        `\n\nwrote ${formatInt(total)} events in ${((writtenAt - t0) / 1000).toFixed(1)} s on ${RUNNERS} runners ` +
        `(${state.steps.filter((s) => s.name === "handedOff").length} hand-offs, ${fenced} fenced saves)\n` +
        `read back: BigQuery COUNT ${formatInt(count)}, COUNT DISTINCT ${formatInt(distinct)}, expected ` +
        `${formatInt(total)}\n` +
        [...expected].map(([row, want]) => {
          const got = read.get(row)
          return `  Bigtable ${row}: ${formatInt(Number(got?.n ?? 0))} events, ${formatInt(Number(got?.cents ?? 0))} ` +
            `cents; expected ${formatInt(Number(want.n))}, ${formatInt(Number(want.cents))}`
        }).join("\n")
    )
    if (count !== total || distinct !== total) {
      return yield* new ClusterDemoError({ message: "the table does not hold every event exactly once" })
    }
    if (!countersExact) {
      return yield* new ClusterDemoError({ message: "the Bigtable counters do not count every event exactly once" })
    }
    yield* say(
      "every event exactly once in both, through a runner's death; stopping the runners and PostgreSQL"
    )
  }).pipe(
    Effect.onInterrupt(() =>
      say(
        `\ninterrupted with ${formatInt(state.totalCommitted)} of ${formatInt(config.events)} events committed; ` +
          "stopping the runners (SIGTERM: they release their shards), PostgreSQL and the emulators"
      )
    )
  )
}
