/**
 * The verdict on a failed append (reference section 2.4, `AppendErrorClassifier`), as a pure
 * function of the gRPC code, the storage error code, the row errors and the sink's settings.
 *
 * @internal
 */
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import { Code } from "../../wire/grpcStatus.ts"

/** `google.cloud.bigquery.storage.v1.StorageError.StorageErrorCode`. @internal */
export const StorageCode = {
  TABLE_NOT_FOUND: 1,
  STREAM_ALREADY_COMMITTED: 2,
  STREAM_NOT_FOUND: 3,
  INVALID_STREAM_TYPE: 4,
  INVALID_STREAM_STATE: 5,
  STREAM_FINALIZED: 6,
  SCHEMA_MISMATCH_EXTRA_FIELDS: 7,
  OFFSET_ALREADY_EXISTS: 8,
  OFFSET_OUT_OF_RANGE: 9
} as const

/**
 * The codes retried as transient: the Java classifier's set, wider than the shared gRPC default
 * (BigQuery answers `INTERNAL` and `UNKNOWN` for passing backend trouble).
 *
 * @internal
 */
export const transientCodes: ReadonlySet<number> = new Set([
  Code.UNAVAILABLE,
  Code.ABORTED,
  Code.INTERNAL,
  Code.CANCELLED,
  Code.DEADLINE_EXCEEDED,
  Code.RESOURCE_EXHAUSTED,
  Code.UNKNOWN
])

const staleStorageCodes: ReadonlySet<number> = new Set([
  StorageCode.STREAM_FINALIZED,
  StorageCode.STREAM_NOT_FOUND,
  StorageCode.INVALID_STREAM_STATE
])

/**
 * What went wrong with one append.
 *
 * - `origin`: `"response"` for an `AppendRowsResponse` carrying `error` (the connection is fine),
 *   `"stream"` when the call itself failed (the connection is gone), `"watchdog"` when no response
 *   came within the response timeout (no status at all).
 * - `code`: the gRPC status code, `undefined` when there is none.
 * - `storageCode`: the `StorageError` code found in the status details, if any.
 * - `rowErrors`: how many `row_errors` the response carried.
 *
 * @internal
 */
export interface AppendFailure {
  readonly origin: "response" | "stream" | "watchdog"
  readonly code: number | undefined
  readonly storageCode: number | undefined
  readonly rowErrors: number
}

/** The sink settings the verdict depends on. @internal */
export interface Context {
  readonly schemaUpdatesEnabled: boolean
  readonly createDisposition: CreateDisposition
}

/**
 * - `retry`: transient in-band error; send the whole batch again on the same connection
 *   (first-level budget, then the recovery budget).
 * - `reconnect`: the connection is gone or stale; rebuild it and re-append (recovery budget).
 * - `createTable`: missing table under `CREATE_IF_NEEDED`; create it, rebuild, re-append.
 * - `updateSchema`: extra fields with updates enabled; reconcile the table, re-append on the
 *   schema-wait budget.
 * - `routeRows`: row-level errors; route the failing rows, re-append the survivors.
 * - `fail`: terminal, with `kind` telling which error to raise.
 *
 * @internal
 */
export type Verdict =
  | { readonly _tag: "retry" }
  | { readonly _tag: "reconnect" }
  | { readonly _tag: "createTable" }
  | { readonly _tag: "updateSchema" }
  | { readonly _tag: "routeRows" }
  | { readonly _tag: "fail"; readonly kind: "tableNotFound" | "schemaMismatch" | "rejected" }

const verdict = <T extends Verdict["_tag"]>(_tag: T) => ({ _tag }) as Extract<Verdict, { _tag: T }>
const fail = (kind: "tableNotFound" | "schemaMismatch" | "rejected"): Verdict => ({ _tag: "fail", kind })

/** @internal */
export const isTransient = (code: number | undefined): boolean => code !== undefined && transientCodes.has(code)

/**
 * The verdict, checked in the order of the reference table: transient code first (so a
 * transient-coded response with row errors is retried whole), stale stream, schema mismatch,
 * row errors, missing table (never with row details), then terminal.
 *
 * @internal
 */
export const classify = (failure: AppendFailure, context: Context): Verdict => {
  if (failure.origin === "watchdog") return verdict("reconnect")
  if (isTransient(failure.code)) return verdict(failure.origin === "stream" ? "reconnect" : "retry")
  if (failure.storageCode !== undefined && staleStorageCodes.has(failure.storageCode)) return verdict("reconnect")
  if (
    failure.storageCode === StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS &&
    (context.schemaUpdatesEnabled || failure.rowErrors === 0)
  ) {
    return context.schemaUpdatesEnabled ? verdict("updateSchema") : fail("schemaMismatch")
  }
  if (failure.rowErrors > 0) return verdict("routeRows")
  if (
    failure.code === Code.NOT_FOUND || failure.code === Code.PERMISSION_DENIED ||
    failure.storageCode === StorageCode.TABLE_NOT_FOUND
  ) {
    return context.createDisposition === "CREATE_IF_NEEDED" ? verdict("createTable") : fail("tableNotFound")
  }
  return fail("rejected")
}

/**
 * The verdict on opening a destination (`GetWriteStream` on its `_default` stream): a missing
 * table (including the masked `PERMISSION_DENIED`) is created or terminal, transient codes are
 * retried, anything else is terminal.
 *
 * @internal
 */
export const classifyOpen = (code: number | undefined, context: Context): Verdict => {
  if (code === Code.NOT_FOUND || code === Code.PERMISSION_DENIED) {
    return context.createDisposition === "CREATE_IF_NEEDED" ? verdict("createTable") : fail("tableNotFound")
  }
  if (isTransient(code)) return verdict("retry")
  return fail("rejected")
}

/**
 * How a REST table call failed, by HTTP status and the first error reason.
 *
 * - `exists`: 409 on insert, another writer won the race: success.
 * - `retry`: 429, 5xx, 403 `rateLimitExceeded`, 409/412 `conditionNotMet` on a patch (lost etag race).
 * - `notFound`: 404.
 * - `fail`: everything else (`quotaExceeded`, permissions, invalid schema).
 *
 * @internal
 */
export type AdminVerdict = "exists" | "retry" | "notFound" | "fail"

/** The job error reasons a query job is run again for (reference 2.12). @internal */
export const retriableJobReasons: ReadonlySet<string> = new Set([
  "rateLimitExceeded",
  "jobRateLimitExceeded",
  "backendError",
  "internalError",
  "jobBackendError"
])

/** @internal */
export const classifyAdmin = (
  method: "insert" | "get" | "patch" | "query",
  status: number | undefined,
  reason: string | undefined
): AdminVerdict => {
  // a query job's own error (reference 2.12): its reason decides, with or without an HTTP status
  if (method === "query" && reason !== undefined) return retriableJobReasons.has(reason) ? "retry" : "fail"
  if (status === undefined) return "retry"
  if (status === 409 && method === "insert") return "exists"
  if (status === 404) return "notFound"
  if (status === 429 || status >= 500) return "retry"
  if (status === 403 && reason === "rateLimitExceeded") return "retry"
  if (method === "patch" && (status === 409 || status === 412)) return "retry"
  return "fail"
}
