/**
 * The caller's side of exactly-once writing: resume a writer from its last checkpoint,
 * and say how often the sink form checkpoints and what position a record stands for.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as internal from "../internal/checkpoint/protocol.ts"
import type { CheckpointConflict, CheckpointRecord, CheckpointStore } from "./CheckpointStore.ts"
import type { CheckpointStoreError } from "./CheckpointStoreError.ts"

/**
 * The errors of the checkpoint protocol itself: another process advanced this writer
 * (`CheckpointConflict`: this one is a zombie and stopped without committing), or the store failed
 * or holds a record that does not decode (`CheckpointStoreError`).
 *
 * @category errors
 * @since 0.1.0
 */
export type CheckpointError = CheckpointConflict | CheckpointStoreError

/**
 * Where a writer resumes: its `writerId`, the stored `position` (none for a new writer) and the
 * record it was read from. Give it to an exactly-once sink or writer (`checkpoint: { resume }`) and
 * start the source at `position`.
 *
 * **Details**
 *
 * The record is read once, by {@link resume}, which claims the writer under `claimId`; the writer
 * restores exactly that record: what the source was told and what the writer restores cannot
 * differ. Ownership passes to the latest claim: if another process resumes (claims) the same
 * `writerId` later, or a paused one saves first, this writer's next checkpoint fails with
 * `CheckpointConflict` and nothing it wrote since is committed. A `Resume` is therefore good for one
 * run: resume again before restarting.
 *
 * `store`, `record`, `claimId` and `positionSchema` are what the writer restores from; callers read
 * `writerId` and `position`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Resume<P> {
  readonly writerId: string
  readonly position: Option.Option<P>
  readonly record: Option.Option<CheckpointRecord>
  readonly claimId: string
  readonly positionSchema: Schema.Codec<P, Schema.Json>
  readonly store: CheckpointStore["Service"]
}

/**
 * Options of {@link resume}: the writer's id (stable per process or source partition) and the
 * `Schema` of its positions, which are stored as validated JSON.
 *
 * @category models
 * @since 0.1.0
 */
export interface ResumeOptions<P> {
  readonly writerId: string
  readonly positionSchema: Schema.Codec<P, Schema.Json>
}

/**
 * Claims `writerId` in the `CheckpointStore` in context and reads its last checkpoint: the position
 * to restart the source at (none for a new writer), and what the writer will restore.
 *
 * **Details**
 *
 * Resuming takes the writer over (the store's `claim`): a process still running the same `writerId`
 * (a zombie, or the previous owner of a partition that moved) is refused at its next checkpoint with
 * `CheckpointConflict`, and this one's checkpoints go through. The claim writes to the store; to only
 * look at a writer's record, use the store's `load`. A stored record whose position does not decode
 * with `positionSchema` fails with `CheckpointStoreError` (reason `CheckpointStoreCorrupt`); it is never skipped.
 *
 * **Example** (Resuming a file-backed source)
 * ```ts
 * import { Effect, Option, Schema } from "effect"
 * import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"
 * const program = Effect.gen(function*() {
 *   const resume = yield* Checkpoint.resume({ writerId: "orders-0", positionSchema: Schema.Number })
 *   return Option.getOrElse(resume.position, () => 0) // the first line to read
 * }).pipe(Effect.provide(CheckpointStore.file("./state")))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const resume: <P>(
  options: ResumeOptions<P>
) => Effect.Effect<Resume<P>, CheckpointError, CheckpointStore> = internal.resume

/**
 * How often the sink form checkpoints: a `Duration` (or a duration string such as `"1 second"`)
 * since the last checkpoint, or a number of records written since it. It also checkpoints once at
 * the end of input.
 *
 * @category models
 * @since 0.1.0
 */
export type Every = Duration.Duration | `${number} ${Duration.Unit}` | number

/**
 * The `checkpoint` option of every exactly-once write method, on both backends
 * (`WriteMethod.exactlyOnce(...)`, BigQuery's `WriteMethod.fileLoads(...)`): where the writer
 * resumes, the source position a written record stands for, and, in the sink form, how often it
 * checkpoints.
 *
 * **Details**
 *
 * - `resume`: from {@link resume}; the source must start at its `position`.
 * - `position(a)`: where the source resumes once `a` and everything before it are written,
 *   typically the offset after `a` (`a.offset + 1`); it must be encodable by the resume's
 *   `positionSchema`. The sink form checkpoints at the position of the last record written;
 *   Bigtable's exactly-once method also derives each record's marker identity from it,
 *   so it must be stable and unique per record there.
 * - `every` ({@link Every}; sink form only): checked after each chunk (records) and on a timer
 *   (durations); a checkpoint is taken only when something was written since the last one.
 *   Without it the sink checkpoints once, at the end of input (a bounded source; for file loads,
 *   one load per table, which also permits a `writeDisposition` other than `WRITE_APPEND`).
 *   The writer form has no `every` (see {@link WriterCheckpointOptions}): the caller checkpoints
 *   with `writer.checkpoint(position)` (and BigQuery's writer form takes no `position` either).
 *
 * **Example** (A checkpoint every second)
 * ```ts
 * import type { Checkpoint } from "effect-gcp-sinks/Sink"
 * declare const resume: Checkpoint.Resume<number>
 * const checkpoint: Checkpoint.CheckpointOptions<{ readonly line: number }, number> = {
 *   resume,
 *   every: "1 second",
 *   position: (row) => row.line + 1
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointOptions<A, P> {
  readonly resume: Resume<P>
  readonly position: (a: A) => P
  readonly every?: Every | undefined
}

/**
 * The `checkpoint` option of `BigtableSink.writer` with its exactly-once write method:
 * {@link CheckpointOptions} without `every`, since the caller checkpoints with
 * `writer.checkpoint(position)`; `position` stays, since each record's marker identity derives from
 * it. (`BigQuerySink.writer` takes `{ resume }` alone: `BigQuerySink.WriterOptions`.)
 *
 * @category models
 * @since 0.1.0
 */
export type WriterCheckpointOptions<A, P> = Omit<CheckpointOptions<A, P>, "every">
