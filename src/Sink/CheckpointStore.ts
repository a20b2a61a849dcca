/**
 * Durable, fenced storage of writer checkpoints: the prepare record of the exactly-once protocol.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as file from "../internal/checkpointFile.ts"
import * as memory from "../internal/checkpointMemory.ts"

/**
 * One checkpoint of one writer.
 *
 * - `id`: unique per checkpoint; the next `save` names it as `expectedPreviousId`.
 * - `position`: where the caller's source resumes (an offset, a cursor), as JSON.
 * - `commits`: the backend's pending commits (streams to flush, envelopes to apply), as JSON.
 *
 * **Example** (A checkpoint)
 * ```ts
 * import { CheckpointRecord } from "effect-gcp-sinks/Sink"
 * const record = new CheckpointRecord({ id: "cp-7", position: { offset: 1200 }, commits: [] })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class CheckpointRecord extends Schema.Class<CheckpointRecord>("CheckpointRecord")({
  id: Schema.String,
  position: Schema.Json,
  commits: Schema.Array(Schema.Json)
}) {}

/**
 * Another writer saved a checkpoint for the same `writerId` since `expectedPreviousId`: this
 * writer is a zombie (or lost a race) and must stop without committing.
 *
 * **Example** (Stopping a zombie writer)
 * ```ts
 * import { Effect } from "effect"
 * import type { CheckpointConflict } from "effect-gcp-sinks/Sink"
 * declare const save: Effect.Effect<void, CheckpointConflict>
 * save.pipe(Effect.catchTag("CheckpointConflict", (e) => Effect.logWarning(`writer ${e.writerId} was fenced`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckpointConflict extends Schema.TaggedError<CheckpointConflict>()("CheckpointConflict", {
  writerId: Schema.String,
  expectedPreviousId: Schema.optional(Schema.String),
  actualId: Schema.optional(Schema.String)
}) {
  /**
   * Names the writer and both ids.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `checkpoint of writer '${this.writerId}' was advanced by another writer: expected previous ` +
      `${show(this.expectedPreviousId)}, found ${show(this.actualId)}`
  }
}

const show = (id: string | undefined): string => (id === undefined ? "none" : `'${id}'`)

/**
 * The store could not be read or written: `reason` is `"Corrupt"` (a stored record does not decode:
 * torn, truncated or foreign), `"Io"` (the file system refused) or `"InvalidWriterId"`.
 *
 * **Example** (Reporting a corrupt store)
 * ```ts
 * import { Effect } from "effect"
 * import type { CheckpointStoreError } from "effect-gcp-sinks/Sink"
 * declare const load: Effect.Effect<void, CheckpointStoreError>
 * load.pipe(Effect.catchTag("CheckpointStoreError", (e) => Effect.logError(`${e.reason}: ${e.detail}`)))
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckpointStoreError extends Schema.TaggedError<CheckpointStoreError>()("CheckpointStoreError", {
  reason: Schema.Literals(["Corrupt", "Io", "InvalidWriterId"]),
  writerId: Schema.String,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  /**
   * The reason, the writer and what failed.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `checkpoint store (${this.reason}) for writer '${this.writerId}': ${this.detail}`
  }
}

/**
 * Stores the latest checkpoint of each writer with compare-and-set semantics.
 *
 * **Details**
 *
 * - `load(writerId)`: the latest record, or none for a new writer.
 * - `save(writerId, record, expectedPreviousId)`: stores `record` as the latest if and only if the
 *   latest is still `expectedPreviousId` (`undefined` for the first save); otherwise fails with
 *   {@link CheckpointConflict}. Of two concurrent savers with the same expectation exactly one wins.
 *
 * **Example** (Saving and loading)
 * ```ts
 * import { Effect } from "effect"
 * import { CheckpointRecord, CheckpointStore } from "effect-gcp-sinks/Sink"
 * const program = Effect.gen(function*() {
 *   const store = yield* CheckpointStore
 *   yield* store.save("w1", new CheckpointRecord({ id: "a", position: 1, commits: [] }), undefined)
 *   return yield* store.load("w1")
 * }).pipe(Effect.provide(CheckpointStore.memory))
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class CheckpointStore extends Context.Service<CheckpointStore, {
  readonly load: (writerId: string) => Effect.Effect<Option.Option<CheckpointRecord>, CheckpointStoreError>
  readonly save: (
    writerId: string,
    record: CheckpointRecord,
    expectedPreviousId: string | undefined
  ) => Effect.Effect<void, CheckpointConflict | CheckpointStoreError>
}>()("effect-gcp-sinks/Sink/CheckpointStore") {
  /**
   * A store in this process's memory, fresh for each build of the layer: for tests and for writers
   * whose source replays everything after a restart anyway.
   *
   * @category layers
   * @since 0.1.0
   */
  static readonly memory: Layer.Layer<CheckpointStore> = Layer.sync(
    CheckpointStore,
    () => CheckpointStore.of(memory.make({ conflict: (f) => new CheckpointConflict(f) }))
  )

  /**
   * A store in a local directory, safe across processes on one file system.
   *
   * **Details**
   *
   * Each save writes a numbered file through a temporary file that is fsynced and then linked into
   * place without overwriting (an atomic, no-clobber rename), so of two savers only one can create
   * the next number; the directory is fsynced after. A crash before the link leaves the previous
   * record in force. Records are versioned JSON encoded with `Schema`; one that fails to decode
   * is a `CheckpointStoreError` with reason `"Corrupt"`, never skipped. The newest two records are kept.
   *
   * **Example** (Checkpoints under ./state)
   * ```ts
   * import { CheckpointStore } from "effect-gcp-sinks/Sink"
   * const layer = CheckpointStore.file("./state/checkpoints")
   * ```
   *
   * @category layers
   * @since 0.1.0
   */
  static readonly file = (directory: string): Layer.Layer<CheckpointStore> =>
    Layer.sync(CheckpointStore, () =>
      CheckpointStore.of(file.make(directory, {
        decode: Schema.decodeUnknownResult(CheckpointRecord),
        conflict: (f) => new CheckpointConflict(f),
        error: (f) => new CheckpointStoreError(f)
      })))
}
