/**
 * Local emulators for the demo, started with the same harness the integration tests use, or
 * reused when their addresses are given.
 */
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ensureInstalled } from "../../test/support/emulatorInstall.ts"
import { startBigQuery, startBigtable } from "../../test/support/emulators.ts"
import type { DemoConfig } from "./flags.ts"

export interface Endpoints {
  readonly bigtable: string
  readonly bigqueryGrpc: string
  readonly bigqueryRest: string
}

export const demoProject = "demo-project"

/** Endpoints of emulators that run for the demo's scope (or the ones the flags name). */
export const endpoints = (config: DemoConfig) =>
  Effect.gen(function*() {
    const given = Option.all({
      bigtable: config.bigtableEmulator,
      bigqueryGrpc: config.bigqueryEmulatorGrpc,
      bigqueryRest: config.bigqueryEmulatorRest
    })
    if (Option.isSome(given)) {
      yield* Effect.log("using the running emulators named by the flags")
      return given.value
    }
    yield* Effect.log("starting the Bigtable and BigQuery emulators (the first run installs them, ~1 minute)")
    const manifest = yield* ensureInstalled
    const runDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-gcp-sinks-demo-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const [bigtable, bigquery] = yield* Effect.all([
      startBigtable(manifest),
      startBigQuery(manifest, {
        dataDir: path.join(runDir, "bigquery"),
        gcsRoot: path.join(runDir, "gcs"),
        projectId: demoProject
      })
    ], { concurrency: 2 })
    yield* Effect.log(`Bigtable emulator on ${bigtable.emulatorHost}, BigQuery emulator on ${bigquery.restUrl}`)
    return {
      bigtable: bigtable.emulatorHost,
      bigqueryGrpc: `${bigquery.grpcHost}:${bigquery.grpcPort}`,
      bigqueryRest: `127.0.0.1:${bigquery.restPort}`
    }
  })
