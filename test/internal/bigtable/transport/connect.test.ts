/**
 * The key file's path is `Redacted` in the API: no error message, `toString` or Cause rendering of
 * a failed key-file read may contain it (nor its directory), however the read fails.
 *
 * The admin clients are created on first use (`lazyClient`): not before, once under concurrent
 * first calls, and closed with the scope only when they were created. They come from a file inside
 * `@google-cloud/bigtable` (`gapic`), pinned here.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as connect from "../../../../src/internal/bigtable/transport/connect.ts"

const marker = "secret-key-dir-7f3a"

const failureText = (keyFile: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.scoped(connect.make({
      projectId: "p",
      serviceAccountKeyFile: Redacted.make(keyFile)
    })))
    assert.isTrue(Exit.isFailure(exit))
    if (Exit.isSuccess(exit)) return ""
    const error = Cause.squash(exit.cause)
    assert.strictEqual(
      typeof error === "object" && error !== null && "_tag" in error ? error._tag : undefined,
      "SinkConfigError"
    )
    return [
      Cause.pretty(exit.cause),
      String(error),
      error instanceof Error ? error.message : "",
      error instanceof Error ? String(error.stack) : "",
      JSON.stringify(error)
    ].join("\n")
  })

describe("Bigtable key file", () => {
  it.live("a failed read names the option, never the path", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${marker}-`))
      const notJson = path.join(dir, "not-json.json")
      fs.writeFileSync(notJson, "{ not json")
      const notKey = path.join(dir, "not-a-key.json")
      fs.writeFileSync(notKey, JSON.stringify({ type: "authorized_user" }))
      try {
        for (const keyFile of [path.join(dir, "missing.json"), dir, notJson, notKey]) {
          const text = yield* failureText(keyFile)
          assert.include(text, "serviceAccountKeyFile", keyFile)
          assert.notInclude(text, marker, keyFile)
          assert.notInclude(text, path.basename(keyFile), keyFile)
        }
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }), 30_000)
})

/** A fake client factory recording how many clients it created and how many were closed. */
const fakeClients = () => {
  const log = { created: 0, closed: 0 }
  const create = Effect.andThen(
    Effect.sleep("50 millis"),
    Effect.sync(() => {
      log.created++
      return {
        close: () => {
          log.closed++
          return Promise.resolve()
        }
      }
    })
  )
  return { log, create }
}

describe("lazyClient", () => {
  it.live("creates nothing until called, and closes nothing it did not create", () =>
    Effect.gen(function*() {
      const { create, log } = fakeClients()
      yield* Effect.scoped(Effect.asVoid(connect.lazyClient("fake", create)))
      assert.deepStrictEqual(log, { created: 0, closed: 0 })
    }))

  it.live("concurrent first calls create one client, closed once when the scope closes", () =>
    Effect.gen(function*() {
      const { create, log } = fakeClients()
      const clients = yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* connect.lazyClient("fake", create)
        assert.deepStrictEqual(log, { created: 0, closed: 0 })
        // All eight are waiting while the one creation sleeps.
        const first = yield* Effect.all(Array.from({ length: 8 }, () => client), { concurrency: "unbounded" })
        const later = yield* client
        assert.deepStrictEqual(log, { created: 1, closed: 0 })
        return [...first, later]
      }))
      assert.strictEqual(new Set(clients).size, 1)
      assert.deepStrictEqual(log, { created: 1, closed: 1 })
    }))

  it.live("a caller interrupted during the creation leaves the one client to the next call", () =>
    Effect.gen(function*() {
      const { create, log } = fakeClients()
      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* connect.lazyClient("fake", create)
        const first = yield* Effect.exit(Effect.timeout(client, "10 millis"))
        assert.isTrue(Exit.isFailure(first))
        const [a, b] = yield* Effect.all([client, client])
        assert.strictEqual(a, b)
        assert.deepStrictEqual(log, { created: 1, closed: 0 })
      }))
      assert.deepStrictEqual(log, { created: 1, closed: 1 })
    }))

  it.live("a scope closed during the creation closes the client once it is created", () =>
    Effect.gen(function*() {
      const { create, log } = fakeClients()
      yield* Effect.scoped(Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const client = yield* connect.lazyClient("fake", Effect.andThen(Deferred.succeed(started, undefined), create))
        yield* Effect.forkChild(client)
        yield* Deferred.await(started)
      }))
      assert.deepStrictEqual(log, { created: 1, closed: 1 })
    }))
})

describe("the gapic module of @google-cloud/bigtable", () => {
  it.live("still holds both admin clients at the path the client loads", () =>
    Effect.gen(function*() {
      const v2 = yield* connect.gapic
      assert.strictEqual(typeof v2.BigtableTableAdminClient, "function")
      assert.strictEqual(typeof v2.BigtableInstanceAdminClient, "function")
      const admin = new v2.BigtableTableAdminClient({ projectId: "p", universeDomain: "googleapis.com" })
      for (const method of ["getTable", "createTable", "modifyColumnFamilies"] as const) {
        assert.strictEqual(typeof admin[method], "function", method)
      }
      const instances = new v2.BigtableInstanceAdminClient({ projectId: "p", universeDomain: "googleapis.com" })
      assert.strictEqual(typeof instances.getAppProfile, "function")
      yield* Effect.promise(() => Promise.all([admin.close(), instances.close()]))
    }))
})
