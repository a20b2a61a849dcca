/**
 * The Bigtable emulator (cbtemulator) as a service for tests.
 *
 * `layer` reads the emulator that globalSetup started once for the whole run; `layerIsolated` starts a private
 * one for the layer's lifetime (for tests that stop, restart or overload it).
 */
import { Context, Effect, Layer } from "effect"
import { type EmulatorInstallError, ensureInstalled } from "./emulatorInstall.ts"
import type { EmulatorError } from "./emulatorProcess.ts"
import { type BigtableEndpoint, startBigtable } from "./emulators.ts"
import { injected } from "./injected.ts"

export class BigtableEmulator extends Context.Service<BigtableEmulator, BigtableEndpoint>()("test/BigtableEmulator") {
  static readonly layer: Layer.Layer<BigtableEmulator> = Layer.effect(BigtableEmulator, injected("bigtableEmulator"))

  static readonly layerIsolated: Layer.Layer<BigtableEmulator, EmulatorError | EmulatorInstallError> = Layer.effect(
    BigtableEmulator,
    Effect.flatMap(ensureInstalled, startBigtable)
  )
}
