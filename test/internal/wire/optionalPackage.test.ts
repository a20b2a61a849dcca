import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import * as optionalPackage from "../../../src/internal/wire/optionalPackage.ts"

const options = {
  needs: ["avsc", "@google-cloud/storage"],
  feature: "WriteMethod.fileLoads",
  path: "writeMethod"
} as const

describe("optionalPackage.load", () => {
  it.effect("a missing package is a SinkConfigError saying what to install", () =>
    Effect.gen(function*() {
      // what Node's import() rejects with when a package is not installed
      const specifier = "avsc-that-is-not-installed"
      const error = yield* Effect.flip(optionalPackage.load((): Promise<unknown> => import(specifier), options))
      assert.strictEqual(error.path, "writeMethod")
      assert.strictEqual(
        error.detail,
        "WriteMethod.fileLoads needs the packages avsc, @google-cloud/storage, and 'avsc-that-is-not-installed' is " +
          "not installed: npm install avsc @google-cloud/storage"
      )
    }))

  it.effect("an installed package loads; any other failure is a defect", () =>
    Effect.gen(function*() {
      const module = yield* optionalPackage.load(() => import("avsc"), options)
      assert.isFunction(module.default.Type.forSchema)
      const exit = yield* Effect.exit(optionalPackage.load(() => Promise.reject(new SyntaxError("broken")), options))
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
    }))
})
