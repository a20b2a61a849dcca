import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  type AppendFailure,
  classify,
  classifyAdmin,
  classifyOpen,
  type Context,
  StorageCode
} from "../../../../src/internal/bigquery/transport/classify.ts"
import { Code } from "../../../../src/internal/wire/grpcStatus.ts"

const ifNeeded: Context = { schemaUpdatesEnabled: false, createDisposition: "CREATE_IF_NEEDED" }
const never: Context = { schemaUpdatesEnabled: false, createDisposition: "CREATE_NEVER" }
const updates: Context = { schemaUpdatesEnabled: true, createDisposition: "CREATE_IF_NEEDED" }

const response = (code: number | undefined, storageCode?: number, rowErrors = 0): AppendFailure => ({
  origin: "response",
  code,
  storageCode,
  rowErrors
})
const stream = (code: number | undefined, storageCode?: number): AppendFailure => ({
  origin: "stream",
  code,
  storageCode,
  rowErrors: 0
})

// One row per line of the reference's table (section 2.4): failure, context, verdict.
const table: ReadonlyArray<readonly [string, AppendFailure, Context, string]> = [
  ["in-band UNAVAILABLE", response(Code.UNAVAILABLE), ifNeeded, "retry"],
  ["in-band ABORTED", response(Code.ABORTED), ifNeeded, "retry"],
  ["in-band INTERNAL", response(Code.INTERNAL), ifNeeded, "retry"],
  ["in-band CANCELLED", response(Code.CANCELLED), ifNeeded, "retry"],
  ["in-band DEADLINE_EXCEEDED", response(Code.DEADLINE_EXCEEDED), ifNeeded, "retry"],
  ["in-band RESOURCE_EXHAUSTED", response(Code.RESOURCE_EXHAUSTED), ifNeeded, "retry"],
  ["in-band UNKNOWN", response(Code.UNKNOWN), ifNeeded, "retry"],
  ["transient code with row errors: whole batch retried", response(Code.UNAVAILABLE, undefined, 2), ifNeeded, "retry"],
  ["stream UNAVAILABLE", stream(Code.UNAVAILABLE), ifNeeded, "reconnect"],
  ["stream INTERNAL", stream(Code.INTERNAL), ifNeeded, "reconnect"],
  [
    "watchdog (no status)",
    { origin: "watchdog", code: undefined, storageCode: undefined, rowErrors: 0 },
    ifNeeded,
    "reconnect"
  ],
  ["STREAM_FINALIZED", response(Code.FAILED_PRECONDITION, StorageCode.STREAM_FINALIZED), ifNeeded, "reconnect"],
  ["STREAM_NOT_FOUND", response(Code.NOT_FOUND, StorageCode.STREAM_NOT_FOUND), never, "reconnect"],
  ["INVALID_STREAM_STATE", response(Code.FAILED_PRECONDITION, StorageCode.INVALID_STREAM_STATE), ifNeeded, "reconnect"],
  [
    "extra fields, updates on",
    response(Code.INVALID_ARGUMENT, StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS),
    updates,
    "updateSchema"
  ],
  ["extra fields with row errors, updates on", response(Code.INVALID_ARGUMENT, 7, 3), updates, "updateSchema"],
  [
    "extra fields, updates off",
    response(Code.INVALID_ARGUMENT, StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS),
    ifNeeded,
    "fail:schemaMismatch"
  ],
  [
    "extra fields with row errors, updates off: rows routed",
    response(Code.INVALID_ARGUMENT, 7, 1),
    ifNeeded,
    "routeRows"
  ],
  ["row errors", response(Code.INVALID_ARGUMENT, undefined, 1), ifNeeded, "routeRows"],
  ["NOT_FOUND with row errors is never a missing table", response(Code.NOT_FOUND, undefined, 1), ifNeeded, "routeRows"],
  ["NOT_FOUND, CREATE_IF_NEEDED", response(Code.NOT_FOUND), ifNeeded, "createTable"],
  ["masked PERMISSION_DENIED, CREATE_IF_NEEDED", response(Code.PERMISSION_DENIED), ifNeeded, "createTable"],
  [
    "TABLE_NOT_FOUND storage error",
    response(Code.INVALID_ARGUMENT, StorageCode.TABLE_NOT_FOUND),
    ifNeeded,
    "createTable"
  ],
  ["stream NOT_FOUND, CREATE_IF_NEEDED", stream(Code.NOT_FOUND), ifNeeded, "createTable"],
  ["NOT_FOUND, CREATE_NEVER", response(Code.NOT_FOUND), never, "fail:tableNotFound"],
  ["PERMISSION_DENIED, CREATE_NEVER", response(Code.PERMISSION_DENIED), never, "fail:tableNotFound"],
  ["request-level INVALID_ARGUMENT", response(Code.INVALID_ARGUMENT), ifNeeded, "fail:rejected"],
  [
    "OFFSET_ALREADY_EXISTS on _default",
    response(Code.ALREADY_EXISTS, StorageCode.OFFSET_ALREADY_EXISTS),
    ifNeeded,
    "fail:rejected"
  ],
  ["UNAUTHENTICATED", stream(Code.UNAUTHENTICATED), ifNeeded, "fail:rejected"],
  ["no status at all", stream(undefined), ifNeeded, "fail:rejected"]
]

const show = (v: ReturnType<typeof classify>): string => v._tag === "fail" ? `fail:${v.kind}` : v._tag

describe("retry.classify", () => {
  for (const [name, failure, context, expected] of table) {
    it(name, () => assert.strictEqual(show(classify(failure, context)), expected))
  }

  it.prop(
    "is total and never routes rows without row errors",
    [
      Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 16 })),
      Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 14 })),
      Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 })),
      Schema.Boolean,
      Schema.Boolean
    ],
    ([code, storage, rowErrors, enabled, create]) => {
      const v = classify(response(code, storage === 0 ? undefined : storage, rowErrors), {
        schemaUpdatesEnabled: enabled,
        createDisposition: create ? "CREATE_IF_NEEDED" : "CREATE_NEVER"
      })
      assert.include(["retry", "reconnect", "createTable", "updateSchema", "routeRows", "fail"], v._tag)
      if (rowErrors === 0) assert.notStrictEqual(v._tag, "routeRows")
      if (!create) assert.notStrictEqual(v._tag, "createTable")
      if (!enabled) assert.notStrictEqual(v._tag, "updateSchema")
    }
  )
})

describe("retry.classifyOpen", () => {
  it("missing or masked tables are created or terminal by disposition", () => {
    assert.strictEqual(classifyOpen(Code.NOT_FOUND, ifNeeded)._tag, "createTable")
    assert.strictEqual(classifyOpen(Code.PERMISSION_DENIED, ifNeeded)._tag, "createTable")
    assert.deepStrictEqual(classifyOpen(Code.NOT_FOUND, never), { _tag: "fail", kind: "tableNotFound" })
    assert.strictEqual(classifyOpen(Code.UNAVAILABLE, never)._tag, "retry")
    assert.deepStrictEqual(classifyOpen(Code.INVALID_ARGUMENT, ifNeeded), { _tag: "fail", kind: "rejected" })
  })
})

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
