import { assert, describe, it } from "@effect/vitest"
import { Storage } from "@google-cloud/storage"
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { CheckpointStore, GcsClient, SinkConfigError } from "../../src/Sink.ts"

const configError = (effect: Effect.Effect<unknown, SinkConfigError>) =>
  Effect.map(Effect.flip(effect), (e) => [e.path, e.detail] as const)

// deliberately untyped input, as from JavaScript or JSON
const untyped = (config: unknown) => GcsClient.make(config as GcsClient.GcsClientConfig)

describe("GcsClient", () => {
  it.effect("an emulator client talks plain HTTP to the endpoint, with the client's retries off", () =>
    Effect.gen(function*() {
      const service = yield* GcsClient.make({ projectId: "p", emulator: { rest: "127.0.0.1:4443" } })
      assert.strictEqual(service.projectId, "p")
      assert.strictEqual(service.storage.apiEndpoint, "http://127.0.0.1:4443")
      assert.strictEqual(service.storage.retryOptions.autoRetry, false)
    }))

  it.effect("invalid settings are SinkConfigErrors naming the option, the key file never shown", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gcs-client-"))
      const notJson = path.join(dir, "secret-key.json")
      fs.writeFileSync(notJson, "not json")
      assert.strictEqual((yield* configError(untyped({ projectId: "" })))[0], "projectId")
      assert.strictEqual((yield* configError(untyped({ projectId: "a/b" })))[0], "projectId")
      assert.deepStrictEqual(
        yield* configError(untyped({ projectId: "p", emulator: { rest: "localhost" } })),
        ["emulator.rest", "must be host:port, was 'localhost'"]
      )
      assert.strictEqual((yield* configError(untyped({ projectId: "p", emulator: "x" })))[0], "emulator")
      assert.strictEqual(
        (yield* configError(untyped({ projectId: "p", serviceAccountKeyFile: notJson })))[0],
        "serviceAccountKeyFile"
      )
      const both = yield* configError(
        untyped({ projectId: "p", emulator: { rest: "h:1" }, serviceAccountKeyFile: Redacted.make(notJson) })
      )
      assert.strictEqual(both[0], "serviceAccountKeyFile")
      for (const file of [notJson, path.join(dir, "missing.json")]) {
        const [where, message] = yield* configError(
          untyped({ projectId: "p", serviceAccountKeyFile: Redacted.make(file) })
        )
        assert.strictEqual(where, "serviceAccountKeyFile")
        assert.notInclude(message, "secret-key")
        assert.notInclude(message, "missing.json")
      }
      fs.rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("fromStorage takes the caller's client; CheckpointStore.gcs builds on it", () =>
    Effect.gen(function*() {
      const storage = new Storage({ projectId: "p", apiEndpoint: "http://127.0.0.1:1" })
      const client = yield* GcsClient.GcsClient.pipe(Effect.provide(GcsClient.fromStorage({ projectId: "p", storage })))
      assert.strictEqual(client.storage, storage)
      const store = yield* CheckpointStore.pipe(
        Effect.provide(
          CheckpointStore.gcs({ bucket: "b-1" }).pipe(Layer.provide(GcsClient.fromStorage({ projectId: "p", storage })))
        )
      )
      assert.isFunction(store.save)
      const bad = yield* Effect.flip(
        GcsClient.GcsClient.pipe(Effect.provide(GcsClient.fromStorage({ projectId: "p", storage: {} as Storage })))
      )
      assert.instanceOf(bad, SinkConfigError)
      assert.strictEqual(bad.path, "storage")
    }))
})
