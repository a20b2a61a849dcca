/**
 * The crash proof of the exactly-once BigQuery sink (issue 11 item 5, DESIGN section 6), on bqemulator:
 *
 * 1. A child process (`crashBigQueryChild.ts`) streams ids `0..N-1` from a replayable source through
 *    `BigQuerySink.exactlyOnce` and is killed with SIGKILL at seeded random points: right after a
 *    checkpoint record is saved and before its flush (the child holds there), while the flush is in flight
 *    (a proxy in front of the emulator holds every `FlushRows` both before and after the emulator
 *    applies it, and the kill comes inside that window), while writing, and at random times. It is
 *    restarted from the store each time. Afterwards the table holds COUNT = COUNT DISTINCT = N and
 *    SUM(id) = N(N-1)/2, exactly.
 * 2. Two processes started for the same `writerId` (a zombie and its replacement) on
 *    `CheckpointStore.gcs`: one is fenced, and the table is still exact.
 * 3. The same proof, smaller, on the production code path: the child builds its client with
 *    `BigQueryClient.fromClients` (no emulator allowances), and `bqemulatorAdapter.ts` translates the
 *    emulator's `FlushRows` deviations on the wire instead.
 *
 * Seeded and bounded in time. The figures are logged (N, kills, restarts, COUNT, DISTINCT, SUM).
 */
import { assert, layer } from "@effect/vitest"
import type { BigQuery } from "@google-cloud/bigquery"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as BqemulatorAdapter from "../../support/bqemulatorAdapter.ts"
import * as Clients from "../../support/clients.ts"
import * as CrashProof from "../../support/crashProof.ts"
import { GcsEmulator } from "../../support/GcsEmulator.ts"

const child = fileURLToPath(new URL("../../support/crashBigQueryChild.ts", import.meta.url))

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "crash-proof-bq-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A fresh table `id INT64 REQUIRED`, its name for SQL, and the tally query. */
const freshTable = Effect.gen(function*() {
  const emulator = yield* BigQueryEmulator
  const bq = yield* Clients.bigQuery(emulator)
  const datasetId = Clients.uniqueId("crash")
  yield* Effect.tryPromise(() => bq.createDataset(datasetId))
  yield* Effect.tryPromise(() =>
    bq.dataset(datasetId).createTable("ids", { schema: { fields: [{ name: "id", type: "INT64", mode: "REQUIRED" }] } })
  )
  const tally = Effect.tryPromise(() =>
    (bq as BigQuery).query({
      query: `SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d, COALESCE(SUM(id), 0) AS s ` +
        `FROM \`${emulator.projectId}.${datasetId}.ids\``,
      useQueryCache: false
    })
  ).pipe(Effect.map(([rows]) => {
    const row = (rows as Array<{ n: unknown; d: unknown; s: unknown }>)[0]
    return { count: Number(row?.n), distinct: Number(row?.d), sum: Number(row?.s) }
  }))
  return { emulator, datasetId, tally }
})

const exact = (n: number) => ({ count: n, distinct: n, sum: (n * (n - 1)) / 2 })

const childEnv = (options: {
  readonly emulator: { readonly projectId: string; readonly restPort: number }
  readonly grpc: string
  readonly datasetId: string
  readonly total: number
  readonly writer: string
  readonly store: Readonly<Record<string, string>>
  /** Variables of one proof, over the defaults. */
  readonly extra?: Readonly<Record<string, string>>
}): Record<string, string> => ({
  CRASH_BQ_GRPC: options.grpc,
  CRASH_BQ_REST: `127.0.0.1:${options.emulator.restPort}`,
  CRASH_PROJECT: options.emulator.projectId,
  CRASH_DATASET: options.datasetId,
  CRASH_TABLE: "ids",
  CRASH_TOTAL: String(options.total),
  CRASH_CHUNK: "1000",
  CRASH_EVERY: "4000",
  CRASH_WRITER: options.writer,
  ...options.store,
  ...options.extra
})

/** Each FlushRows is held this long before the emulator sees it, and as long again before its answer. */
const flushHoldMillis = 150

