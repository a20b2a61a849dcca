/**
 * The Cloud Storage emulator (fake-gcs-server, filesystem backend) as a service for tests.
 *
 * `layer` reads the emulator that globalSetup started once for the whole run; its root folder is also the
 * `gs://` root of the shared BigQuery emulator. `layerIsolated` starts a private one under a fresh temp folder.
 */
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type EmulatorInstallError, ensureInstalled } from "./emulatorInstall.ts"
import type { EmulatorError } from "./emulatorProcess.ts"
import { type GcsEndpoint, startGcs } from "./emulators.ts"
import { injected } from "./injected.ts"

/** A fresh temp folder, removed when the scope closes. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

export class GcsEmulator extends Context.Service<GcsEmulator, GcsEndpoint>()("test/GcsEmulator") {
  static readonly layer: Layer.Layer<GcsEmulator> = Layer.effect(GcsEmulator, injected("gcsEmulator"))

  static readonly layerIsolated: Layer.Layer<GcsEmulator, EmulatorError | EmulatorInstallError> = Layer.effect(
    GcsEmulator,
    Effect.gen(function*() {
      const manifest = yield* ensureInstalled
      const root = yield* tempDir("gcs-emulator-")
      return yield* startGcs(manifest, root)
    })
  )
}
