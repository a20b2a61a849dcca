/**
 * The terminal errors of the Bigtable sink and client: one error class with a tagged reason.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as grpc from "../internal/wire/grpcStatus.ts"
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
 * Whether the last failure of a spent budget says a later try may help: an error that tells
 * (`isRetryable`), else a status (a transient one, or `NOT_FOUND` of a table the service has not
 * caught up with yet), else yes (nothing says otherwise).
 */
const retryableCause = (cause: unknown): boolean => {
  if (!Predicate.isObject(cause)) return true
  const told = cause["isRetryable"]
  if (Predicate.isBoolean(told)) return told
  if ("code" in cause) {
    const code = cause["code"]
    return Predicate.isNumber(code) && (grpc.isTransient(code) || code === grpc.Code.NOT_FOUND)
  }
  return true
}

/**
 * An RPC failed terminally: a status the sink does not retry (`PERMISSION_DENIED`, `INTERNAL`, a
 * request-level `INVALID_ARGUMENT`, ...), or a transient one (`UNAVAILABLE`, `DEADLINE_EXCEEDED`,
 * `ABORTED`, `RESOURCE_EXHAUSTED`) after the retry budget ran out. `code` is the gRPC status code,
 * `undefined` when the failure carried none.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(Effect.catchReason("BigtableError", "BigtableRpcFailed", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class RpcFailed extends Schema.TaggedError<RpcFailed>()("BigtableRpcFailed", {
  method: Schema.String,
  table: Schema.String,
  code: Schema.UndefinedOr(Schema.Int),
  description: Schema.String,
  attempts: Schema.Int,
  cause: Schema.Defect()
}) {
  /**
   * The status name, `UNCLASSIFIED` without a code.
   *
   * @since 0.1.0
   */
  get status(): string {
    return grpc.name(this.code)
  }
  /**
   * Whether trying again later may help (the status is transient).
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return grpc.isTransient(this.code)
  }
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.method} on ${this.table} failed with ${this.status} after ${this.attempts} attempt(s): ${this.description}`
  }
}

/**
 * A table (or one of its column families) is missing and `createDisposition` is `CREATE_NEVER`.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(Effect.catchReason("BigtableError", "BigtableTableNotFound", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class TableNotFound extends Schema.TaggedError<TableNotFound>()("BigtableTableNotFound", {
  table: Schema.String,
  description: Schema.String
}) {
  /** @since 0.1.0 */
  get isRetryable(): boolean {
    return false
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `table ${this.table} or one of its column families does not exist and createDisposition is ` +
      `CREATE_NEVER (create it, or set createDisposition: "CREATE_IF_NEEDED" with tableCreateOptions): ${this.description}`
  }
}

/**
 * A mutation names a column family that `tableCreateOptions` does not declare, so the sink cannot
 * create it.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(Effect.catchReason("BigtableError", "BigtableColumnFamilyNotDeclared", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class ColumnFamilyNotDeclared extends Schema.TaggedError<ColumnFamilyNotDeclared>()(
  "BigtableColumnFamilyNotDeclared",
  { table: Schema.String, family: Schema.String, description: Schema.String }
) {
  /** @since 0.1.0 */
  get isRetryable(): boolean {
    return false
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `column family '${this.family}' of table ${this.table} is missing and not declared in tableCreateOptions: ${this.description}`
  }
}

/**
 * An existing declared column family has another value type than declared; families are never
 * converted.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(Effect.catchReason("BigtableError", "BigtableColumnFamilyTypeMismatch", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class ColumnFamilyTypeMismatch extends Schema.TaggedError<ColumnFamilyTypeMismatch>()(
  "BigtableColumnFamilyTypeMismatch",
  { table: Schema.String, family: Schema.String, declared: Schema.String, actual: Schema.String }
) {
  /** @since 0.1.0 */
  get isRetryable(): boolean {
    return false
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `column family '${this.family}' of table ${this.table} is ${this.actual}, declared ${this.declared}`
  }
}

/**
 * Creating missing tables or families and re-applying the parked mutations did not succeed within
 * the recovery budget (`writeMethod.recovery`); `cause` is the last failure.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(Effect.catchReason("BigtableError", "BigtableRecoveryExhausted", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class RecoveryExhausted extends Schema.TaggedError<RecoveryExhausted>()("BigtableRecoveryExhausted", {
  table: Schema.String,
  attempts: Schema.Int,
  cause: Schema.Defect()
}) {
  /**
   * Follows the last failure: true after transient statuses (`UNAVAILABLE`, a timeout, a table
   * still reported missing), false when it says retrying cannot help. (A status the sink does not
   * retry, `PERMISSION_DENIED`, ..., is not retried to exhaustion: it fails the sink at once as
   * `RpcFailed`.)
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return retryableCause(this.cause)
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `could not create or repair table ${this.table} in ${this.attempts} attempt(s): ${String(this.cause)}`
  }
}

/**
 * `maxConsecutiveRejections` mutations in a row were rejected with nothing applied between them
 * (the last one was routed to the failure handler first).
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(Effect.catchReason("BigtableError", "BigtableTooManyRejections", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class TooManyRejections extends Schema.TaggedError<TooManyRejections>()("BigtableTooManyRejections", {
  table: Schema.String,
  rejections: Schema.Int
}) {
  /** @since 0.1.0 */
  get isRetryable(): boolean {
    return false
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `${this.rejections} mutations in a row were rejected (last on ${this.table}) with none applied: ` +
      "maxConsecutiveRejections reached"
  }
}

