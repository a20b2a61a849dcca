/**
 * Durable, fenced storage of writer checkpoints: the prepare record of the exactly-once protocol.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { SqlClient } from "effect/sql/SqlClient"
import * as file from "../internal/checkpoint/fileStore.ts"
import * as gcsOptions from "../internal/checkpoint/gcsOptions.ts"
import * as gcs from "../internal/checkpoint/gcsStore.ts"
import * as memory from "../internal/checkpoint/memoryStore.ts"
import * as sqlOptions from "../internal/checkpoint/sqlOptions.ts"
import * as sqlStore from "../internal/checkpoint/sqlStore.ts"
import * as sqlTable from "../internal/checkpoint/sqlTable.ts"
import * as storeError from "../internal/checkpoint/storeError.ts"
import type { CheckpointStoreError } from "./CheckpointStoreError.ts"
import { GcsClient } from "./GcsClient.ts"
import type { RetryPolicyInput } from "./RetryPolicy.ts"
import type { SinkConfigError } from "./SinkConfigError.ts"

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
 * Another writer owns this `writerId` now: this one is a zombie (or the old owner of a partition
 * that moved, or lost a race) and stopped without committing. The one error for it, whichever layer
 * noticed: the store (a save whose `expectedPreviousId` is no longer the latest id, because another
 * process resumed, i.e. claimed, the writer or saved first: `actualId` names what it found), or the
 * destination (BigQuery exactly-once meeting its successor's rows on a stream it adopted: `detail`
 * says where). Match on `"CheckpointConflict"` to tell a fenced writer from a failed one.
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
  actualId: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String)
}) {
  /**
   * Names the writer and both ids, or what the destination showed.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return this.detail !== undefined
      ? `writer '${this.writerId}' was taken over by another writer: ${this.detail}`
      : `checkpoint of writer '${this.writerId}' was advanced by another writer: expected previous ` +
        `${show(this.expectedPreviousId)}, found ${show(this.actualId)}`
  }
}

const show = (id: string | undefined): string => (id === undefined ? "none" : `'${id}'`)

/**
 * The options of {@link CheckpointStore.gcs}.
 *
 * - `bucket`: an existing bucket (the store creates no bucket).
 * - `prefix`: the folder of the checkpoint objects (`checkpoints/orders`); default the bucket's top
 *   level. A trailing `/` is added. Each writer has one object, `<prefix><writerId>.json`, the id
 *   escaped as in the file store (`%XX` for every character outside `[A-Za-z0-9_-]`).
 * - `responseTimeout`: the deadline of each request; a request unanswered that long is retried like
 *   a 503. Default 30 seconds.
 * - `retry`: the budget for transient failures (408, 429, 5xx, network errors, deadlines) of each
 *   request: `RetryPolicyOptions` or a `RetryPolicy`; default 8 attempts from 100 ms to 5 s. The
 *   input of a `RetryPolicy.fromSchedule` schedule is each failure as the `CheckpointStoreError`
 *   (`CheckpointStoreIo`, naming the object) it would end as.
 *
 * @category models
 * @since 0.1.0
 */
export interface GcsCheckpointStoreOptions {
  readonly bucket: string
  readonly prefix?: string | undefined
  readonly responseTimeout?: Duration.Input | undefined
  readonly retry?: RetryPolicyInput | undefined
}

