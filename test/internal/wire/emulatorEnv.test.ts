import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import * as emulatorEnv from "../../../src/internal/wire/emulatorEnv.ts"

const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))

describe("emulatorEnv", () => {
  it.effect("reads host:port and http://host:port/, unset or empty as undefined", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* emulatorEnv.bigtable.pipe(withEnv({ BIGTABLE_EMULATOR_HOST: "localhost:8086" })),
        { host: "localhost", port: 8086, target: "localhost:8086" }
      )
      assert.deepStrictEqual(
        yield* emulatorEnv.storage.pipe(withEnv({ STORAGE_EMULATOR_HOST: "http://127.0.0.1:4443/" })),
        { host: "127.0.0.1", port: 4443, target: "127.0.0.1:4443" }
      )
      assert.isUndefined(yield* emulatorEnv.bigtable.pipe(withEnv({})))
      assert.isUndefined(yield* emulatorEnv.bigtable.pipe(withEnv({ BIGTABLE_EMULATOR_HOST: " " })))
    }))

  it.effect("a value that is not an endpoint is a SinkConfigError naming the variable", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(emulatorEnv.bigtable.pipe(withEnv({ BIGTABLE_EMULATOR_HOST: "localhost" })))
      assert.strictEqual(error.path, "BIGTABLE_EMULATOR_HOST")
      assert.include(error.message, "BIGTABLE_EMULATOR_HOST")
      assert.include(error.message, "'localhost'")
    }))

  it.effect("BigQuery: REST from BIGQUERY_EMULATOR_HOST, gRPC from its own variable or port 9060", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* emulatorEnv.bigquery.pipe(withEnv({ BIGQUERY_EMULATOR_HOST: "http://localhost:9050" })),
        {
          rest: { host: "localhost", port: 9050, target: "localhost:9050" },
          grpc: { host: "localhost", port: 9060, target: "localhost:9060" }
        }
      )
      assert.deepStrictEqual(
        yield* emulatorEnv.bigquery.pipe(
          withEnv({ BIGQUERY_EMULATOR_HOST: "127.0.0.1:1", BIGQUERY_EMULATOR_GRPC_HOST: "127.0.0.1:2" })
        ),
        {
          rest: { host: "127.0.0.1", port: 1, target: "127.0.0.1:1" },
          grpc: { host: "127.0.0.1", port: 2, target: "127.0.0.1:2" }
        }
      )
      assert.isUndefined(yield* emulatorEnv.bigquery.pipe(withEnv({})))
      const alone = yield* Effect.flip(emulatorEnv.bigquery.pipe(withEnv({ BIGQUERY_EMULATOR_GRPC_HOST: "h:1" })))
      assert.strictEqual(alone.path, "BIGQUERY_EMULATOR_GRPC_HOST")
      assert.include(alone.message, "BIGQUERY_EMULATOR_HOST")
    }))
})
