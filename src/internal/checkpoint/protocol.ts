/**
 * The checkpoint protocol of the exactly-once writers (DESIGN 6), shared by every backend: a backend
 * supplies a {@link Participant} (what to commit, how to commit it, how to adopt a restored record);
 * this module runs the rest.
 *
 * **Checkpoint** (`writer.checkpoint(position)`), exclusive with `write` (a write waits for a
 * checkpoint under way, and the other way round, so `position` describes exactly the records written
 * before it):
 *
 * 1. drain: the core's barrier (`flush`): every record written so far is acknowledged or routed;
 * 2. prepare: the participant names its commits (JSON through its `commitSchema`);
 * 3. save `{ id, position, commits }` with compare-and-set against the previous id (the one this
 *    writer restored or last saved): the prepare is now durable. `CheckpointConflict` means another
 *    process advanced this `writerId` (this one is a zombie): nothing is committed;
 * 4. commit: the participant runs the commits, idempotently.
 *
 * Any failure of a checkpoint (the drain, a conflict, the store, a commit) or its interruption stops
 * the writer: every later `write`, `flush` and `checkpoint` fails with it. A half-done checkpoint is
 * repaired by a restart, which re-runs the saved commits; continuing would let the next record
 * supersede commits that never ran.
 *
 * **Restore** (when the writer is built, before any write): the record read by {@link resume}
 * (`load`; a position that does not decode is `CheckpointStoreError` `CheckpointStoreCorrupt`) has its commits
 * decoded (likewise corrupt when they do not decode), re-run through `commit` (idempotent: they
 * may have run before the crash), then handed to `restore` for the participant to adopt its state
 * (BigQuery: the streams and offsets to probe). The position goes back to the caller through
 * `Resume.position`, read before the writer is built, so the source can start there.
 *
 * There is no separate "commits done" write (DESIGN 6 step 4): a record is superseded by the next
 * save, and a restore re-runs its commits idempotently, so marking them done would only cost a
 * second store write per checkpoint.
 *
 * **How a backend plugs in**
 *
 * ```ts
 * const resume: Resume<P> = options.checkpoint.resume   // from Checkpoint.resume, in the caller
 * const base = yield* core.make({ ..., backend })       // the at-least-once writer core
 * const participant: Participant<C, E> = { commitSchema, prepare, commit, restore }
 * const writer = yield* checkpoint.make({ name: "XSink", writer: base, resume, participant })
 * ```
 *
 * `prepare`, `commit` and `restore` run on the caller's fiber; a participant whose state lives on the
 * owner fiber reads it there (`Core.offer` an event carrying a `Deferred`).
 *
 * @internal
 */
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import type { CheckpointError, Resume, ResumeOptions } from "../../Sink/Checkpoint.ts"
import { CheckpointConflict, CheckpointRecord, CheckpointStore } from "../../Sink/CheckpointStore.ts"
import type { Writer } from "../../Sink/Writer.ts"
import { hotSpan } from "../core/hotSpan.ts"
import { fencedDetail } from "./fenced.ts"
import * as ids from "./ids.ts"
import * as storeError from "./storeError.ts"

/**
 * What a backend supplies to the protocol. `C` is one commit (a stream to flush up to an offset, a
 * staged envelope to apply); `E` the writer's error.
 *
 * - `commitSchema`: encodes a commit to JSON for the record, and decodes it back on restore.
 * - `prepare`: after the drain, the commits that make every record written so far visible. Those of
 *   earlier checkpoints may be named again (commits are idempotent), and must be when a restore
 *   needs them to adopt its state.
 * - `commit(commits)`: makes them visible; idempotent (run again on restore, possibly after they ran).
 * - `restore(commits)`: at start, after the stored commits were re-run: adopt the state they name.
 * - `discard(commits)` (optional): after a save refused with `CheckpointConflict`, the commits of
 *   that checkpoint that the stored record does not name: no writer will ever commit them, so what
 *   they hold (staged files) may be released. Best effort and bounded; it never fails.
 *
 * @internal
 */
export interface Participant<C, E> {
  readonly commitSchema: Schema.Codec<C, Schema.Json>
  readonly prepare: Effect.Effect<ReadonlyArray<C>, E>
  readonly commit: (commits: ReadonlyArray<C>) => Effect.Effect<void, E>
  readonly restore: (commits: ReadonlyArray<C>) => Effect.Effect<void, E>
  readonly discard?: ((commits: ReadonlyArray<C>) => Effect.Effect<void>) | undefined
}

