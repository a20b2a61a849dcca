/**
 * The key file's path is `Redacted` in the API: no error message, `toString` or Cause rendering of
 * a failed key-file read may contain it (nor its directory), however the read fails.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Redacted } from "effect"
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
  it.effect("a failed read names the option, never the path", () =>
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
