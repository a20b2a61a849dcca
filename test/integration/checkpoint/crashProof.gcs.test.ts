/**
 * The crash-proof harness's toy child with `CheckpointStore.gcs` on fake-gcs-server instead of the file
 * store: SIGKILLed processes restart from checkpoints kept in a bucket, and two processes on different
 * store instances (as on two machines) sharing one writer id fence each other through the object's
 * generation-match preconditions. The destination stays exact in both runs.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Clients from "../../support/clients.ts"
import * as CrashProof from "../../support/crashProof.ts"
import { exact, readToyDestination, toyPoints, toyScript } from "../../support/crashToy.ts"
import { GcsEmulator } from "../../support/GcsEmulator.ts"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "crash-proof-gcs-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A fresh bucket and the toy's environment for the GCS store. */
const gcsEnv = Effect.gen(function*() {
  const emulator = yield* GcsEmulator
  const storage = yield* Clients.storage(emulator)
  const bucket = Clients.uniqueId("crash").replaceAll("_", "-")
  yield* Effect.tryPromise(() => storage.createBucket(bucket))
  return {
    env: { TOY_STORE: "gcs", TOY_GCS_EMULATOR: `127.0.0.1:${emulator.port}`, TOY_GCS_BUCKET: bucket },
    storage,
    bucket
  }
})

layer(GcsEmulator.layer, { timeout: "180 seconds", excludeTestServices: true })(
  "crash proof with CheckpointStore.gcs",
  (it) => {
    it.effect("SIGKILLed processes restart from the bucket, and the destination is exact", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { bucket, env, storage } = yield* gcsEnv
        const total = 40_000
        const figures = yield* CrashProof.run({
          script: toyScript,
          env: { ...env, TOY_DIR: dir, TOY_TOTAL: String(total), TOY_CHUNK: "500", TOY_EVERY: "3" },
          seed: 424242,
          kills: 8,
          points: toyPoints,
          timeout: "120 seconds"
        })
        assert.strictEqual(figures.kills, 8)
        assert.deepStrictEqual(figures.completion, { position: total })
        assert.deepStrictEqual(readToyDestination(dir), exact(total))
        assert.isFalse(fs.existsSync(path.join(dir, "store")), "no file store was used")
        const [files] = yield* Effect.tryPromise(() => storage.bucket(bucket).getFiles({ prefix: "toy/" }))
        assert.deepStrictEqual(files.map((f) => f.name), ["toy/toy.json"])
        yield* Effect.log(
          `crash proof (toy, gcs store): N=${total} kills=${figures.kills} restarts=${figures.restarts} ` +
            `duration=${figures.durationMillis}ms`
        )
      }))

    it.effect("a zombie and its replacement sharing a writer id through the bucket: one is fenced, the destination is exact", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { env } = yield* gcsEnv
        const total = 20_000
        const outcomes = yield* CrashProof.runConcurrently({
          script: toyScript,
          env: {
            ...env,
            TOY_DIR: dir,
            TOY_TOTAL: String(total),
            TOY_CHUNK: "250",
            TOY_EVERY: "2",
            TOY_BATCH_DELAY_MS: "50"
          },
          processes: 2,
          startAfter: { step: "saved", nth: 2 },
          timeout: "90 seconds"
        })
        // a process that neither completed nor was fenced failed: its stderr says why
        const failed = outcomes.filter((o) => !o.fenced && !o.completed).map((o) => o.stderr)
        const outcome = JSON.stringify(outcomes.map(({ stderr: _, ...o }) => o)) +
          (failed.length === 0 ? "" : `\n${failed.join("\n---\n")}`)
        assert.strictEqual(outcomes.filter((o) => o.fenced).length, 1, outcome)
        assert.strictEqual(outcomes.filter((o) => o.completed).length, 1, outcome)
        assert.deepStrictEqual(readToyDestination(dir), exact(total))
      }))
  }
)
