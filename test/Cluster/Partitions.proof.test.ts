/**
 * The cluster proof, first slice (issue 26): three runner processes (`runnerChild.ts`) on `effect/cluster`
 * with shard locks in a private PostgreSQL, twelve partitions of a deterministic replayable log written
 * exactly once into one table of a private BigQuery emulator and, at once, into exactly-once counters of a
 * private Bigtable emulator (a second set of partition writers, with writer ids of their own). Once the partitions are placed, the runner
 * owning the most partitions is killed with SIGKILL; its partitions move to the other two and resume from the
 * checkpoint store. A fresh runner joins and takes partitions over from the others (hand-offs with a final
 * checkpoint); then the living runner owning the most is killed too. Then the runner owning the most is frozen (SIGSTOP) past its lock expiry until its
 * partitions resume on the others, and let go (SIGCONT): a zombie whose writers' saves the store must
 * refuse. The table ends with COUNT = COUNT DISTINCT = N and the exact SUM, every counter exact. The time from the kill (and the
 * freeze) to each moved partition's first write on its new owner is measured and bounded by the lock expiry
 * plus a restore. The zombie's end is asserted from the runners' spans (`timeline.ts`): no write its stale
 * writers begin after it wakes succeeds (no rows flushed from their BigQuery streams, no Bigtable entry applied),
 * and the time from SIGCONT to the end of its last stale writer is measured.
 *
 * No wait has a wall-clock deadline of its own: each fails once the cluster has made no progress (no writer
 * started, no write, no partition handed off or done) for `STALL_MS`, so a loaded machine that runs everything
 * slower still passes, and a stuck cluster fails within that window of its last step.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Layer, Queue } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { BigQueryEmulator } from "../support/BigQueryEmulator.ts"
import { counters, createCounterTable } from "../support/bigtableCounters.ts"
import { BigtableEmulator } from "../support/BigtableEmulator.ts"
import * as Clients from "../support/clients.ts"
import { expectedSums } from "../support/counterLog.ts"
import * as CrashProof from "../support/crashProof.ts"
import { freePort } from "../support/emulatorProcess.ts"
import { PostgresServer } from "../support/postgres.ts"
import {
  checkpointedElsewhereAfter,
  donePartitions,
  type Event,
  firstAfter,
  isProgress,
  owners,
  type Span,
  zombieReport
} from "./timeline.ts"

const child = fileURLToPath(new URL("./runnerChild.ts", import.meta.url))

const PARTITIONS = 12
const TOTAL = 100_000
/**
 * 80 increments, so 80 marker cells, a counter row: a hot row's markers cost cbtemulator every write to it
 * (docs/exactly-once.md, "The marker family's cost"; 50 counters cost it 72 CPU seconds of the proof, 1,250
 * 9). 1,250 shares 2 with the 12 partitions, as 50 did: each counter is written by 6 partitions' writers.
 */
const COUNTERS = 1_250
const LOCK_EXPIRY_MS = 10_000
const LOCK_REFRESH_MS = 3_000
const STOP_TIMEOUT_MS = 3_000
/** How long the cluster may make no progress at all before a wait fails. */
const STALL_MS = 45_000

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "cluster-proof-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const asRecord = (u: unknown): Record<string, unknown> =>
  typeof u === "object" && u !== null ? (u as Record<string, unknown>) : {}

/**
 * Until `done` holds over the events so far, checking every 100 ms; fails once no event shows progress
 * (`isProgress`) for `STALL_MS`: the deadline moves with the work done.
 */
const until = (events: ReadonlyArray<Event>, done: (events: ReadonlyArray<Event>) => boolean, what: string) =>
  Effect.gen(function*() {
    let seen = 0
    let lastProgress = performance.now()
    while (!done(events)) {
      for (; seen < events.length; seen++) {
        const e = events[seen]
        if (e !== undefined && isProgress(e)) lastProgress = performance.now()
      }
      if (performance.now() - lastProgress > STALL_MS) {
        return yield* Effect.die(new Error(`no progress for ${STALL_MS} ms while waiting for ${what}`))
      }
      yield* Effect.sleep("100 millis")
    }
  })

/** The runners' log lines (warnings, errors, the partition writers' own), for a failure's message. */
const logLines = (events: ReadonlyArray<Event>): string =>
  events.filter((e) => e.name === "log").slice(-80).map((e) =>
    `runner ${e.runner} ${new Date(e.at).toISOString()} ${String(e.data.level)} ${String(e.data.writerId ?? "")} ${
      String(e.data.message)
    }`
  ).join("\n")

