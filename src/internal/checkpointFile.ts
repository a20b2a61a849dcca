/**
 * The file `CheckpointStore`: numbered, versioned records per writer; temporary file, fsync, then a
 * no-clobber link into place, which makes the link itself the compare-and-set.
 *
 * @internal
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { Fields } from "./checkpointMemory.ts"

/** @internal */
export const format = "effect-gcp-sinks/checkpoint"
/** @internal */
export const version = 1

const Envelope = Schema.Struct({
  format: Schema.Literal(format),
  version: Schema.Literal(version),
  writerId: Schema.String,
  sequence: Schema.Int,
  record: Schema.Unknown
})
const decodeEnvelope = Schema.decodeUnknownResult(Schema.fromJsonString(Envelope))

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
export interface ErrorFields {
  readonly reason: "Corrupt" | "Io" | "InvalidWriterId"
  readonly writerId: string
  readonly detail: string
  readonly cause?: unknown
}

/** @internal */
export interface Options<R, C, E> {
  readonly decode: (u: unknown) => Result.Result<R, Schema.SchemaError>
  readonly conflict: (fields: Fields) => C
  readonly error: (fields: ErrorFields) => E
}

interface Latest<R> {
  readonly sequence: number
  readonly record: R
}

// Closing after a successful fsync cannot lose data, and a failed temp removal only leaves a file
// that the next prune removes: both are logged, never raised.
const closeQuietly = (handle: fs.FileHandle): Effect.Effect<void> =>
  Effect.tryPromise(() => handle.close()).pipe(
    Effect.catch((error) => Effect.logDebug("checkpoint file close failed", error))
  )

const removeQuietly = (file: string): Effect.Effect<void> =>
  Effect.tryPromise(() => fs.rm(file, { force: true })).pipe(
    Effect.catch((error) => Effect.logWarning("could not remove a temporary checkpoint file", error))
  )

// A file-system rejection kept whole, so callers can branch on its errno code.
class FsFailure extends Data.TaggedError("FsFailure")<{ readonly cause: unknown }> {}

const attempt = <A>(run: () => Promise<A>): Effect.Effect<A, FsFailure> =>
  Effect.tryPromise({ try: run, catch: (cause) => new FsFailure({ cause }) })

const isCode = (cause: unknown, code: string): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === code