/**
 * The options of {@link CheckpointStore.sql}.
 *
 * - `table`: the table of the checkpoints, one row per writer, created on first use; default
 *   `effect_gcp_sinks_checkpoints`. A plain identifier (a letter or `_`, then letters, digits, `_`).
 * - `responseTimeout`: the deadline of each statement; one unanswered that long is retried like a
 *   lost connection. Default 30 seconds.
 * - `retry`: the budget for failures the driver calls retryable (a lost connection, a deadlock, a
 *   serialization failure) and deadlines, per statement; default 8 attempts, backoff 100 ms to 5 s.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqlCheckpointStoreOptions {
  readonly table?: string | undefined
  readonly responseTimeout?: Duration.Input | undefined
  readonly retry?: RetryPolicyInput | undefined
}

/**
 * What {@link CheckpointStore} `claim` returns: the id the claimant's first save must expect, and the
 * latest record, now stored under that id (none for a writer that never saved a checkpoint).
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointClaim {
  readonly id: string
  readonly record: Option.Option<CheckpointRecord>
}

/**
 * Stores the latest checkpoint of each writer with compare-and-set semantics, and passes a writer's
 * ownership to whoever claims it last.
 *
 * **Details**
 *
 * - `load(writerId)`: the latest record, or none for a new writer (or one claimed before its first
 *   checkpoint).
 * - `save(writerId, record, expectedPreviousId)`: stores `record` as the latest if and only if the
 *   latest id is still `expectedPreviousId` (`undefined` for a writer never saved nor claimed);
 *   otherwise fails with {@link CheckpointConflict}. Of two concurrent savers with the same
 *   expectation exactly one wins.
 * - `claim(writerId)`: makes the caller the writer's owner, as a fencing token does: the latest
 *   record is stored again under a new id (a bare claim when there is none), compare-and-set against
 *   the one it read, and that id is returned. The previous owner's next save, which expects an older
 *   id, is refused; the claimant's first save expects the claim's id. A claim that keeps losing the
 *   race to other savers (ten times) fails with {@link CheckpointConflict}. `Checkpoint.resume`
 *   claims, so a writer restarted elsewhere takes over from the one it replaces.
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
  readonly claim: (writerId: string) => Effect.Effect<CheckpointClaim, CheckpointConflict | CheckpointStoreError>
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
    () =>
      CheckpointStore.of(memory.make({
        conflict: (f) => new CheckpointConflict(f),
        withId: (record, id) => new CheckpointRecord({ ...record, id })
      }))
  )

  /**
   * A store in a local directory, safe across processes on one file system.
   *
   * **Details**
   *
   * Each save writes a numbered file through a temporary file that is fsynced and then linked into
   * place without overwriting (an atomic, no-clobber rename), so of two savers only one can create
   * the next number; the directory is fsynced after (before a writer's first record, the store
   * directory and every ancestor up to the root that the store has not synced yet, so a crash cannot
   * take the writer's directory; a read-only ancestor counts as synced). A crash before the link leaves the
   * previous record in force. Records are versioned JSON encoded with `Schema`; one that fails to decode
   * is a `CheckpointStoreError` with reason `CheckpointStoreCorrupt`, never skipped. The newest two records are kept.
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
        error: storeError.fromFields
      })))

  /**
   * A store in a SQL database (PostgreSQL through `@effect/sql-pg`, the database an `effect/cluster`
   * deployment already runs): writers on different machines sharing a `writerId` fence each other.
   *
   * **Details**
   *
   * One row per writer holds its latest record (the same versioned JSON as the file and GCS stores)
   * and its id. The database does the compare-and-set: a save updates the row only where its id is
   * still the expected one (a writer's first save inserts it only where none exists), and a
   * statement that changed nothing is a {@link CheckpointConflict} naming both ids, unless the row
   * holds this very save (an attempt whose answer was lost). The table is created on first use; a
   * role that may not create tables uses one made for it (needing SELECT, INSERT and UPDATE). Every statement has a deadline; retryable failures are retried on `retry`, the rest are a
   * {@link CheckpointStoreError}. The `SqlClient` comes from the context, so the driver is the
   * caller's: `@effect/sql-pg` is not a dependency of this package.
   *
   * **Example** (Checkpoints in PostgreSQL)
   * ```ts
   * import { PgClient } from "@effect/sql-pg"
   * import { Layer } from "effect"
   * import { CheckpointStore } from "effect-gcp-sinks/Sink"
   * const layer = CheckpointStore.sql({ table: "orders_checkpoints" }).pipe(
   *   Layer.provide(PgClient.layer({ host: "127.0.0.1", database: "orders" }))
   * )
   * ```
   *
   * @category layers
   * @since 0.1.0
   */
  static readonly sql = (
    options: SqlCheckpointStoreOptions = {}
  ): Layer.Layer<CheckpointStore, SinkConfigError, SqlClient> =>
    Layer.effect(
      CheckpointStore,
      Effect.gen(function*() {
        const settings = yield* sqlOptions.settings(options)
        const sql = yield* SqlClient
        return CheckpointStore.of(sqlStore.make(sqlTable.fromClient(sql, settings.table), settings, {
          decode: Schema.decodeUnknownResult(CheckpointRecord),
          conflict: (f) => new CheckpointConflict(f),
          error: storeError.fromFields
        }))
      })
    )

  /**
   * A store in a Cloud Storage bucket: writers on different machines sharing a `writerId` fence
   * each other.
   *
   * **When to use**
   *
   * When the process may be restarted on another machine (a container, a VM group): the memory store
   * dies with the process, the file store with the disk.
   *
   * **Details**
   *
   * Each writer has one object, replaced on each save by a single upload under a generation-match
   * precondition: `ifGenerationMatch: 0` (create only) for the first save, then the generation of the
   * record this store last loaded or saved. When the expected previous id is not that record's, the
   * stored object is read and its id compared first. A `412 Precondition Failed` is a
   * {@link CheckpointConflict} naming both ids, unless the object holds this very save (an attempt
   * whose answer was lost, recognised by a per-save nonce in the object's metadata). Every request
   * has a deadline (`responseTimeout`) and transient failures are retried on `retry`; every other
   * failure is a {@link CheckpointStoreError} (`CheckpointStoreIo`, `CheckpointStoreCorrupt` for an
   * object that is not a checkpoint of this writer, `CheckpointStoreInvalidWriterId`). Objects hold the same versioned JSON envelope as the file
   * store. Options are checked when the layer is built (`SinkConfigError` naming the option).
   *
   * **Example** (Checkpoints in a bucket, on fake-gcs-server)
   * ```ts
   * import { Layer } from "effect"
   * import { CheckpointStore, GcsClient } from "effect-gcp-sinks/Sink"
   * const layer = CheckpointStore.gcs({ bucket: "my-checkpoints", prefix: "orders" }).pipe(
   *   Layer.provide(GcsClient.layer({ projectId: "test-project", emulator: { rest: "127.0.0.1:4443" } }))
   * )
   * ```
   *
   * @see {@link GcsClient}
   * @category layers
   * @since 0.1.0
   */
  static readonly gcs = (
    options: GcsCheckpointStoreOptions
  ): Layer.Layer<CheckpointStore, SinkConfigError, GcsClient> =>
    Layer.effect(
      CheckpointStore,
      Effect.gen(function*() {
        const settings = yield* gcsOptions.settings(options)
        const { storage } = yield* GcsClient
        return CheckpointStore.of(gcs.make(storage, settings, {
          decode: Schema.decodeUnknownResult(CheckpointRecord),
          conflict: (f) => new CheckpointConflict(f),
          error: storeError.fromFields
        }))
      })
    )
}
