/**
 * The terminal errors of the BigQuery client and sink: one `BigQueryError` with a tagged `reason`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ContactFailed } from "../Sink/ContactFailed.ts"

export {
  /**
   * The service could not be reached, or refused the credentials, at first contact.
   *
   * @since 0.1.0
   */
  ContactFailed
}

/**
 * A transient failure (`UNAVAILABLE`, `ABORTED`, a dropped connection, ...) that was retried until
 * the budget ran out; `cause` is the last failure and `code` its gRPC status name.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * declare const write: Effect.Effect<void, BigQueryError.BigQueryError>
 * write.pipe(Effect.catchReason("BigQueryError", "BigQueryRetriesExhausted", (r) => Effect.logWarning(`${r.code} after ${r.attempts} attempts`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class RetriesExhausted extends Schema.TaggedError<RetriesExhausted>()("BigQueryRetriesExhausted", {
  method: Schema.String,
  destination: Schema.String,
  attempts: Schema.Int,
  code: Schema.String,
  detail: Schema.String,
  cause: Schema.Defect()
}) {
  /**
   * Another attempt later may succeed.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The service rejected a request for good: request-level `INVALID_ARGUMENT`, a storage error
 * without a repair, row errors that match no row of the batch, an error without a status.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * declare const write: Effect.Effect<void, BigQueryError.BigQueryError>
 * write.pipe(Effect.catchReason("BigQueryError", "BigQueryRequestRejected", (r) => Effect.logError(`${r.method}: ${r.detail}`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class RequestRejected extends Schema.TaggedError<RequestRejected>()("BigQueryRequestRejected", {
  method: Schema.String,
  destination: Schema.String,
  code: Schema.String,
  detail: Schema.String,
  cause: Schema.Defect()
}) {
  /**
   * Retrying the same request cannot help.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The destination table does not exist (or the service masked it as `PERMISSION_DENIED`) and the
 * create disposition is `CREATE_NEVER`.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * declare const write: Effect.Effect<void, BigQueryError.BigQueryError>
 * write.pipe(Effect.catchReason("BigQueryError", "BigQueryTableNotFound", (r) => Effect.logError(`create ${r.destination} first`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class TableNotFound extends Schema.TaggedError<TableNotFound>()("BigQueryTableNotFound", {
  destination: Schema.String,
  createDisposition: Schema.String,
  detail: Schema.String,
  cause: Schema.Defect()
}) {
  /**
   * Creating the table (or allowing the sink to) is needed first.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Rows carry fields the table lacks (`SCHEMA_MISMATCH_EXTRA_FIELDS`) and connector-driven schema
 * updates are off, or the table kept refusing them past the schema-wait budget.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * declare const write: Effect.Effect<void, BigQueryError.BigQueryError>
 * write.pipe(Effect.catchReason("BigQueryError", "BigQuerySchemaMismatch", (r) => Effect.logError(`${r.destination}: ${r.detail}`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class SchemaMismatch extends Schema.TaggedError<SchemaMismatch>()("BigQuerySchemaMismatch", {
  destination: Schema.String,
  detail: Schema.String,
  cause: Schema.Defect()
}) {
  /**
   * Needs a schema change or `schemaUpdate: { allowNewFields: true }`.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * A table could not be created or its schema updated: the union was refused (a type change, a
 * REPEATED change, a new field without `allowNewFields`), the etag race was lost too often, or the
 * REST call failed terminally. `status` is the HTTP status when there was one (0 otherwise).
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * declare const write: Effect.Effect<void, BigQueryError.BigQueryError>
 * write.pipe(Effect.catchReason("BigQueryError", "BigQueryTableAdminFailed", (r) => Effect.logError(`${r.method} ${r.status}`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class TableAdminFailed extends Schema.TaggedError<TableAdminFailed>()("BigQueryTableAdminFailed", {
  method: Schema.String,
  destination: Schema.String,
  status: Schema.Int,
  detail: Schema.String,
  cause: Schema.Defect()
}) {
  /**
   * Follows the last failure: rate limits (429) and 5xx are retried before this error is raised, so
   * one of them here means the recovery budget ran out and a later try may help; any other status
   * (a refusal, invalid creation options, a refused schema union: `status` 0) is terminal.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return this.status === 429 || this.status >= 500
  }
}

/**
 * A step of file loads failed (`WriteMethod.fileLoads`): `step` is `plan` (the commit breaks a limit
 * or rule, nothing ran), `stage` (a Cloud Storage upload failed), `schema` (the table's columns cannot
 * be staged as Avro), or `load` (a load job failed, or could not be submitted or read). `jobId` names
 * the job when there is one; the staged files are kept for a deterministic retry. `cleanup` (a staged
 * object or temp table could not be deleted) never fails a write: it is logged, and it is what a
 * `reconcile` schedule sees for each failed delete.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * declare const write: Effect.Effect<void, BigQueryError.BigQueryError>
 * write.pipe(Effect.catchReason("BigQueryError", "BigQueryFileLoadFailed", (r) => Effect.logError(`${r.step} ${r.jobId}`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class FileLoadFailed extends Schema.TaggedError<FileLoadFailed>()("BigQueryFileLoadFailed", {
  step: Schema.Literals(["plan", "stage", "schema", "load", "cleanup"]),
  destination: Schema.String,
  jobId: Schema.optional(Schema.String),
  detail: Schema.String,
  cause: Schema.Defect()
}) {
  /**
   * A failed upload or job read may succeed later (the same deterministic jobs re-run); a refused
   * plan, an unsupported schema or a job that failed on its own rows will not.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return this.step === "stage"
  }
}

/**
 * Any reason of a {@link BigQueryError}.
 *
 * @category errors
 * @since 0.1.0
 */
export type BigQueryErrorReason =
  | RetriesExhausted
  | RequestRejected
  | TableNotFound
  | SchemaMismatch
  | TableAdminFailed
  | FileLoadFailed
  | ContactFailed

/**
 * The error of every BigQuery operation that failed terminally. Match the family with
 * `Effect.catchTag("BigQueryError", ...)` or one case with `Effect.catchReason`.
 *
 * **Example** (Handling a missing table)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * declare const write: Effect.Effect<void, BigQueryError.BigQueryError>
 * write.pipe(Effect.catchReason("BigQueryError", "BigQueryTableNotFound", (r) => Effect.logError(r.destination)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class BigQueryError extends Schema.TaggedError<BigQueryError>()("BigQueryError", {
  reason: Schema.Union([
    RetriesExhausted,
    RequestRejected,
    TableNotFound,
    SchemaMismatch,
    TableAdminFailed,
    FileLoadFailed,
    ContactFailed
  ])
}) {
  /**
   * The reason tag, where it happened and what the service said.
   *
   * @since 0.1.0
   */
  override get message(): string {
    const r = this.reason
    const where = "method" in r ? `${r.method} ${r.destination}` : r.destination
    return `${r._tag}: ${where}: ${r.detail}`
  }

  /**
   * Whether trying again later may help.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * Wraps a reason into a {@link BigQueryError}.
 *
 * **Example** (A missing table)
 * ```ts
 * import { BigQueryError } from "effect-gcp-sinks/BigQuery"
 * const error = BigQueryError.fromReason(
 *   new BigQueryError.TableNotFound({ destination: "p.d.t", createDisposition: "CREATE_NEVER", detail: "missing", cause: undefined })
 * )
 * error.reason._tag
 * // => "BigQueryTableNotFound"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromReason = (reason: BigQueryErrorReason): BigQueryError => new BigQueryError({ reason })
