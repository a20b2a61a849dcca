/**
 * The harness itself: an isolated emulator starts inside a test (under the TestClock of `it.effect`), differs
 * from the shared one, and its process is gone once its scope closes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { BigtableEmulator } from "../../support/BigtableEmulator.ts"
import * as Clients from "../../support/clients.ts"

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("emulator harness", () => {
  it.effect("starts an isolated emulator and stops it by PID when its scope closes", () =>
    Effect.gen(function*() {
      const shared = yield* BigtableEmulator.pipe(Effect.provide(BigtableEmulator.layer))
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(BigtableEmulator.layerIsolated, scope)
      const isolated = Context.get(context, BigtableEmulator)
      assert.notStrictEqual(isolated.port, shared.port)
      assert.isTrue(isAlive(isolated.pid))

      const ok = yield* Effect.scoped(Effect.gen(function*() {
        const bigtable = yield* Clients.bigtable(isolated)
        const tableId = Clients.uniqueId("iso")
        yield* Effect.tryPromise(() => bigtable.instance("i").createTable(tableId, { families: ["cf"] }))
        const [tables] = yield* Effect.tryPromise(() => bigtable.instance("i").getTables())
        return tables.map((t) => t.id)
      }))
      assert.isTrue(ok.some((id) => id.startsWith("iso_")))

      yield* Scope.close(scope, Exit.void)
      assert.isFalse(isAlive(isolated.pid))
    }))
})
