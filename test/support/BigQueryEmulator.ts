/**
 * The BigQuery emulator (bqemulator: REST + Storage Write gRPC) as a service for tests.
 *
 * `layer` reads the emulator that globalSetup started once for the whole run; `gs://bucket/object` in its load
 * jobs resolves to the shared GCS emulator's files. `layerIsolated` starts a private one with fresh folders
 * (its `gcsRoot` is private too).
 */
import { Context, Effect, Layer } from "effect"
import * as path from "node:path"
import { type EmulatorInstallError, ensureInstalled } from "./emulatorInstall.ts"
import type { EmulatorError } from "./emulatorProcess.ts"
import { type BigQueryEndpoint, startBigQuery } from "./emulators.ts"
import { tempDir } from "./GcsEmulator.ts"
import { injected } from "./injected.ts"

export class BigQueryEmulator extends Context.Service<BigQueryEmulator, BigQueryEndpoint>()("test/BigQueryEmulator") {
  static readonly layer: Layer.Layer<BigQueryEmulator> = Layer.effect(BigQueryEmulator, injected("bigQueryEmulator"))

  static readonly layerIsolated: Layer.Layer<BigQueryEmulator, EmulatorError | EmulatorInstallError> = Layer.effect(
    BigQueryEmulator,
    Effect.gen(function*() {
      const manifest = yield* ensureInstalled
      const dir = yield* tempDir("bigquery-emulator-")
      return yield* startBigQuery(manifest, { dataDir: path.join(dir, "bigquery"), gcsRoot: path.join(dir, "gcs") })
    })
  )
}