layer(Layer.merge(BigQueryEmulator.layer, GcsEmulator.layer), { timeout: "240 seconds", excludeTestServices: true })(
  "exactly-once BigQuery crash proof",
  (it) => {
    it.effect(
      "120,000 rows, 20 SIGKILLs between save and flush, inside a flush, while writing and at random: exact table",
      () =>
        Effect.gen(function*() {
          const { datasetId, emulator, tally } = yield* freshTable
          const dir = yield* tempDir
          // only delays FlushRows (the sink's own emulator allowance handles the offset convention)
          const proxy = yield* BqemulatorAdapter.start({
            upstreamHost: emulator.grpcHost,
            upstreamPort: emulator.grpcPort,
            translate: false,
            flushHoldMillis
          })
          // A paced child (100 ms a chunk of 1,000) and 30 checkpoints' worth of rows: a start then gets
          // through about one or two checkpoints before its kill, and the kills land where they are aimed
          // instead of at the end of the input (unpaced, one start wrote all 30,000 rows of an earlier N)
          const total = 120_000
          const figures = yield* CrashProof.run({
            script: child,
            env: childEnv({
              emulator,
              grpc: proxy.target,
              datasetId,
              total,
              writer: `crash-${datasetId}`,
              store: { CRASH_STORE: "file", CRASH_STORE_DIR: dir },
              extra: {
                CRASH_CHUNK_DELAY_MS: "100"
              }
            }),
            seed: 20261201,
            kills: 20,
            points: [
              { _tag: "AfterStep", step: "saved", nth: [1, 2], hold: true }, // between save and flush
              { _tag: "AfterStep", step: "saved", nth: [1, 2], delayMillis: [5, 2 * flushHoldMillis - 5] }, // in a flush
              { _tag: "AfterStep", step: "restored", nth: [1, 1], delayMillis: [200, 1500] }, // while writing
              { _tag: "AtTime", millis: [300, 4000] } // anywhere: start-up, restore, writing, checkpointing
            ],
            timeout: "200 seconds"
          })
          const table = yield* tally
          yield* Effect.log(
            `BigQuery crash proof: N=${total} kills=${figures.kills} restarts=${figures.restarts} ` +
              `COUNT=${table.count} DISTINCT=${table.distinct} SUM=${table.sum} duration=${figures.durationMillis}ms ` +
              `flushes=${proxy.stats.flushes} by point=${JSON.stringify(figures.killsByPoint)}`
          )
          assert.strictEqual(figures.kills, 20)
          assert.strictEqual(figures.restarts, 20)
          assert.deepStrictEqual(table, exact(total))
          // the kills landed where they were aimed: after a save, before its flush ...
          const betweenSaveAndFlush = figures.history.filter((s) =>
            s.killed && s.plan?.hold === true && s.killedAt === s.plan.label
          )
          assert.isAtLeast(betweenSaveAndFlush.length, 1)
          // ... and while a FlushRows was held by the proxy
          assert.isAtLeast(proxy.stats.interruptedFlushes, 1, "a kill landed inside a flush")
          // most kills landed where they were aimed, not where a start that ran out of input held
          const aimed = CrashProof.aimedKills(figures.history).length
          assert.isAtLeast(aimed, 12, `${aimed} of 20 kills landed where they were aimed`)
        }),
      { timeout: 230_000 }
    )

    it.effect(
      "the production FlushRows path (fromClients) through the translating adapter: 8 SIGKILLs, exact table",
      () =>
        Effect.gen(function*() {
          const { datasetId, emulator, tally } = yield* freshTable
          const dir = yield* tempDir
          const adapter = yield* BqemulatorAdapter.start({
            upstreamHost: emulator.grpcHost,
            upstreamPort: emulator.grpcPort,
            flushHoldMillis
          })
          const total = 10_000
          const figures = yield* CrashProof.run({
            script: child,
            env: childEnv({
              emulator,
              grpc: adapter.target,
              datasetId,
              total,
              writer: `production-${datasetId}`,
              store: { CRASH_STORE: "file", CRASH_STORE_DIR: dir },
              extra: {
                CRASH_BQ_CLIENT: "production",
                CRASH_EVERY: "2000"
              }
            }),
            seed: 7,
            kills: 8,
            points: [
              { _tag: "AfterStep", step: "saved", nth: [1, 2], hold: true },
              { _tag: "AfterStep", step: "saved", nth: [1, 2], delayMillis: [5, 2 * flushHoldMillis - 5] },
              { _tag: "AfterStep", step: "restored", nth: [1, 1], delayMillis: [200, 800] },
              { _tag: "AtTime", millis: [300, 3000] }
            ],
            timeout: "120 seconds"
          })
          const table = yield* tally
          yield* Effect.log(
            `BigQuery crash proof (production path): N=${total} kills=${figures.kills} COUNT=${table.count} ` +
              `DISTINCT=${table.distinct} SUM=${table.sum} flushes=${adapter.stats.flushes} ` +
              `re-flushes answered ALREADY_EXISTS=${adapter.stats.reflushes}`
          )
          assert.strictEqual(figures.kills, 8)
          assert.deepStrictEqual(table, exact(total))
          assert.isAtLeast(adapter.stats.reflushes, 1, "restores re-ran flushes that had landed")
        }),
      { timeout: 150_000 }
    )

    it.effect(
      "a zombie and its replacement on one writerId (CheckpointStore.gcs): one is fenced, exact table",
      () =>
        Effect.gen(function*() {
          const { datasetId, emulator, tally } = yield* freshTable
          const gcs = yield* GcsEmulator
          const storage = yield* Clients.storage(gcs)
          const bucket = Clients.uniqueId("crash").replaceAll("_", "-")
          yield* Effect.tryPromise(() => storage.createBucket(bucket))
          const total = 30_000
          const outcomes = yield* CrashProof.runConcurrently({
            script: child,
            env: childEnv({
              emulator,
              grpc: `${emulator.grpcHost}:${emulator.grpcPort}`,
              datasetId,
              total,
              writer: `zombie-${datasetId}`,
              store: { CRASH_STORE: "gcs", CRASH_GCS_EMULATOR: `127.0.0.1:${gcs.port}`, CRASH_GCS_BUCKET: bucket },
              extra: {
                CRASH_CHUNK: "500",
                CRASH_EVERY: "1000",
                CRASH_CHUNK_DELAY_MS: "100"
              }
            }),
            processes: 2,
            startAfter: { step: "saved", nth: 2 },
            timeout: "120 seconds"
          })
          const table = yield* tally
          const outcome = JSON.stringify(outcomes.map(({ stderr: _, ...o }) => o))
          yield* Effect.log(
            `BigQuery zombie run: N=${total} ${outcome} COUNT=${table.count} DISTINCT=${table.distinct}`
          )
          assert.strictEqual(outcomes.filter((o) => o.fenced).length, 1, outcome)
          assert.strictEqual(outcomes.filter((o) => o.completed).length, 1, outcome)
          assert.deepStrictEqual(table, exact(total))
        }),
      { timeout: 150_000 }
    )
  }
)