const corrupt = (writerId: string, detail: string, cause?: unknown) =>
  storeError.fromFields({ reason: "Corrupt", writerId, detail, cause })

/**
 * `Checkpoint.resume`: claims the writer (the store's `claim`: ownership passes to this caller, and
 * the previous owner's next save is refused), then decodes the claimed record's position.
 *
 * @internal
 */
export const resume = Effect.fnUntraced(
  function*<P>(options: ResumeOptions<P>) {
    const store = yield* CheckpointStore
    const { id: claimId, record } = yield* store.claim(options.writerId)
    const position = Option.isNone(record)
      ? Option.none<P>()
      : Option.some(
        yield* Schema.decodeUnknownEffect(options.positionSchema)(record.value.position).pipe(
          Effect.mapError((e) =>
            corrupt(options.writerId, `checkpoint '${record.value.id}': position does not decode: ${e.message}`, e)
          )
        )
      )
    return { writerId: options.writerId, position, record, claimId, positionSchema: options.positionSchema, store }
  },
  (effect, options) =>
    effect.pipe(Effect.withSpan("Checkpoint.resume", { attributes: { "writer.id": options.writerId } }))
)

/**
 * The id of the checkpoint after `previous`: a sequence number (one more than the previous id's, for
 * people reading the store) and a random part (two processes never save the same id).
 *
 * @internal
 */
export const nextId: (previous: string | undefined) => Effect.Effect<string> = ids.nextId

/** What {@link make} wraps. @internal */
export interface Options<A, P, C, E> {
  /** Span prefix: `XSink.checkpoint`, `XSink.restore`. */
  readonly name: string
  /** The writer core's writer (its `flush` is the drain barrier). */
  readonly writer: Writer<A, E>
  readonly resume: Resume<P>
  readonly participant: Participant<C, E>
}

/** What the writer keeps once restored: never the restored record (a Bigtable one holds every envelope). */
interface Kept<A, P, C, E> {
  readonly name: string
  readonly writer: Writer<A, E>
  readonly writerId: string
  readonly store: Resume<P>["store"]
  readonly positionSchema: Resume<P>["positionSchema"]
  readonly participant: Participant<C, E>
  readonly previousId: string
}

/**
 * Restores the participant from the resumed record, then returns the exactly-once writer: `write`
 * and `flush` of the core writer, behind the checkpoint's lock and latch, and `checkpoint`.
 *
 * @internal
 */
export const make = Effect.fnUntraced(
  function*<A, P, C, E>(options: Options<A, P, C, E>) {
    const { participant, resume: resumed } = options
    const writerId = resumed.writerId
    if (Option.isSome(resumed.record)) {
      const record = resumed.record.value
      const commits = yield* Schema.decodeUnknownEffect(Schema.Array(participant.commitSchema))(record.commits).pipe(
        Effect.mapError((e) => corrupt(writerId, `checkpoint '${record.id}': commits do not decode: ${e.message}`, e))
      )
      yield* participant.commit(commits)
      yield* participant.restore(commits)
      yield* Effect.annotateCurrentSpan({ "checkpoint.id": record.id, "checkpoint.commits": commits.length })
    }
    // the first save expects the id this writer claimed at resume: a later claim fences it
    // built apart from this scope, so that nothing the writer holds reaches the restored record
    return yield* protocol<A, P, C, E>({
      name: options.name,
      writer: options.writer,
      writerId,
      store: resumed.store,
      positionSchema: resumed.positionSchema,
      participant,
      previousId: resumed.claimId
    })
  },
  (effect, options) =>
    effect.pipe(Effect.withSpan(`${options.name}.restore`, { attributes: { "writer.id": options.resume.writerId } }))
)

/** How often a fenced writer reads the stored record again before it keeps its files. */
const readAgain = Schedule.exponential("100 millis")

/**
 * After a refused save: the prepared commits that the stored record does not name go to the
 * participant's `discard`. A refused save may still be named by the stored record: an attempt whose
 * answer was lost landed, and a successor restored it (its commits re-run there, so the files are
 * loaded, not orphaned): those are kept. The stored record is read up to five times (a store
 * failing now and then does not leave the files behind); when it still cannot be read, nothing is
 * discarded (what is left costs storage, never data).
 */
