/**
 * The verdict on a failed REST table call (`classifyAdmin`), row by row. The append's verdicts are
 * tested with the Storage Write backend's verdict (`storageWrite/verdict.test.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { classifyAdmin } from "../../../../src/internal/bigquery/transport/classify.ts"

describe("retry.classifyAdmin", () => {
  const rows: ReadonlyArray<readonly ["insert" | "get" | "patch", number | undefined, string | undefined, string]> = [
    ["insert", 409, "duplicate", "exists"],
    ["insert", 429, undefined, "retry"],
    ["insert", 500, "backendError", "retry"],
    ["insert", 503, undefined, "retry"],
    ["insert", 403, "rateLimitExceeded", "retry"],
    ["insert", 403, "quotaExceeded", "fail"],
    ["insert", 403, "accessDenied", "fail"],
    ["insert", 400, "invalid", "fail"],
    ["get", 404, "notFound", "notFound"],
    ["patch", 412, "conditionNotMet", "retry"],
    ["patch", 409, "conditionNotMet", "retry"],
    ["get", undefined, undefined, "retry"]
  ]
  for (const [method, status, reason, expected] of rows) {
    it(`${method} ${status} ${reason}`, () => assert.strictEqual(classifyAdmin(method, status, reason), expected))
  }
})