/**
 * A commit of the exactly-once mode failed: one `CheckAndMutateRow` failed (one attempt each; a
 * `DEADLINE_EXCEEDED` is ambiguous: it may have been applied), the requests still in flight were
 * cancelled and the write failed. Nothing is lost: restore the writer from its checkpoint store to
 * retry the same envelopes; their markers absorb those already applied.
 *
 * **Example** (Restarting from the store)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const run: Effect.Effect<void, BigtableError.BigtableError>
 * run.pipe(Effect.catchReason("BigtableError", "BigtableCommitFailed", (reason) => Effect.logWarning(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CommitFailed extends Schema.TaggedError<CommitFailed>()("BigtableCommitFailed", {
  table: Schema.String,
  code: Schema.UndefinedOr(Schema.Int),
  description: Schema.String,
  requests: Schema.Int,
  completed: Schema.Int,
  deduplicated: Schema.Int,
  cause: Schema.Defect()
}) {
  /** @since 0.1.0 */
  get isRetryable(): boolean {
    return true
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `CheckAndMutateRow on ${this.table} failed (${grpc.name(this.code)}: ${this.description}) after ` +
      `${this.completed} applied and ${this.deduplicated} deduplicated of ${this.requests}; the rest were cancelled. ` +
      "Restore the writer from its checkpoint store and retry: the same envelopes are re-sent and their markers " +
      "absorb those already applied"
  }
}

/**
 * A precondition of the exactly-once mode does not hold on the live instance,
 * checked before any write: `subject` is `appProfile` (not single-cluster with transactional
 * writes), `markerFamily` (missing, with a GC rule, or not raw) or `family` (a declared family
 * missing or of another type). The sink never changes the table or the profile.
 *
 * **Example** (Reporting a misconfigured table)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const run: Effect.Effect<void, BigtableError.BigtableError>
 * run.pipe(Effect.catchReason("BigtableError", "BigtablePreconditionFailed", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()("BigtablePreconditionFailed", {
  table: Schema.String,
  subject: Schema.Literals(["appProfile", "markerFamily", "family"]),
  detail: Schema.String
}) {
  /** @since 0.1.0 */
  get isRetryable(): boolean {
    return false
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `exactly-once precondition on ${this.table} (${this.subject}): ${this.detail}`
  }
}

/**
 * The exactly-once writer staged `maxStagedEntries` entries or `maxStagedBytes` bytes since its
 * last checkpoint: the write fails (staged envelopes stay in memory until `checkpoint`). Checkpoint
 * more often, or raise the caps.
 *
 * **Example** (Reporting the caps)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const run: Effect.Effect<void, BigtableError.BigtableError>
 * run.pipe(Effect.catchReason("BigtableError", "BigtableStagingFull", (reason) => Effect.logError(reason.message)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class StagingFull extends Schema.TaggedError<StagingFull>()("BigtableStagingFull", {
  stagedEntries: Schema.Int,
  stagedBytes: Schema.Int,
  maxStagedEntries: Schema.Int,
  maxStagedBytes: Schema.Int
}) {
  /** @since 0.1.0 */
  get isRetryable(): boolean {
    return false
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `${this.stagedEntries} entries (${this.stagedBytes} bytes) are staged since the last checkpoint: ` +
      `another would exceed maxStagedEntries (${this.maxStagedEntries}) or maxStagedBytes (${this.maxStagedBytes}); ` +
      "checkpoint more often or raise the caps"
  }
}

/**
 * Every terminal failure of the Bigtable sink and client, with its cause as a tagged `reason`.
 *
 * **Example** (Handling one reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { BigtableError } from "effect-gcp-sinks/Bigtable"
 * declare const write: Effect.Effect<void, BigtableError.BigtableError>
 * write.pipe(
 *   Effect.catchTag("BigtableError", (e) =>
 *     e.reason._tag === "BigtableTableNotFound" ? Effect.logError(e.message) : Effect.fail(e))
 * )
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class BigtableError extends Schema.TaggedError<BigtableError>()("BigtableError", {
  reason: Schema.Union([
    RpcFailed,
    TableNotFound,
    ColumnFamilyNotDeclared,
    ColumnFamilyTypeMismatch,
    RecoveryExhausted,
    TooManyRejections,
    CommitFailed,
    PreconditionFailed,
    StagingFull,
    ContactFailed
  ])
}) {
  /**
   * Whether trying again later may help.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
  /** @since 0.1.0 */
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * The reasons of a {@link BigtableError}.
 *
 * @category errors
 * @since 0.1.0
 */
export type Reason = BigtableError["reason"]
