import { assert, describe, it } from "@effect/vitest"
import * as grpcProbe from "../../../src/internal/wire/grpcProbe.ts"
import * as restProbe from "../../../src/internal/wire/restProbe.ts"

const status = (code: number, details: string) => Object.assign(new Error(details), { code, details })

describe("grpcProbe.attemptOf", () => {
  it("a status a server sends is an answer; a call that reached no server is not", () => {
    assert.strictEqual(grpcProbe.attemptOf(undefined)._tag, "Answered")
    for (const code of [5, 7, 12, 3]) assert.strictEqual(grpcProbe.attemptOf(status(code, "x"))._tag, "Answered")
    assert.strictEqual(grpcProbe.attemptOf(status(14, "The service is currently unavailable."))._tag, "Answered")
    assert.strictEqual(
      grpcProbe.attemptOf(status(14, "No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1"))._tag,
      "Unreachable"
    )
    assert.strictEqual(
      grpcProbe.attemptOf(status(14, "Name resolution failed for target dns:x.invalid:1"))._tag,
      "Unreachable"
    )
    assert.strictEqual(grpcProbe.attemptOf(status(4, "Deadline exceeded"))._tag, "Unreachable")
    assert.strictEqual(grpcProbe.attemptOf(status(16, "no Google credentials found"))._tag, "Credentials")
  })
})

describe("restProbe.attemptOf", () => {
  it("any HTTP status is an answer but 401; no status is a transport failure or a credentials one", () => {
    assert.strictEqual(restProbe.attemptOf("BigQuery", { code: 404, message: "no route" })._tag, "Answered")
    assert.strictEqual(restProbe.attemptOf("BigQuery", { code: 403, message: "denied" })._tag, "Answered")
    assert.strictEqual(restProbe.attemptOf("BigQuery", { code: 401, message: "invalid" })._tag, "Credentials")
    assert.strictEqual(
      restProbe.attemptOf("BigQuery", new Error("connect ECONNREFUSED 127.0.0.1:1"))._tag,
      "Unreachable"
    )
    assert.strictEqual(
      restProbe.attemptOf("BigQuery", new Error("Could not load the default credentials."))._tag,
      "Credentials"
    )
  })
})