const discardOrphans = <A, P, C, E>(
  kept: Kept<A, P, C, E>,
  commits: ReadonlyArray<C>,
  encoded: ReadonlyArray<Schema.Json>
): Effect.Effect<void> => {
  const discard = kept.participant.discard
  if (discard === undefined || commits.length === 0) return Effect.void
  return kept.store.load(kept.writerId).pipe(
    Effect.retry({ times: 4, schedule: readAgain }),
    Effect.flatMap((stored) => {
      const named = new Set(Option.isSome(stored) ? stored.value.commits.map((c) => JSON.stringify(c)) : [])
      const orphans = commits.filter((_, i) => !named.has(JSON.stringify(encoded[i])))
      return orphans.length === 0 ? Effect.void : discard(orphans)
    }),
    Effect.catch((error) =>
      Effect.logWarning("a fenced writer's prepared commits are kept: the stored record could not be read", error)
    )
  )
}

/**
 * "Another writer owns this now" noticed by the backend (its error carries a `Fenced`) becomes the
 * store's `CheckpointConflict`: one error for it whichever layer noticed, the same one each time.
 */
const fencing = <E>(writerId: string, previousId: () => string) => {
  const conflicts = new WeakMap<object, CheckpointConflict>()
  return (error: E | CheckpointError): E | CheckpointError => {
    const detail = fencedDetail(error)
    if (detail === undefined || !Predicate.isObject(error)) return error
    const known = conflicts.get(error)
    if (known !== undefined) return known
    const conflict = new CheckpointConflict({ writerId, expectedPreviousId: previousId(), detail })
    conflicts.set(error, conflict)
    return conflict
  }
}

const protocol = Effect.fnUntraced(function*<A, P, C, E>(kept: Kept<A, P, C, E>) {
  const { participant, positionSchema, store, writer, writerId } = kept
  const commitsSchema = Schema.Array(participant.commitSchema)
  let previousId: string = kept.previousId

  // a write and a checkpoint never overlap: the position names exactly the records written before it
  const lock = yield* Semaphore.make(1)
  let failure: Cause.Cause<E | CheckpointError> | undefined = undefined
  const latched = <X>(effect: Effect.Effect<X, E | CheckpointError>) =>
    Effect.suspend(() => (failure === undefined ? effect : Effect.failCause(failure)))
  const latch = <X>(exit: Exit.Exit<X, E | CheckpointError>) =>
    Effect.sync(() => {
      if (Exit.isFailure(exit) && failure === undefined) failure = exit.cause
    })

  const encodePosition = (position: P) =>
    Schema.encodeEffect(positionSchema)(position).pipe(
      Effect.mapError((e) => corrupt(writerId, `the position does not encode: ${e.message}`, e))
    )
  const encodeCommits = (commits: ReadonlyArray<C>) =>
    Schema.encodeEffect(commitsSchema)(commits).pipe(
      Effect.mapError((e) => corrupt(writerId, `the commits do not encode: ${e.message}`, e))
    )

  const fenced = fencing<E>(writerId, () => previousId)

  const checkpoint = (position: P): Effect.Effect<void, E | CheckpointError> =>
    lock.withPermit(latched(Effect.gen(function*() {
      yield* Effect.mapError(writer.flush, fenced)
      const commits = yield* participant.prepare
      const id = yield* nextId(previousId)
      const record = new CheckpointRecord({
        id,
        position: yield* encodePosition(position),
        commits: yield* encodeCommits(commits)
      })
      yield* Effect.annotateCurrentSpan({ "checkpoint.id": id, "checkpoint.commits": commits.length })
      yield* store.save(writerId, record, previousId).pipe(
        Effect.tapError((error) =>
          error._tag === "CheckpointConflict" ? discardOrphans(kept, commits, record.commits) : Effect.void
        )
      )
      previousId = id
      yield* participant.commit(commits)
    }))).pipe(
      Effect.onExit(latch),
      hotSpan(`${kept.name}.checkpoint`, { "writer.id": writerId })
    )

  return {
    write: (records: Iterable<A>) => lock.withPermit(latched(writer.write(records))).pipe(Effect.mapError(fenced)),
    flush: Effect.mapError(latched(writer.flush), fenced),
    checkpoint,
    summary: writer.summary
  }
})
