/**
 * What the BigQuery wire says about a failure, for the verdicts built on it: the `StorageError`
 * codes, the gRPC codes BigQuery answers for passing trouble, and the verdict on a failed REST table
 * call. The append's own verdict is the Storage Write backend's (`storageWrite/verdict.ts`).
 *
 * @internal
 */
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

/** Whether a gRPC code is transient for BigQuery ({@link transientCodes}). @internal */
export const isTransient = (code: number | undefined): boolean => code !== undefined && transientCodes.has(code)

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
