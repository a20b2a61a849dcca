/**
 * The file `CheckpointStore`: numbered, versioned entries per writer; temporary file, fsync, then a
 * no-clobber link into place, which makes the link itself the compare-and-set. A save links its
 * record as the next number when the newest entry's id is the expected one; a claim (ADR 0040) links
 * the newest entry again under a new id (a bare claim when there is none), reading again when it
 * loses the race.
 *
 * @internal
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as nodeFs from "node:fs/promises"
import * as path from "node:path"
import * as Envelope from "./envelope.ts"
import * as ids from "./ids.ts"
import type { Claimed, Fields } from "./memoryStore.ts"
import type { ErrorFields } from "./storeError.ts"

const recordFile = /^(\d{20})\.json$/
const tempFile = /^\.tmp-(\d{20})-[0-9a-f]+$/

/** @internal */
export const fileName = (sequence: number): string => `${String(sequence).padStart(20, "0")}.json`

/**
 * A writer id as a directory name that cannot escape the store: every character outside
 * `[A-Za-z0-9_-]` becomes `%XX` of its UTF-8 bytes.
 *
 * @internal
 */
export const directoryName = (writerId: string): string => {
  let out = ""
  for (const byte of new TextEncoder().encode(writerId)) {
    const c = String.fromCharCode(byte)
    out += /[A-Za-z0-9_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return out
}

/** @internal */
export type { ErrorFields }

/** @internal */
export interface Options<R, C, E> {
  readonly decode: (u: unknown) => Result.Result<R, Schema.SchemaError>
  readonly conflict: (fields: Fields) => C
  readonly error: (fields: ErrorFields) => E
  /** Test seam: runs after a save read the newest record, before it writes its own. */
  readonly afterRead?: ((writerId: string, sequence: number) => Effect.Effect<void>) | undefined
}

/** An open file, as `node:fs/promises` gives it: the calls the store makes on one. @internal */
export interface FileHandle {
  readonly writeFile: (data: string, encoding: "utf8") => Promise<void>
  readonly sync: () => Promise<void>
  readonly close: () => Promise<void>
}

/**
 * The file-system calls the store makes, in the shape of `node:fs/promises` (the default): the seam
 * through which the simulator supplies a file system of its own (`test/sim/fileSystem.ts`).
 *
 * @internal
 */
export interface FileSystem {
  readonly mkdir: (path: string, options: { readonly recursive: true }) => Promise<string | undefined>
  readonly readdir: (path: string) => Promise<Array<string>>
  readonly readFile: (path: string, encoding: "utf8") => Promise<string>
  readonly open: (path: string, flags: "wx" | "r") => Promise<FileHandle>
  readonly link: (existingPath: string, newPath: string) => Promise<void>
  readonly rm: (path: string, options: { readonly force: true }) => Promise<void>
}

/** @internal */
export const nodeFileSystem: FileSystem = nodeFs

/** A writer's latest entry and its number. */
interface Latest<R> extends Envelope.Entry<R> {
  readonly sequence: number
}

// Closing after a successful fsync cannot lose data, and a failed temp removal only leaves a file
// that the next prune removes: both are logged, never raised.
const closeQuietly = (handle: FileHandle): Effect.Effect<void> =>
  Effect.tryPromise(() => handle.close()).pipe(
    Effect.catch((error) => Effect.logDebug("checkpoint file close failed", error))
  )

const removeQuietly = (fs: FileSystem, file: string): Effect.Effect<void> =>
  Effect.tryPromise(() => fs.rm(file, { force: true })).pipe(
    Effect.catch((error) => Effect.logWarning("could not remove a temporary checkpoint file", error))
  )

// A file-system rejection kept whole, so callers can branch on its errno code.
class FsFailure extends Data.TaggedError("FsFailure")<{ readonly cause: unknown }> {}

// A failure of the store's steps, before `make` turns it into the caller's error type.
class StoreFailure extends Data.TaggedError("StoreFailure")<{ readonly fields: ErrorFields }> {}

const failure = (fields: ErrorFields): StoreFailure => new StoreFailure({ fields })

const attempt = <A>(run: () => Promise<A>): Effect.Effect<A, FsFailure> =>
  Effect.tryPromise({ try: run, catch: (cause) => new FsFailure({ cause }) })

const isCode = (cause: unknown, code: string): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === code

const io = <A>(writerId: string, detail: string, run: () => Promise<A>): Effect.Effect<A, StoreFailure> =>
  Effect.tryPromise({ try: run, catch: (cause) => failure({ reason: "Io", writerId, detail, cause }) })

const writerDirectory = (directory: string, writerId: string): Effect.Effect<string, StoreFailure> =>
  writerId.length === 0
    ? Effect.fail(failure({ reason: "InvalidWriterId", writerId, detail: "writerId must not be empty" }))
    : Effect.succeed(path.join(directory, directoryName(writerId)))

// A writer that never saved has no directory: that is "no record", not an error.
const listSequences = (
  fs: FileSystem,
  writerId: string,
  dir: string
): Effect.Effect<ReadonlyArray<string>, StoreFailure> =>
  attempt(() => fs.readdir(dir)).pipe(
    Effect.catch(({ cause }) =>
      isCode(cause, "ENOENT")
        ? Effect.succeed([])
        : Effect.fail(failure({ reason: "Io", writerId, detail: `list ${dir}`, cause }))
    )
  )

const newestSequence = (names: ReadonlyArray<string>): number => {
  let sequence = 0
  for (const name of names) {
    const match = recordFile.exec(name)
    if (match?.[1] !== undefined) sequence = Math.max(sequence, Number(match[1]))
  }
  return sequence
}

const corrupt = (writerId: string, detail: string): StoreFailure => failure({ reason: "Corrupt", writerId, detail })

// The newest envelope of a writer, checked against its file name; its record still undecoded.
const readNewest = Effect.fnUntraced(function*(fs: FileSystem, writerId: string, dir: string) {
  const sequence = newestSequence(yield* listSequences(fs, writerId, dir))
  if (sequence === 0) return Option.none<{ readonly sequence: number; readonly stored: Envelope.Stored }>()
  const file = path.join(dir, fileName(sequence))
  const text = yield* io(writerId, `read ${file}`, () => fs.readFile(file, "utf8"))
  const envelope = Envelope.decodeEnvelope(text)
  if (Result.isFailure(envelope)) {
    return yield* corrupt(
      writerId,
      `${file} is not a valid checkpoint (torn or foreign file): ${envelope.failure.message}`
    )
  }
  const { sequence: storedSequence, writerId: storedWriter } = envelope.success
  if (storedSequence !== sequence || storedWriter !== writerId) {
    return yield* corrupt(writerId, `${file} holds sequence ${storedSequence} of writer '${storedWriter}'`)
  }
  const stored = Envelope.storedOf(envelope.success)
  if (Result.isFailure(stored)) return yield* corrupt(writerId, `${file} is not a valid checkpoint: ${stored.failure}`)
  return Option.some({ sequence, stored: stored.success })
})

const readLatest = <R extends { readonly id: string }>(
  fs: FileSystem,
  decode: (u: unknown) => Result.Result<R, Schema.SchemaError>,
  writerId: string,
  dir: string
): Effect.Effect<Option.Option<Latest<R>>, StoreFailure> =>
  Effect.flatMap(readNewest(fs, writerId, dir), (newest) => {
    if (Option.isNone(newest)) return Effect.succeedNone
    const { sequence, stored } = newest.value
    const entry = Envelope.entryOf(stored, decode)
    return Result.isFailure(entry)
      ? Effect.fail(corrupt(writerId, `${path.join(dir, fileName(sequence))} holds ${entry.failure}`))
      : Effect.succeedSome({ ...entry.success, sequence })
  })

// The temporary file's random part comes from Effect's `Random`, so a seeded one replays it (two
// savers drawing the same part collide on `wx`: an Io error, never a wrong record).
const writeTemp = Effect.fnUntraced(
  function*(fs: FileSystem, writerId: string, dir: string, sequence: number, body: string) {
    const random = (yield* Random.nextIntBetween(0, 2 ** 48 - 1)).toString(16).padStart(12, "0")
    const temp = path.join(dir, `.tmp-${String(sequence).padStart(20, "0")}-${random}`)
    return yield* Effect.acquireUseRelease(
      io(writerId, `create ${temp}`, () => fs.open(temp, "wx")),
      (handle) =>
        Effect.andThen(
          io(writerId, `write ${temp}`, () => handle.writeFile(body, "utf8")),
          io(writerId, `fsync ${temp}`, () => handle.sync())
        ),
      (handle) => closeQuietly(handle)
    ).pipe(Effect.as(temp))
  }
)

// link(2) fails with EEXIST instead of replacing: only one saver can create a given sequence.
// ENOENT: the winner of this sequence (or a later one) pruned our temporary file first, which is a
// lost race too; when no such record exists it is a real I/O failure.
const linkNoClobber = (
  fs: FileSystem,
  writerId: string,
  dir: string,
  sequence: number,
  temp: string
): Effect.Effect<boolean, StoreFailure> => {
  const target = path.join(dir, fileName(sequence))
  const ioFailure = (cause: unknown) => failure({ reason: "Io", writerId, detail: `link ${target}`, cause })
  return attempt(() => fs.link(temp, target)).pipe(
    Effect.as(true),
    Effect.catch(({ cause }) => {
      if (isCode(cause, "EEXIST")) return Effect.succeed(false)
      if (!isCode(cause, "ENOENT")) return Effect.fail(ioFailure(cause))
      return Effect.flatMap(
        listSequences(fs, writerId, dir),
        (names) => newestSequence(names) >= sequence ? Effect.succeed(false) : Effect.fail(ioFailure(cause))
      )
    }),
    Effect.ensuring(removeQuietly(fs, temp))
  )
}

// A read-only file system (a container's root) holds no entry that is not durable: EROFS is success.
const syncDirectory = (fs: FileSystem, writerId: string, dir: string) =>
  Effect.acquireUseRelease(
    io(writerId, `open ${dir}`, () => fs.open(dir, "r")),
    (handle) =>
      attempt(() => handle.sync()).pipe(
        Effect.catch(({ cause }) =>
          isCode(cause, "EROFS")
            ? Effect.void
            : Effect.fail(failure({ reason: "Io", writerId, detail: `fsync ${dir}`, cause }))
        )
      ),
    (handle) => closeQuietly(handle)
  )

// A new directory's entry is durable only once its parent is fsynced, or a crash can take the
// directory with every record fsynced in it. Which save created a level cannot tell whether it is
// durable (another save, or another process, may have created it and not synced it yet, or failed
// before it did), so no first save trusts that: each syncs the store directory (the writer
// directory's entry) and every ancestor of it up to the root that this store has not synced yet
// (`synced`, filled only after a sync succeeded: a synced entry stays durable).
const syncParents = Effect.fnUntraced(function*(
  fs: FileSystem,
  writerId: string,
  directory: string,
  synced: Set<string>
) {
  const store = path.resolve(directory)
  yield* syncDirectory(fs, writerId, store)
  for (let level = store; level !== path.dirname(level); level = path.dirname(level)) {
    const parent = path.dirname(level)
    if (synced.has(parent)) continue
    yield* syncDirectory(fs, writerId, parent)
    synced.add(parent)
  }
})

// Keeps the newest two records; removes temporaries of sequences that can no longer win.
const prune = Effect.fnUntraced(function*(fs: FileSystem, writerId: string, dir: string, sequence: number) {
  const names = yield* listSequences(fs, writerId, dir)
  const stale = names.filter((name) => {
    const n = Number(recordFile.exec(name)?.[1] ?? tempFile.exec(name)?.[1] ?? Number.NaN)
    return recordFile.test(name) ? n < sequence - 1 : n <= sequence
  })
  yield* Effect.forEach(
    stale,
    (name) => io(writerId, `remove ${name}`, () => fs.rm(path.join(dir, name), { force: true })),
    {
      discard: true
    }
  )
})

// A saver that paused after reading can link into a slot that a later saver's prune freed; it
// did not win. Only a prune after a link at least two numbers higher frees a slot, and the newest
// entry is never removed, so a newest number below `sequence + 2` proves the slot was never used:
// the link won, and an entry at `sequence + 1` was built on it (a claim that took this record over
// before the saver looked). Two or more numbers higher is answered as lost (the safe side: the
// record may have been taken over, but a writer told it lost only stops).
const linkedFirst = (fs: FileSystem, writerId: string, dir: string, sequence: number) =>
  Effect.map(listSequences(fs, writerId, dir), (names): boolean => newestSequence(names) <= sequence + 1)

// Writes `stored` as number `sequence`: false when another saver created that number first.
const writeEntry = Effect.fnUntraced(function*(
  fs: FileSystem,
  writerId: string,
  dir: string,
  sequence: number,
  stored: Envelope.Stored
) {
  const temp = yield* writeTemp(fs, writerId, dir, sequence, Envelope.encodeEnvelope(writerId, sequence, stored))
  const linked = yield* linkNoClobber(fs, writerId, dir, sequence, temp)
  if (linked) yield* syncDirectory(fs, writerId, dir)
  return linked
})

// Another saver's entry came first: the save (or one try of a claim) lost; `actualId` names the winner.
class Lost extends Data.TaggedError("Lost")<{ readonly fields: Fields }> {}

/** What the store's operations share. */
interface Store<R extends { readonly id: string }, C, E> {
  readonly directory: string
  readonly options: Options<R, C, E>
  readonly fs: FileSystem
  /** The ancestors of the store directory this store has made durable (see `syncParents`). */
  readonly synced: Set<string>
}

// The writer's directory and its latest entry (the directory made first: a first entry goes in it).
const latestOf = Effect.fnUntraced(function*<R extends { readonly id: string }, C, E>(
  store: Store<R, C, E>,
  writerId: string
) {
  const dir = yield* writerDirectory(store.directory, writerId)
  yield* io(writerId, `create ${dir}`, () => store.fs.mkdir(dir, { recursive: true }))
  return { dir, latest: yield* readLatest(store.fs, store.options.decode, writerId, dir) }
})

// Stores `stored` as the entry after `latest`, or fails with `Lost` naming the entry that won.
const put = Effect.fnUntraced(function*<R extends { readonly id: string }, C, E>(
  store: Store<R, C, E>,
  writerId: string,
  { dir, latest }: { readonly dir: string; readonly latest: Option.Option<Latest<R>> },
  stored: Envelope.Stored
) {
  const { fs, options } = store
  const expectedPreviousId = Option.isSome(latest) ? latest.value.id : undefined
  const sequence = Option.isSome(latest) ? latest.value.sequence + 1 : 1
  if (options.afterRead !== undefined) yield* options.afterRead(writerId, sequence)
  if (sequence === 1) yield* syncParents(fs, writerId, store.directory, store.synced)
  const linked = yield* writeEntry(fs, writerId, dir, sequence, stored)
  if (!linked || !(yield* linkedFirst(fs, writerId, dir, sequence))) {
    // Another saver created this sequence first, or a later one: name the entry that won.
    const winner = yield* readLatest(fs, options.decode, writerId, dir)
    const actualId = Option.isSome(winner) ? winner.value.id : undefined
    return yield* new Lost({ fields: { writerId, expectedPreviousId, actualId } })
  }
  yield* prune(fs, writerId, dir, sequence).pipe(
    // A leftover old file costs disk, not correctness: report it, do not fail the checkpoint.
    Effect.catch((error) => Effect.logWarning("could not prune old checkpoints", options.error(error.fields)))
  )
})

const save = Effect.fnUntraced(function*<R extends { readonly id: string }, C, E>(
  store: Store<R, C, E>,
  writerId: string,
  record: R,
  expectedPreviousId: string | undefined
) {
  const read = yield* latestOf(store, writerId)
  const actualId = Option.isSome(read.latest) ? read.latest.value.id : undefined
  if (actualId !== expectedPreviousId) return yield* new Lost({ fields: { writerId, expectedPreviousId, actualId } })
  yield* put(store, writerId, read, { _tag: "Record", raw: record })
})

// One try of a claim: the latest entry again under a new id (a bare claim when there is none),
// linked as the next number.
const claimOnce = Effect.fnUntraced(function*<R extends { readonly id: string }, C, E>(
  store: Store<R, C, E>,
  writerId: string
) {
  const read = yield* latestOf(store, writerId)
  const current = Option.getOrUndefined(read.latest)
  const id = yield* ids.nextId(current?.id)
  const stored = Envelope.claimOver(current?.stored, id)
  yield* put(store, writerId, read, stored)
  const claimed = Envelope.entryOf(stored, store.options.decode)
  if (Result.isFailure(claimed)) return yield* corrupt(writerId, `the claimed record: ${claimed.failure}`)
  const result: Claimed<R> = { id, record: claimed.success.record }
  return result
})

/**
 * The store in `directory`, on `fs` (the real file system unless a test supplies one).
 *
 * @internal
 */
export const make = <R extends { readonly id: string }, C, E>(
  directory: string,
  options: Options<R, C, E>,
  fs: FileSystem = nodeFileSystem
) => {
  const store: Store<R, C, E> = { directory, options, fs, synced: new Set() }
  const fromStore = (error: StoreFailure | Lost): C | E =>
    error instanceof Lost ? options.conflict(error.fields) : options.error(error.fields)
  return {
    // a load creates nothing: a writer without a directory has no record
    load: (writerId: string): Effect.Effect<Option.Option<R>, E> =>
      Effect.flatMap(writerDirectory(directory, writerId), (dir) => readLatest(fs, options.decode, writerId, dir)).pipe(
        Effect.map(Option.flatMap((entry) => entry.record)),
        Effect.mapError((error) => options.error(error.fields))
      ),
    save: (writerId: string, record: R, expectedPreviousId: string | undefined): Effect.Effect<void, C | E> =>
      Effect.mapError(save(store, writerId, record, expectedPreviousId), fromStore),
    // a lost race reads again, at most `claimAttempts` times
    claim: (writerId: string): Effect.Effect<Claimed<R>, C | E> =>
      claimOnce(store, writerId).pipe(
        Effect.retry({ times: ids.claimAttempts - 1, while: (error) => error instanceof Lost }),
        Effect.mapError(fromStore)
      )
  }
}
