import { assert, describe, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Exit, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BigQueryClient } from "../../src/BigQuery/index.ts"

const build = (config: BigQueryClientConfigLike) => Effect.exit(Layer.build(BigQueryClient.layer(config)))

type BigQueryClientConfigLike = Parameters<typeof BigQueryClient.layer>[0]

const configError = (exit: Exit.Exit<unknown, unknown>): { path: string; message: string } => {
  assert.isTrue(Exit.isFailure(exit))
  const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  if (reason?._tag !== "Fail") throw new Error("expected a typed failure")
  return reason.error as { path: string; message: string }
}

describe("BigQueryClient", () => {
  it.effect("parses both emulator endpoints with EmulatorEndpoint.parse, naming the option", () =>
    Effect.gen(function*() {
      const error = configError(
        yield* build({ projectId: "p", emulator: { grpc: "127.0.0.1:9060", rest: "localhost" } })
      )
      assert.strictEqual(error.path, "emulator.rest")
      assert.strictEqual(error.message, "emulator.rest: must be host:port, was 'localhost'")
      const grpc = configError(yield* build({ projectId: "p", emulator: { grpc: "h: 1", rest: "h:1" } }))
      assert.strictEqual(grpc.path, "emulator.grpc")
    }))

  it.effect("rejects a key file together with an emulator", () =>
    Effect.gen(function*() {
      const error = configError(
        yield* build({
          projectId: "p",
          serviceAccountKeyFile: Redacted.make("/k.json"),
          emulator: { grpc: "h:1", rest: "h:2" }
        })
      )
      assert.strictEqual(error.path, "serviceAccountKeyFile")
    }))

  it.effect("rejects an appendStreamsPerChannel that is not a positive integer, naming it", () =>
    Effect.gen(function*() {
      const emulator = { grpc: "127.0.0.1:1", rest: "127.0.0.1:2" }
      for (const bad of [0, -1, 1.5, Number.NaN]) {
        const error = configError(yield* build({ projectId: "p", emulator, appendStreamsPerChannel: bad }))
        assert.strictEqual(error.path, "appendStreamsPerChannel")
      }
    }))

  it.effect("rejects a blank project or location", () =>
    Effect.gen(function*() {
      assert.strictEqual(configError(yield* build({ projectId: " " })).path, "projectId")
      assert.strictEqual(configError(yield* build({ projectId: "p", location: "" })).path, "location")
    }))

  it.effect("never shows a key file's path or contents in its error", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bq-key-"))
      const file = path.join(dir, "secret-name.json")
      fs.writeFileSync(file, "{\"private_key\": \"-----BEGIN SECRET-----\"")
      const error = configError(yield* build({ projectId: "p", serviceAccountKeyFile: Redacted.make(file) }))
      fs.rmSync(dir, { recursive: true, force: true })
      assert.strictEqual(error.path, "serviceAccountKeyFile")
      assert.notInclude(error.message, "secret-name")
      assert.notInclude(error.message, "SECRET")
      assert.notInclude(JSON.stringify(error), "SECRET")
    }))

  it.effect("layerConfig reads the settings through Config", () =>
    Effect.gen(function*() {
      const layer = BigQueryClient.layerConfig({
        projectId: Config.String("GCP_PROJECT"),
        emulator: { grpc: Config.String("BQ_GRPC"), rest: Config.String("BQ_REST") }
      })
      const provider = ConfigProvider.fromUnknown({
        GCP_PROJECT: "proj",
        BQ_GRPC: "127.0.0.1:1",
        BQ_REST: "127.0.0.1:2"
      })
      const client = yield* BigQueryClient.BigQueryClient.pipe(
        Effect.provide(layer),
        Effect.provideService(ConfigProvider.ConfigProvider, provider)
      )
      assert.strictEqual(client.projectId, "proj")
      assert.strictEqual(client.rest.apiEndpoint, "http://127.0.0.1:2")
    }))

  it.effect("options from untyped JavaScript are decoded: a SinkConfigError naming the option, never a TypeError", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ projectId: "p", emulator: null }, "emulator"],
        [{ projectId: "p", emulator: 9060 }, "emulator"],
        [{ projectId: "p", emulator: { grpc: 1, rest: "h:1" } }, "emulator.grpc"],
        [{ projectId: "p", emulator: { grpc: "h:1" } }, "emulator.rest"],
        [{ projectId: "p", emulator: { grpc: "h:1", rest: null } }, "emulator.rest"],
        [{ projectId: 5 }, "projectId"],
        [null, "options"],
        [{ projectId: "p", location: 3 }, "location"],
        [{ projectId: "p", serviceAccountKeyFile: "/k.json" }, "serviceAccountKeyFile"],
        [{ projectId: "p", appendStreamsPerChannel: "90" }, "appendStreamsPerChannel"],
        [{ projectId: "p", appendStreamsPerChannel: Number.POSITIVE_INFINITY }, "appendStreamsPerChannel"]
      ]
      for (const [config, option] of cases) {
        const error = configError(yield* build(untyped(config)))
        assert.strictEqual(error.path, option, JSON.stringify(config))
      }
      const plain = configError(yield* build(untyped({ projectId: "p", serviceAccountKeyFile: "/secret/sa.json" })))
      assert.notInclude(plain.message, "/secret/sa.json")
    }))

  it.effect("fromClients is a Layer that checks its arguments", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Layer.build(BigQueryClient.fromClients({ projectId: "p", write: untyped(null), rest: untyped({}) }))
      )
      assert.strictEqual(configError(exit).path, "write")
    }))
})

/** A value as untyped JavaScript would pass it. */
function untyped<T>(value: unknown): T
function untyped(value: unknown): unknown {
  return value
}
