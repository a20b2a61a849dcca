/**
 * `npm run emulators`: starts the Bigtable, BigQuery and Cloud Storage emulators on free loopback
 * ports with the test harness, prints the environment the client layers read (the emulator variables
 * Google's clients use, and the project), and keeps them running until Ctrl-C.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ensureInstalled } from "../../test/support/emulatorInstall.ts"
import { startAll } from "../../test/support/emulators.ts"

const program = Effect.gen(function*() {
  const manifest = yield* ensureInstalled
  const runDir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-gcp-sinks-emulators-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const { bigtable, bigquery, gcs } = yield* startAll(manifest, runDir)
  process.stdout.write(
    [
      "emulators running; in another shell:",
      "",
      `export GOOGLE_CLOUD_PROJECT=${bigquery.projectId}`,
      `export BIGTABLE_EMULATOR_HOST=${bigtable.emulatorHost}`,
      `export BIGQUERY_EMULATOR_HOST=127.0.0.1:${bigquery.restPort}`,
      `export BIGQUERY_EMULATOR_GRPC_HOST=${bigquery.grpcHost}:${bigquery.grpcPort}`,
      `export STORAGE_EMULATOR_HOST=${gcs.url}`,
      "export METADATA_SERVER_DETECTION=none",
      "",
      "Ctrl-C stops them.",
      ""
    ].join("\n")
  )
  return yield* Effect.never
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
