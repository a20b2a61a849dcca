/**
 * The SIGKILL crash proof of file loads (issue 13, DESIGN 6): a child running `BigQuerySink.fileLoads`
 * on the emulators is killed at seeded points (after a checkpoint's save and before its load jobs, while
 * staging, at random times) and restarted from its `CheckpointStore.file` record until it completes; the
 * table then holds every id exactly once (COUNT = COUNT DISTINCT = N, exact SUM).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import * as CrashProof from "../../support/crashProof.ts"
import { exact } from "../../support/crashToy.ts"
import { GcsEmulator } from "../../support/GcsEmulator.ts"

const script = fileURLToPath(new URL("../../support/crashLoadsChild.ts", import.meta.url))

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "crash-proof-loads-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

// Every planned kill must land before the child completes. A start moves the stored position by at most
// 800 ids (two saves of 400) at a "saved" kill, 400 at a "staged" one, and 1,500 at a timed one (100 ms
// per chunk of 100 for at most 1.5 s): 2 x (800 + 400 + 1,500) = 5,400 < 6,000, however fast the machine.
const points: ReadonlyArray<CrashProof.KillPoint> = [
  { _tag: "AfterStep", step: "saved", nth: [1, 2], hold: true },
  { _tag: "AfterStep", step: "staged", nth: [1, 6], delayMillis: [0, 20] },
  { _tag: "AtTime", millis: [300, 1500] }
]

layer(Layer.mergeAll(BigQueryEmulator.layer, GcsEmulator.layer), { timeout: "300 seconds", excludeTestServices: true })(
  "crash proof of BigQuery file loads",
  (it) => {
    it.effect("SIGKILLed processes restart from their checkpoint; the table holds every id exactly once", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const emulator = yield* BigQueryEmulator
        const gcs = yield* GcsEmulator
        const bq = yield* Clients.bigQuery(emulator)
        const storage = yield* Clients.storage(gcs)
        const datasetId = Clients.uniqueId("crash_loads")
        const bucket = Clients.uniqueId("crash-loads").replaceAll("_", "-")
        yield* Effect.tryPromise(() => bq.createDataset(datasetId))
        yield* Effect.tryPromise(() => storage.createBucket(bucket))
        const total = 6_000
        const figures = yield* CrashProof.run({
          script,
          env: {
            LOADS_DIR: dir,
            LOADS_TOTAL: String(total),
            LOADS_CHUNK: "100",
            LOADS_EVERY: "400",
            LOADS_PACE_MS: "100",
            LOADS_WRITER: "crash-loads",
            LOADS_PROJECT: emulator.projectId,
            LOADS_DATASET: datasetId,
            LOADS_BUCKET: bucket,
            LOADS_BQ_GRPC: `${emulator.grpcHost}:${emulator.grpcPort}`,
            LOADS_BQ_REST: `127.0.0.1:${emulator.restPort}`,
            LOADS_GCS: `127.0.0.1:${gcs.port}`
          },
          seed: 130013,
          kills: 6,
          points,
          timeout: "240 seconds"
        })
        assert.strictEqual(figures.kills, 6)
        assert.deepStrictEqual(figures.completion, { position: total })
        const [rows] = yield* Effect.tryPromise(() =>
          bq.query({
            query: `SELECT COUNT(*) AS count, COUNT(DISTINCT id) AS distinct_ids, SUM(id) AS sum ` +
              `FROM \`${emulator.projectId}.${datasetId}.ids\``,
            useQueryCache: false
          })
        )
        const row = rows[0] as { count: unknown; distinct_ids: unknown; sum: unknown }
        assert.deepStrictEqual(
          { count: Number(row.count), distinct: Number(row.distinct_ids), sum: Number(row.sum) },
          exact(total)
        )
        yield* Effect.log(
          `crash proof (file loads): N=${total} kills=${figures.kills} restarts=${figures.restarts} ` +
            `duration=${figures.durationMillis}ms byPoint=${JSON.stringify(figures.killsByPoint)}`
        )
      }))
  }
)
