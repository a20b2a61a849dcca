/**
 * Local emulators for the demo, started with the same harness the integration tests use, or
 * reused when their addresses are given.
 */
import { Data, Effect, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ensureInstalled } from "../../test/support/emulatorInstall.ts"
import { startBigQuery, startBigtable, startGcs } from "../../test/support/emulators.ts"
import type { DemoConfig } from "./flags.ts"

export interface Endpoints {
  readonly bigtable: string
  readonly bigqueryGrpc: string
  readonly bigqueryRest: string
  /** fake-gcs-server's `host:port`, with `--file-loads` only: its root is bqemulator's `gs://` root. */
  readonly gcs: string | undefined
}

/** Running emulators named by the flags that cannot serve the chosen mode. */
export class EmulatorFlagsError extends Data.TaggedError("EmulatorFlagsError")<{ readonly message: string }> {}

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
      if (config.fileLoads && Option.isNone(config.gcsEmulator)) {
        return yield* new EmulatorFlagsError({
          message: "--file-loads with running emulators needs --gcs-emulator too (a fake-gcs-server whose root is " +
            "the BigQuery emulator's BQEMU_GCS_LOCAL_ROOT)"
        })
      }
      yield* Effect.log("using the running emulators named by the flags")
      return { ...given.value, gcs: config.fileLoads ? Option.getOrUndefined(config.gcsEmulator) : undefined }
    }
    yield* Effect.log(
      `starting the Bigtable, BigQuery${
        config.fileLoads ? " and Cloud Storage" : ""
      } emulators (the first run installs them, ~1 minute)`
    )
    const manifest = yield* ensureInstalled
    const runDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-gcp-sinks-demo-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    // as in the integration tests: fake-gcs-server stores `gs://bucket/object` as `<gcsRoot>/bucket/object`,
    // the folder bqemulator's load jobs read `gs://` URIs from (BQEMU_GCS_LOCAL_ROOT)
    const gcsRoot = path.join(runDir, "gcs")
    const [bigtable, bigquery, gcs] = yield* Effect.all([
      startBigtable(manifest),
      startBigQuery(manifest, { dataDir: path.join(runDir, "bigquery"), gcsRoot, projectId: demoProject }),
      config.fileLoads ? Effect.map(startGcs(manifest, gcsRoot), (g) => `127.0.0.1:${g.port}`) : Effect.undefined
    ], { concurrency: 3 })
    yield* Effect.log(
      `Bigtable emulator on ${bigtable.emulatorHost}, BigQuery emulator on ${bigquery.restUrl}` +
        (gcs === undefined ? "" : `, fake-gcs-server on http://${gcs} (root ${gcsRoot})`)
    )
    return {
      bigtable: bigtable.emulatorHost,
      bigqueryGrpc: `${bigquery.grpcHost}:${bigquery.grpcPort}`,
      bigqueryRest: `127.0.0.1:${bigquery.restPort}`,
      gcs
    }
  })
