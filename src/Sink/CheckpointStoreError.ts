/**
 * The error of a checkpoint store that could not be read or written: one `CheckpointStoreError`
 * with a tagged `reason`, as the backends' errors are.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A stored record does not decode: torn, truncated, foreign, or a position that no longer matches
 * the caller's `positionSchema`. It is never skipped; retrying reads the same bytes.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { CheckpointStoreError } from "effect-gcp-sinks/Sink"
 * declare const load: Effect.Effect<void, CheckpointStoreError>
 * load.pipe(Effect.catchReason("CheckpointStoreError", "CheckpointStoreCorrupt", (r) => Effect.logError(r.detail)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckpointStoreCorrupt extends Schema.TaggedError<CheckpointStoreCorrupt>()("CheckpointStoreCorrupt", {
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  /**
   * The same bytes decode no better later.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The file system or Cloud Storage refused, or did not answer within the retry budget; `detail`
 * names the operation and the file or object.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { CheckpointStoreError } from "effect-gcp-sinks/Sink"
 * declare const save: Effect.Effect<void, CheckpointStoreError>
 * save.pipe(Effect.catchReason("CheckpointStoreError", "CheckpointStoreIo", (r) => Effect.logWarning(r.detail)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckpointStoreIo extends Schema.TaggedError<CheckpointStoreIo>()("CheckpointStoreIo", {
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  /**
   * A disk or a bucket may answer later.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The `writerId` cannot name a record: empty, or too long for an object name.
 *
 * **Example** (Handling this reason)
 * ```ts
 * import { Effect } from "effect"
 * import type { CheckpointStoreError } from "effect-gcp-sinks/Sink"
 * declare const load: Effect.Effect<void, CheckpointStoreError>
 * load.pipe(Effect.catchReason("CheckpointStoreError", "CheckpointStoreInvalidWriterId", (r) => Effect.die(r.detail)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckpointStoreInvalidWriterId extends Schema.TaggedError<CheckpointStoreInvalidWriterId>()(
  "CheckpointStoreInvalidWriterId",
  { detail: Schema.String }
) {
  /**
   * The same id is refused again.
   *
   * @since 0.1.0
   */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The reasons of a {@link CheckpointStoreError}.
 *
 * @category errors
 * @since 0.1.0
 */
export type CheckpointStoreErrorReason = CheckpointStoreCorrupt | CheckpointStoreIo | CheckpointStoreInvalidWriterId

/**
 * The store could not be read or written for the writer `writerId`: the `reason` says how
 * ({@link CheckpointStoreCorrupt}, {@link CheckpointStoreIo}, {@link CheckpointStoreInvalidWriterId}).
 * Match the family with `Effect.catchTag("CheckpointStoreError", ...)` or one case with
 * `Effect.catchReason`.
 *
 * **Example** (Reporting a corrupt store)
 * ```ts
 * import { Effect } from "effect"
 * import type { CheckpointStoreError } from "effect-gcp-sinks/Sink"
 * declare const load: Effect.Effect<void, CheckpointStoreError>
 * load.pipe(Effect.catchTag("CheckpointStoreError", (e) => Effect.logError(`${e.reason._tag}: ${e.reason.detail}`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckpointStoreError extends Schema.TaggedError<CheckpointStoreError>()("CheckpointStoreError", {
  writerId: Schema.String,
  reason: Schema.Union([CheckpointStoreCorrupt, CheckpointStoreIo, CheckpointStoreInvalidWriterId])
}) {
  /**
   * The reason, the writer and what failed.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.reason._tag} for writer '${this.writerId}': ${this.reason.detail}`
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
