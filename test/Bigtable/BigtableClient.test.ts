import { assert, describe, it } from "@effect/vitest"
import { Cause, Config, ConfigProvider, Effect, Exit, Layer, Redacted } from "effect"
import { BigtableClient } from "../../src/Bigtable/index.ts"
import { SinkConfigError } from "../../src/Sink.ts"

const configError = (config: BigtableClient.BigtableClientConfig) =>
  Effect.flip(Layer.build(BigtableClient.layer(config)))

describe("BigtableClient", () => {
  it.effect("a key file together with an emulator endpoint is a SinkConfigError, before any I/O", () =>
    Effect.gen(function*() {
      const error = yield* configError({
        projectId: "p",
        emulator: { grpc: "127.0.0.1:8086" },
        serviceAccountKeyFile: Redacted.make("/keys/sa.json")
      })
      assert.strictEqual(error._tag, "SinkConfigError")
      if (error._tag === "SinkConfigError") assert.strictEqual(error.path, "serviceAccountKeyFile")
    }))

  it.effect("a malformed emulator endpoint names the option", () =>
    Effect.gen(function*() {
      const error = yield* configError({ projectId: "p", emulator: { grpc: "localhost" } })
      assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", "emulator.grpc")
      assert.strictEqual(error.message, "emulator.grpc: must be host:port, was 'localhost'")
    }))

  it.effect("Cloud Monitoring export is rejected with the emulator and not available otherwise", () =>
    Effect.gen(function*() {
      const withEmulator = yield* configError({
        projectId: "p",
        emulator: { grpc: "127.0.0.1:1" },
        exportClientMetricsToCloudMonitoring: true
      })
      assert.include(withEmulator.message, "emulator")
      const production = yield* configError({ projectId: "p", exportClientMetricsToCloudMonitoring: true })
      assert.include(production.message, "not supported")
    }))

  it.effect("projectId must be a resource id component", () =>
    Effect.gen(function*() {
      const error = yield* configError({ projectId: "a/b", emulator: { grpc: "127.0.0.1:1" } })
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
        emulator: { grpc: Config.String("emulator") },
        serviceAccountKeyFile: Config.Redacted("key")
      }))).pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider))
      assert.strictEqual(error._tag === "SinkConfigError" ? error.path : "", "serviceAccountKeyFile")
    }))

  it.effect("options from untyped JavaScript are decoded: a SinkConfigError naming the option, never a TypeError", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ projectId: "p", emulator: null }, "emulator"],
        [{ projectId: "p", emulator: 8086 }, "emulator"],
        [{ projectId: "p", emulator: "127.0.0.1:8086" }, "emulator"],
        [{ projectId: "p", emulator: { grpc: 1 } }, "emulator.grpc"],
        [{ projectId: "p", emulator: {} }, "emulator.grpc"],
        [{ projectId: "p", emulatorEndpoint: "127.0.0.1:8086" }, "emulatorEndpoint"],
        [{ projectId: 5 }, "projectId"],
        [{}, "projectId"],
        [null, "options"],
        [{ projectId: "p", serviceAccountKeyFile: "/k.json" }, "serviceAccountKeyFile"],
        [{ projectId: "p", exportClientMetrics: "yes" }, "exportClientMetrics"]
      ]
      for (const [config, path] of cases) {
        const exit = yield* Effect.exit(Layer.build(BigtableClient.layer(untyped(config))))
        assert.isTrue(Exit.isFailure(exit), JSON.stringify(config))
        const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        assert.instanceOf(error, SinkConfigError, JSON.stringify(config))
        assert.strictEqual(error instanceof SinkConfigError ? error.path : "", path, JSON.stringify(config))
      }
    }))

  it.effect("a plain-string key file is rejected without showing the path", () =>
    Effect.gen(function*() {
      const error = yield* configError(untyped({ projectId: "p", serviceAccountKeyFile: "/secret/sa.json" }))
      assert.notInclude(error.message, "/secret/sa.json")
      assert.include(error.message, "Redacted")
    }))

  it.effect("fromClients is a Layer that checks projectId", () =>
    Effect.gen(function*() {
      const data = untyped<BigtableClient.DataClient>({})
      const admin = untyped<BigtableClient.AdminClient>({})
      const error = yield* Effect.flip(Layer.build(BigtableClient.fromClients({ projectId: " ", data, admin })))
      assert.strictEqual(error.path, "projectId")
      const missing = yield* Effect.flip(
        Layer.build(
          BigtableClient.fromClients({ projectId: "p", data, admin: untyped<BigtableClient.AdminClient>(undefined) })
        )
      )
      assert.strictEqual(missing.path, "admin")
    }))
})

/** A value as untyped JavaScript would pass it. */
function untyped<T>(value: unknown): T
function untyped(value: unknown): unknown {
  return value
}