/** @internal */
export const make = <R extends { readonly id: string }, C, E>(directory: string, options: Options<R, C, E>) => {
  const io = <A>(writerId: string, detail: string, run: () => Promise<A>): Effect.Effect<A, E> =>
    Effect.tryPromise({ try: run, catch: (cause) => options.error({ reason: "Io", writerId, detail, cause }) })

  const writerDirectory = (writerId: string): Effect.Effect<string, E> =>
    writerId.length === 0
      ? Effect.fail(options.error({ reason: "InvalidWriterId", writerId, detail: "writerId must not be empty" }))
      : Effect.succeed(path.join(directory, directoryName(writerId)))

  // A writer that never saved has no directory: that is "no record", not an error.
  const listSequences = (writerId: string, dir: string): Effect.Effect<ReadonlyArray<string>, E> =>
    attempt(() => fs.readdir(dir)).pipe(
      Effect.catch(({ cause }) =>
        isCode(cause, "ENOENT")
          ? Effect.succeed([])
          : Effect.fail(options.error({ reason: "Io", writerId, detail: `list ${dir}`, cause }))
      )
    )

  const readLatest = (writerId: string, dir: string): Effect.Effect<Option.Option<Latest<R>>, E> =>
    Effect.gen(function*() {
      const names = yield* listSequences(writerId, dir)
      let sequence = 0
      for (const name of names) {
        const match = recordFile.exec(name)
        if (match?.[1] !== undefined) sequence = Math.max(sequence, Number(match[1]))
      }
      if (sequence === 0) return Option.none()
      const file = path.join(dir, fileName(sequence))
      const text = yield* io(writerId, `read ${file}`, () => fs.readFile(file, "utf8"))
      const envelope = decodeEnvelope(text)
      if (Result.isFailure(envelope)) {
        return yield* Effect.fail(options.error({
          reason: "Corrupt",
          writerId,
          detail: `${file} is not a valid checkpoint (torn or foreign file): ${envelope.failure.message}`
        }))
      }
      const { record: raw, sequence: stored, writerId: storedWriter } = envelope.success
      if (stored !== sequence || storedWriter !== writerId) {
        return yield* Effect.fail(options.error({
          reason: "Corrupt",
          writerId,
          detail: `${file} holds sequence ${stored} of writer '${storedWriter}'`
        }))
      }
      const record = options.decode(raw)
      if (Result.isFailure(record)) {
        return yield* Effect.fail(options.error({
          reason: "Corrupt",
          writerId,
          detail: `${file} holds an invalid record: ${record.failure.message}`
        }))
      }
      return Option.some({ sequence, record: record.success })
    })

  const load = (writerId: string): Effect.Effect<Option.Option<R>, E> =>
    Effect.flatMap(writerDirectory(writerId), (dir) => readLatest(writerId, dir)).pipe(
      Effect.map(Option.map((latest) => latest.record))
    )

  const save = (writerId: string, record: R, expectedPreviousId: string | undefined): Effect.Effect<void, C | E> =>
    Effect.gen(function*() {
      const dir = yield* writerDirectory(writerId)
      yield* io(writerId, `create ${dir}`, () => fs.mkdir(dir, { recursive: true }))
      const latest = yield* readLatest(writerId, dir)
      const actualId = Option.isSome(latest) ? latest.value.record.id : undefined
      if (actualId !== expectedPreviousId) {
        return yield* Effect.fail(options.conflict({ writerId, expectedPreviousId, actualId }))
      }
      const sequence = Option.isSome(latest) ? latest.value.sequence + 1 : 1
      const body = JSON.stringify({ format, version, writerId, sequence, record })
      const temp = yield* writeTemp(writerId, dir, sequence, body)
      const linked = yield* linkNoClobber(writerId, temp, path.join(dir, fileName(sequence)))
      if (!linked) return yield* Effect.fail(options.conflict({ writerId, expectedPreviousId, actualId: undefined }))
      yield* syncDirectory(writerId, dir)
      yield* prune(writerId, dir, sequence)
    })

  const writeTemp = (writerId: string, dir: string, sequence: number, body: string) => {
    const temp = path.join(dir, `.tmp-${String(sequence).padStart(20, "0")}-${crypto.randomBytes(6).toString("hex")}`)
    return Effect.acquireUseRelease(
      io(writerId, `create ${temp}`, () => fs.open(temp, "wx")),
      (handle) =>
        Effect.andThen(
          io(writerId, `write ${temp}`, () => handle.writeFile(body, "utf8")),
          io(writerId, `fsync ${temp}`, () => handle.sync())
        ),
      (handle) => closeQuietly(handle)
    ).pipe(Effect.as(temp))
  }

  // link(2) fails with EEXIST instead of replacing: only one saver can create a given sequence.
  const linkNoClobber = (writerId: string, temp: string, target: string): Effect.Effect<boolean, E> =>
    attempt(() => fs.link(temp, target)).pipe(
      Effect.as(true),
      Effect.catch(({ cause }) =>
        isCode(cause, "EEXIST")
          ? Effect.succeed(false)
          : Effect.fail(options.error({ reason: "Io", writerId, detail: `link ${target}`, cause }))
      ),
      Effect.ensuring(removeQuietly(temp))
    )

  const syncDirectory = (writerId: string, dir: string) =>
    Effect.acquireUseRelease(
      io(writerId, `open ${dir}`, () => fs.open(dir, "r")),
      (handle) => io(writerId, `fsync ${dir}`, () => handle.sync()),
      (handle) => closeQuietly(handle)
    )

  // Keeps the newest two records; removes temporaries of sequences that can no longer win.
  const prune = (writerId: string, dir: string, sequence: number) =>
    Effect.gen(function*() {
      const names = yield* listSequences(writerId, dir)
      const stale = names.filter((name) => {
        const n = Number(recordFile.exec(name)?.[1] ?? tempFile.exec(name)?.[1] ?? Number.NaN)
        return recordFile.test(name) ? n < sequence - 1 : n <= sequence
      })
      yield* Effect.forEach(stale, (name) =>
        io(writerId, `remove ${name}`, () => fs.rm(path.join(dir, name), { force: true })), {
        discard: true
      })
    }).pipe(
      // A leftover old file costs disk, not correctness: report it, do not fail the checkpoint.
      Effect.catch((error) =>
        Effect.logWarning("could not prune old checkpoints", error)
      )
    )

  return { load, save }
}
