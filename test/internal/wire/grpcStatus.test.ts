import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as grpc from "../../../src/internal/wire/grpcStatus.ts"

describe("grpcStatus", () => {
  it("names every canonical code and UNCLASSIFIED otherwise", () => {
    assert.strictEqual(grpc.name(14), "UNAVAILABLE")
    assert.strictEqual(grpc.name(0), "OK")
    assert.strictEqual(grpc.name(undefined), "UNCLASSIFIED")
    assert.strictEqual(grpc.name(99), "UNCLASSIFIED")
  })

  it("the transient codes are DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, UNAVAILABLE", () => {
    const transient = Array.from({ length: 17 }, (_, c) => c).filter(grpc.isTransient).map(grpc.name)
    assert.deepStrictEqual(transient, ["DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "UNAVAILABLE"])
    assert.isFalse(grpc.isTransient(undefined))
  })

  it("reads code and details of a grpc-js ServiceError, falling back to message", () => {
    const error = Object.assign(new Error("14 UNAVAILABLE: Connection dropped"), {
      code: 14,
      details: "Connection dropped"
    })
    assert.deepStrictEqual(grpc.fromError(error), { code: 14, message: "Connection dropped" })
    assert.deepStrictEqual(grpc.fromError(new Error("plain")), { code: undefined, message: "plain" })
    assert.deepStrictEqual(grpc.fromError("text"), { code: undefined, message: "text" })
    assert.deepStrictEqual(grpc.fromError({ code: "NOT_A_NUMBER", message: "m" }), { code: undefined, message: "m" })
  })

  it("walks the cause chain, outermost first, and stops on cycles", () => {
    const inner = Object.assign(new Error("inner"), { code: 3 })
    const outer = Object.assign(new Error("outer", { cause: inner }), { code: 13 })
    assert.deepStrictEqual(grpc.chain(outer).map((s) => s.code), [13, 3])
    const cyclic: { code: number; cause?: unknown } = { code: 4 }
    cyclic.cause = cyclic
    assert.strictEqual(grpc.chain(cyclic).length, 16)
  })

  it.prop("fromError is total", [Schema.Unknown], ([u]) => {
    const status = grpc.fromError(u)
    assert.isString(status.message)
  })
})
