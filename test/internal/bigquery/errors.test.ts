/** `isRetryable` of a failed table-admin call follows its last HTTP status. */
import { assert, describe, it } from "@effect/vitest"
import { BigQueryError, TableAdminFailed } from "../../../src/BigQuery/BigQueryError.ts"

const failed = (status: number) =>
  new BigQueryError({
    reason: new TableAdminFailed({
      method: "tables.insert",
      destination: "p.d.t",
      status,
      detail: "d",
      cause: undefined
    })
  })

describe("TableAdminFailed.isRetryable", () => {
  const rows: ReadonlyArray<readonly [number, boolean]> = [
    [429, true], // rate limit past the budget
    [500, true],
    [503, true],
    [400, false],
    [403, false],
    [404, false],
    [409, false],
    [0, false] // no HTTP status: invalid options, a refused union
  ]
  for (const [status, retryable] of rows) {
    it(`${status} -> ${retryable}`, () => assert.strictEqual(failed(status).isRetryable, retryable))
  }
})
