import { assert, describe, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Layer, Redacted } from "effect"
import { BigtableClient } from "../../src/Bigtable/index.ts"

const configError = (config: BigtableClient.BigtableClientConfig) =>
  Effect.flip(Layer.build(BigtableClient.layer(config)))

describe("BigtableClient", () => {
  it.effect("a key file together with an emulator endpoint is a SinkConfigError, before any I/O", () =>
    Effect.gen(function*() {
      const error = yield* configError({
        projectId: "p",
        emulatorEndpoint: "127.0.0.1:8086",
        serviceAccountKeyFile: Redacted.make("/keys/sa.json")
      })
      assert.strictEqual(error._tag, "SinkConfigError")
      if (error._tag === "SinkConfigError") assert.strictEqual(error.path, "serviceAccountKeyFile")
    }))

  it.effect("a malformed emulator endpoint names the option", () =>
    Effect.gen(function*() {
      const error = yield* configError({ projectId: "p", emulatorEndpoint: "localhost" })
      assert.strictEqual(error.message, "emulatorEndpoint must be host:port, was 'localhost'")
    }))

  it.effect("Cloud Monitoring export is rejected with the emulator and not available otherwise", () =>
    Effect.gen(function*() {
      const withEmulator = yield* configError({
        projectId: "p",
        emulatorEndpoint: "127.0.0.1:1",
        exportClientMetricsToCloudMonitoring: true
      })
      assert.include(withEmulator.message, "emulator")
      const production = yield* configError({ projectId: "p", exportClientMetricsToCloudMonitoring: true })
      assert.include(production.message, "not supported")
    }))

  it.effect("projectId must be a resource id component", () =>
    Effect.gen(function*() {
      const error = yield* configError({ projectId: "a/b", emulatorEndpoint: "127.0.0.1:1" })
      assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", "projectId")
    }))

  it.effect("an unreadable key file is a SinkConfigError", () =>
    Effect.gen(function*() {
      const error = yield* configError({
        projectId: "p",
        serviceAccountKeyFile: Redacted.make("/nonexistent/key.json")
      })
      assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", "serviceAccountKeyFile")
    }))

  it.effect("layerConfig reads the same settings through Config", () =>
    Effect.gen(function*() {
      const provider = ConfigProvider.fromUnknown({ project: "p", emulator: "127.0.0.1:1", key: "/k.json" })
      const error = yield* Effect.flip(Layer.build(BigtableClient.layerConfig({
        projectId: Config.String("project"),
        emulatorEndpoint: Config.String("emulator"),
        serviceAccountKeyFile: Config.Redacted("key")
      }))).pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider))
      assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", "serviceAccountKeyFile")
    }))
})