layer(Layer.mergeAll(PostgresServer.layer, BigQueryEmulator.layerIsolated, BigtableEmulator.layerIsolated), {
  timeout: "180 seconds",
  excludeTestServices: true
})("cluster partitions over PostgreSQL", (it) => {
  it.effect(
    "3 runners, 12 partitions, 100,000 records exactly once into BigQuery and Bigtable counters; SIGKILL, join, SIGKILL, SIGSTOP",
    () =>
      Effect.gen(function*() {
        const pg = yield* PostgresServer
        const bigtable = yield* BigtableEmulator
        const countersTable = Clients.uniqueId("counters")
        yield* createCounterTable(bigtable, "test-project", "cluster", countersTable, { c: "INT64_SUM", m: "RAW" })
        const emulator = yield* BigQueryEmulator
        const bq = yield* Clients.bigQuery(emulator)
        const datasetId = Clients.uniqueId("cluster")
        yield* Effect.tryPromise(() => bq.createDataset(datasetId))
        yield* Effect.tryPromise(() =>
          bq.dataset(datasetId).createTable("ids", {
            schema: { fields: [{ name: "id", type: "INT64", mode: "REQUIRED" }] }
          })
        )
        const dir = yield* tempDir
        const events: Array<Event> = []
        const env = (port: number): Record<string, string> => ({
          CLUSTER_PG_HOST: pg.host,
          CLUSTER_PG_PORT: String(pg.port),
          CLUSTER_RUNNER_PORT: String(port),
          CLUSTER_BQ_GRPC: `${emulator.grpcHost}:${emulator.grpcPort}`,
          CLUSTER_BQ_REST: `127.0.0.1:${emulator.restPort}`,
          CLUSTER_PROJECT: emulator.projectId,
          CLUSTER_DATASET: datasetId,
          CLUSTER_TABLE: "ids",
          CLUSTER_BT_EMULATOR: bigtable.emulatorHost,
          CLUSTER_BT_TABLE: countersTable,
          CLUSTER_BT_COUNTERS: String(COUNTERS),
          CLUSTER_STORE_DIR: dir,
          CLUSTER_NAME: `proof-${datasetId}`,
          CLUSTER_PARTITIONS: String(PARTITIONS),
          CLUSTER_TOTAL: String(TOTAL),
          CLUSTER_CHUNK: "280",
          CLUSTER_CHUNK_DELAY_MS: "900",
          CLUSTER_EVERY: "1000",
          CLUSTER_LOCK_EXPIRY_MS: String(LOCK_EXPIRY_MS),
          CLUSTER_LOCK_REFRESH_MS: String(LOCK_REFRESH_MS),
          CLUSTER_STOP_TIMEOUT_MS: String(STOP_TIMEOUT_MS),
          METADATA_SERVER_DETECTION: "none"
        })
        const started = performance.now()
        const runners: Array<CrashProof.Child> = []
        const startRunner = Effect.fnUntraced(function*(runner: number) {
          const port = yield* freePort
          const c = yield* CrashProof.startChild({ script: child, env: env(port) })
          runners.push(c)
          yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
            const e = yield* Queue.take(c.events)
            const data = asRecord(e.data)
            const partition = typeof data.partition === "number" ? data.partition : undefined
            const at = typeof data.at === "number"
              ? data.at
              : typeof data.end === "number"
              ? data.end
              : typeof data.start === "number"
              ? data.start
              : Date.now()
            const backend = typeof data.backend === "string" ? data.backend : undefined
            events.push({ runner, backend, name: e.name, partition, at, data })
          })))
        })
        for (let runner = 0; runner < 3; runner++) yield* startRunner(runner)
        const diagnostics = () =>
          runners.map((r, i) => `--- runner ${i} (pid ${r.pid}) stderr ---\n${r.stderrTail()}`).join("\n") +
          `\n--- the runners' last log lines ---\n${logLines(events)}`

        // placed: every runner ready, every partition writing, on at least two runners
        yield* until(
          events,
          (es) =>
            es.filter((e) => e.name === "ready").length === 3 &&
            owners(es).size === PARTITIONS &&
            new Set(owners(es).values()).size >= 2 &&
            new Set(es.filter((e) => e.name === "first").map((e) => `${e.backend}:${e.partition}`)).size ===
              2 * PARTITIONS,
          "the partitions to be placed"
        ).pipe(Effect.tapDefect(() => Effect.logError(diagnostics())))
        // let the start-up hand-off settle (runners started together first run everything on one)
        yield* Effect.sleep("2 seconds")
        const placement = owners(events)
        const counts = [0, 1, 2].map((r) => [...placement.values()].filter((o) => o === r).length)
        const victimIndex = counts.indexOf(Math.max(...counts))
        const moved = [...placement].filter(([, o]) => o === victimIndex).map(([p]) => p)
        const victim = runners[victimIndex]
        assert.isDefined(victim)
        if (victim === undefined) return
        const killAt = Date.now()
        yield* victim.kill
        yield* Effect.log(
          `placement before the kill (runner -> partitions): ${
            JSON.stringify(counts)
          }; killed runner ${victimIndex}, owning ${JSON.stringify(moved)}`
        )

        // every partition of the killed runner writes again on a survivor
        yield* until(
          events,
          (es) => moved.every((p) => firstAfter(es, p, (r) => r !== victimIndex, killAt) !== undefined),
          "the killed runner's partitions to move"
        ).pipe(Effect.tapDefect(() => Effect.logError(diagnostics())))

        // a fresh runner joins: partitions are handed off to it (their writers end their input and checkpoint)
        const joinAt = Date.now()
        yield* startRunner(3)
        yield* until(
          events,
          (es) => es.some((e) => e.name === "first" && e.backend === "bq" && e.runner === 3),
          "the fresh runner to take partitions"
        ).pipe(Effect.tapDefect(() => Effect.logError(diagnostics())))
        const joined = events.find((e) => e.name === "first" && e.backend === "bq" && e.runner === 3)
        yield* Effect.sleep("1 second")

        // a second SIGKILL: the living runner owning the most partitions, which move to the others
        const afterJoin = owners(events)
        const ownedNow = (r: number) => [...afterJoin].filter(([, o]) => o === r).map(([p]) => p)
        const secondIndex = [0, 1, 2, 3].filter((r) => r !== victimIndex).reduce((a, b) =>
          ownedNow(b).length > ownedNow(a).length ? b : a
        )
        const secondMoved = ownedNow(secondIndex)
        const second = runners[secondIndex]
        if (second === undefined) return assert.fail("no runner to kill a second time")
        const secondKillAt = Date.now()
        yield* second.kill
        yield* until(
          events,
          (es) =>
            secondMoved.every((p) =>
              firstAfter(es, p, (r) => r !== victimIndex && r !== secondIndex, secondKillAt) !== undefined
            ),
          "the second killed runner's partitions to move"
        ).pipe(Effect.tapDefect(() => Effect.logError(diagnostics())))
        const secondFailover = secondMoved.map((p) => {
          const first = firstAfter(events, p, (r) => r !== victimIndex && r !== secondIndex, secondKillAt)
          return first === undefined ? Number.POSITIVE_INFINITY : first.at - secondKillAt
        })
        const dead = (r: number) => r === victimIndex || r === secondIndex

        // freeze the runner owning the most partitions past its lock expiry, until its partitions resume on
        // the others, then let it run again: a zombie whose writers must be fenced
        const survivors = [0, 1, 2, 3].filter((r) => !dead(r))
        const afterKill = owners(events)
        const owned = (r: number) => [...afterKill].filter(([, o]) => o === r).map(([p]) => p)
        const frozenIndex = survivors.reduce((a, b) => (owned(b).length > owned(a).length ? b : a))
        const others = (r: number) => r !== frozenIndex && !dead(r)
        const frozen = runners[frozenIndex]
        const frozenPartitions = owned(frozenIndex)
        // its writers of both backends (their singletons hash to shards of their own) that still have work: a
        // partition already written to its end takes no further checkpoint
        const doneBefore = donePartitions(events)
        const frozenWriters = (["bq", "bt"] as const).flatMap((backend) =>
          [...owners(events, backend)].filter(([p, o]) => o === frozenIndex && !doneBefore.has(`${backend}:${p}`))
            .map(([p]) => ({ key: `${backend}:${p}`, writerId: `proof-${datasetId}-${backend}-${p}` }))
        )
        if (frozen === undefined) return assert.fail("no runner to freeze")
        const stopAt = Date.now()
        process.kill(frozen.pid, "SIGSTOP")
        yield* until(
          events,
          (es) =>
            frozenPartitions.every((p) =>
              es.some((e) =>
                e.name === "started" && e.backend === "bq" && e.partition === p && others(e.runner) && e.at > stopAt
              )
            ),
          "the frozen runner's partitions to move"
        ).pipe(
          Effect.tapDefect(() => Effect.sync(() => process.kill(frozen.pid, "SIGCONT"))),
          Effect.tapDefect(() => Effect.logError(diagnostics()))
        )
        // each of its writers commits a checkpoint on its new owner before the zombie wakes up: every save the
        // zombie's writers try after waking is then refused
        yield* until(
          events,
          (es) =>
            frozenWriters.every((w) =>
              checkpointedElsewhereAfter(es, w.writerId, (r) => r === frozenIndex, stopAt) ||
              donePartitions(es).has(w.key)
            ),
          "the frozen runner's writers to commit on their new owners"
        ).pipe(
          Effect.tapDefect(() => Effect.sync(() => process.kill(frozen.pid, "SIGCONT"))),
          Effect.tapDefect(() => Effect.logError(diagnostics()))
        )
        const contAt = Date.now()
        process.kill(frozen.pid, "SIGCONT")
        yield* Effect.log(
          `froze runner ${frozenIndex} (owning ${JSON.stringify(frozenPartitions)}) for ${contAt - stopAt}ms`
        )

        // the zombie's stale writers end (Sharding stops the partitions it no longer holds), and the rest finish
        yield* until(
          events,
          (es) => zombieReport(es, frozenIndex, stopAt, contAt).endMillis < Number.POSITIVE_INFINITY,
          "the frozen runner's stale writers to end"
        ).pipe(Effect.tapDefect(() => Effect.logError(diagnostics())))
        yield* until(
          events,
          (es) => donePartitions(es).size === 2 * PARTITIONS,
          "every partition to finish"
        ).pipe(Effect.tapDefect(() => Effect.logError(diagnostics())))
        const zombie = zombieReport(events, frozenIndex, stopAt, contAt)
        // the whole timeline, for a closer look (CLUSTER_PROOF_EVENTS=<file>)
        const dump = process.env["CLUSTER_PROOF_EVENTS"]
        if (dump !== undefined) {
          fs.writeFileSync(dump, JSON.stringify({ stopAt, contAt, frozenIndex, killAt, secondKillAt, joinAt, events }))
        }
        const wallMillis = Math.round(performance.now() - started)

        const [rows] = yield* Effect.tryPromise(() =>
          bq.query({
            query: `SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d, COALESCE(SUM(id), 0) AS s ` +
              `FROM \`${emulator.projectId}.${datasetId}.ids\``,
            useQueryCache: false
          })
        )
        const row = (rows as Array<{ n: unknown; d: unknown; s: unknown }>)[0]
        const table = { count: Number(row?.n), distinct: Number(row?.d), sum: Number(row?.s) }

        // kill -> first write of each moved partition on its new owner
        const failover = moved.map((p) => {
          const first = events.find((e) =>
            e.name === "first" && e.backend === "bq" && e.partition === p && e.runner !== victimIndex && e.at > killAt
          )
          return {
            partition: p,
            millis: first === undefined ? Number.POSITIVE_INFINITY : first.at - killAt,
            to: first?.runner
          }
        })
        const worst = Math.max(...failover.map((f) => f.millis))
        const handoffs = events.filter((e) => e.name === "handedOff").length
        const zombieConflicts = events.filter((e) =>
          e.name === "conflict" && e.runner === frozenIndex && e.at >= contAt
        )
        const zombieMoves = frozenPartitions.map((p) => {
          const first = firstAfter(events, p, others, stopAt)
          return first === undefined ? Number.POSITIVE_INFINITY : first.at - stopAt
        })
        yield* Effect.log(
          `cluster proof: handoffs=${handoffs} N=${TOTAL} partitions=${PARTITIONS} COUNT=${table.count} DISTINCT=${table.distinct} SUM=${table.sum} ` +
            `wall=${wallMillis}ms lockExpiry=${LOCK_EXPIRY_MS}ms refresh=${LOCK_REFRESH_MS}ms ` +
            `failover(kill -> first write on the new owner)=${JSON.stringify(failover)} worst=${worst}ms ` +
            `join -> first write on the fresh runner=${joined === undefined ? "none" : joined.at - joinAt}ms ` +
            `second kill (runner ${secondIndex}) -> first write on the new owner=${JSON.stringify(secondFailover)}ms ` +
            `SIGSTOP -> first write on the new owner=${JSON.stringify(zombieMoves)}ms ` +
            `zombie conflicts after SIGCONT=${JSON.stringify(zombieConflicts.map((e) => e.data.writerId))} ` +
            `zombie: ${zombie.lives} stale writers, their runs ended ${JSON.stringify(zombie.outcomes)}, ` +
            `SIGCONT -> last stale writer's end=${zombie.endMillis}ms, ` +
            `writes begun after SIGCONT=${zombie.writesAfterWake.length} (besides ${zombie.commitsFinishedAfterWake} ` +
            `commits of checkpoints saved before the freeze)`
        )
        assert.deepStrictEqual(table, { count: TOTAL, distinct: TOTAL, sum: (TOTAL * (TOTAL - 1)) / 2 })
        // every Bigtable counter exact
        const read = yield* counters(bigtable, "test-project", "cluster", countersTable)
        const expected = expectedSums(TOTAL, COUNTERS)
        assert.deepStrictEqual(new Map([...read.sums].toSorted()), new Map([...expected].toSorted()))
        assert.isAtLeast(moved.length, 1)
        for (const f of failover) {
          assert.notStrictEqual(f.to, victimIndex)
          // the lock expiry, a membership poll and a restore
          assert.isBelow(f.millis, LOCK_EXPIRY_MS + 10_000, `partition ${f.partition} moved too slowly`)
        }
        assert.isAtLeast(secondMoved.length, 1, "the second runner killed owned partitions")
        for (const millis of secondFailover) assert.isBelow(millis, LOCK_EXPIRY_MS + 10_000, "second failover")
        // the frozen runner woke up as a zombie: each of its stale runs that ended after it woke was fenced (a save
        // the store refused, or its successor's rows met on its own BigQuery stream: both CheckpointConflict) or
        // interrupted by Sharding, whichever came first; or it completed, when its source had ended and its final
        // checkpoint was under way before the freeze (it began none after: a save after waking must be refused, and
        // the refusal must fail the run); none ended otherwise, none committed (exact table)
        assert.isAtLeast(zombie.lives, 1, "the frozen runner had writers")
        for (const ending of Object.keys(zombie.outcomes)) {
          assert.include(
            ["CheckpointConflict", "interrupted", "success"],
            ending,
            `zombie runs: ${JSON.stringify(zombie.outcomes)}; failures:\n${zombie.failures.join("\n---\n")}`
          )
        }
        const late = (s: Span) => `${s.name} ${s.writerId ?? ""} at ${s.start - contAt} ms`
        assert.deepStrictEqual(zombie.savesAfterFreeze.map(late), [], "the store accepted a zombie's save")
        assert.deepStrictEqual(
          zombie.completionsUnexplained.map(late),
          [],
          "a zombie's run completed although it checkpointed after waking"
        )
        // ... and its stale writers stopped: no write they began after waking reached a destination (no rows
        // flushed from their BigQuery streams, no Bigtable entry applied), but for the commit of a checkpoint
        // saved before the freeze, which the new owner's restore ran too
        assert.deepStrictEqual(
          zombie.writesAfterWake.map((s) => `${s.name} ${s.writerId ?? ""} at ${s.start - contAt} ms`),
          [],
          "the zombie's writers wrote after it woke"
        )
        // its stale writers ended: at once when their partition's new owner had checkpointed, else within stopTimeout
        // of noticing the lost locks (a lock operation's deadline, the refresh interval)
        assert.isBelow(zombie.endMillis, LOCK_REFRESH_MS + STOP_TIMEOUT_MS + 5_000, "the zombie's writers lingered")
        // the survivors kept running; the victim died by the signal
        for (const [i, r] of runners.entries()) {
          if (dead(i)) continue
          assert.isFalse(Deferred.isDoneUnsafe(r.exited), `runner ${i} exited:\n${r.stderrTail()}`)
        }
      }),
    // a backstop for a hang of the harness itself: a stuck cluster fails its wait within STALL_MS of its last step
    { timeout: 1_200_000 }
  )
})
