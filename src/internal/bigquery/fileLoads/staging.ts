/**
 * Staging of file loads (reference 2.8): one open Avro container file per destination, streamed
 * through `avsc`'s block encoder (deflate) into a Cloud Storage resumable upload, so the heap holds
 * at most a block and the upload's buffer per open destination, never the rows of a file.
 *
 * Object names are `<prefix>/<writer>/<project.dataset.table>/<run>-<seq>.avro`: `run` is random per
 * writer instance (32 bits from Effect's `Random`, as the checkpoint ids and run writer ids are, so a
 * seeded `Random` decides it), `seq` grows for its lifetime, so names never repeat across checkpoints
 * or restarts.
 * A file is closed once the rows appended to it reach `maxStagingFileBytes` (their serialized sizes,
 * uncompressed, so the deflated file is smaller) and at every `closeAll` (each checkpoint);
 * each closed file is one committable. A failed upload fails the write (`FileLoadFailed` `stage`), as
 * does one that takes no bytes, or leaves its final request unanswered, for `uploadTimeout`.
 *
 * @internal
 */
import type { Storage } from "@google-cloud/storage"
import avro from "avsc"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import type { Writable } from "node:stream"
import { BigQueryError, FileLoadFailed } from "../../../BigQuery/BigQueryError.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import { hotSpan } from "../../core/hotSpan.ts"
import type { StagingPath } from "./options.ts"
import { type Committable, idPart } from "./plan.ts"

/** The Avro container codec: deflate (see HANDOFF / README: zstandard is not read by the emulator). @internal */
export const codec = "deflate"

/** @internal */
export interface StagingOptions {
  readonly storage: Storage
  readonly stagingPath: StagingPath
  readonly writerId: string
  readonly maxStagingFileBytes: number
  /** How long an upload may take no bytes, or leave its final request unanswered (`adminTimeout`). */
  readonly uploadTimeout: Duration.Duration
}

interface OpenFile {
  readonly destination: string
  readonly bucket: string
  readonly name: string
  readonly encoder: avro.streams.BlockEncoder
  readonly upload: Writable
  /** Bytes the encoder emitted (compressed): the committable's `byteCount`. */
  bytes: number
  /** The appended rows' sizes as the caller measured them (uncompressed): what rolling counts. */
  rowBytes: number
  rows: number
  /** Set by the upload's `finish`. */
  finished: boolean
  /** The first `error` of the encoder or the upload. */
  failure: { readonly cause: unknown } | undefined
}

/**
 * Resumes when `file` is settled: the upload finished, or either stream failed; or, with `drain`,
 * when the encoder drained. Listeners are removed when it resumes or is interrupted.
 */
const settled = (file: OpenFile, drain: boolean): Effect.Effect<void, { readonly cause: unknown }> =>
  Effect.callback<void, { readonly cause: unknown }>((resume) => {
    // the returned effect runs on interruption only: resuming removes the listeners itself, or every
    // wait for a drain would leave four behind on streams that live as long as the file
    const remove = () => {
      file.upload.off("finish", onFinish)
      file.upload.off("error", onError)
      file.encoder.off("error", onError)
      file.encoder.off("drain", onDrain)
    }
    const done = (result: Effect.Effect<void, { readonly cause: unknown }>) => {
      remove()
      resume(result)
    }
    const check = () => {
      if (file.failure !== undefined) done(Effect.fail(file.failure))
      else if (file.finished || (drain && !file.encoder.writableNeedDrain)) done(Effect.void)
    }
    const onDrain = () => done(Effect.void)
    const onError = () => check()
    const onFinish = () => check()
    file.upload.on("finish", onFinish)
    file.upload.on("error", onError)
    file.encoder.on("error", onError)
    if (drain) file.encoder.on("drain", onDrain)
    check()
    return Effect.sync(remove)
  })

/**
 * {@link settled} within `limit`: an upload that stops taking bytes, or never answers its final
 * request, fails the write instead of hanging it.
 */
const settledWithin = (
  file: OpenFile,
  drain: boolean,
  limit: Duration.Duration
): Effect.Effect<void, { readonly cause: unknown }> =>
  Effect.timeoutOrElse(settled(file, drain), {
    duration: limit,
    orElse: () =>
      Effect.fail({
        cause: new Error(`${drain ? "took no bytes" : "did not finish"} within ${Duration.format(limit)}`)
      })
  })

/** The open files of one writer. @internal */
export interface Staging {
  /**
   * Appends one Avro record to `destination`'s open file (opened with `schema` when none is); `size` is
   * the row's size as the caller measured it (the serialized row), counted toward `maxStagingFileBytes`.
   * `true` when the row filled its file, which is then closed (its upload finished).
   */
  readonly append: (
    destination: TableDestination,
    schema: avro.Type,
    record: unknown,
    size: number
  ) => Effect.Effect<boolean, BigQueryError>
  /** Closes every open file (their uploads finished); their committables wait for the next `closeAll`. */
  readonly closeOpen: Effect.Effect<void, BigQueryError>
  /** Closes every open file; the committables of every file closed since the last call, by URI. */
  readonly closeAll: Effect.Effect<ReadonlyArray<Committable>, BigQueryError>
  /** The object names staged so far and not yet handed out (for tests). */
  readonly openCount: () => number
}

const stageError = (destination: string, detail: string, cause: unknown) =>
  new BigQueryError({ reason: new FileLoadFailed({ step: "stage", destination, detail, cause }) })

const causeText = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** A file's upload failed: the write fails naming the object. */
const uploadFailed = (destination: string, file: OpenFile, cause: unknown) =>
  stageError(destination, `gs://${file.bucket}/${file.name}: upload failed: ${causeText(cause)}`, cause)

/** A staging file streamed into a resumable upload of `gs://bucket/name`. */
const openFile = (storage: Storage, bucket: string, name: string, path: string, schema: avro.Type): OpenFile => {
  const upload = storage.bucket(bucket).file(name).createWriteStream({
    resumable: true,
    contentType: "avro/binary",
    metadata: { contentType: "avro/binary" }
  })
  const encoder = new avro.streams.BlockEncoder(schema, { codec })
  const file: OpenFile = {
    destination: path,
    bucket,
    name,
    encoder,
    upload,
    bytes: 0,
    rowBytes: 0,
    rows: 0,
    finished: false,
    failure: undefined
  }
  // these listeners live as long as the streams: every error is kept and surfaces at the next append or close
  upload.on("finish", () => void (file.finished = true))
  upload.on("error", (cause: unknown) => void (file.failure ??= { cause }))
  encoder.on("error", (cause: unknown) => void (file.failure ??= { cause }))
  encoder.on("data", (chunk: Buffer) => void (file.bytes += chunk.length))
  encoder.pipe(upload)
  return file
}

/** Ends a file's encoder and waits for its upload: its committable. */
const close = (options: StagingOptions, file: OpenFile): Effect.Effect<Committable, BigQueryError> =>
  Effect.sync(() => file.encoder.end()).pipe(
    Effect.andThen(settledWithin(file, false, options.uploadTimeout)),
    Effect.mapError(({ cause }) => uploadFailed(file.destination, file, cause)),
    Effect.map((): Committable => ({
      writerId: options.writerId,
      destination: file.destination,
      uri: `gs://${file.bucket}/${file.name}`,
      byteCount: file.bytes,
      rowCount: file.rows,
      format: "AVRO"
    })),
    hotSpan("FileLoads.closeStagingFile", { "gcs.object": file.name })
  )

/** Encodes `record` into `file`; a bounded buffer per open file: waits for the upload to take what is queued. */
const encode = Effect.fnUntraced(function*(
  file: OpenFile,
  record: unknown,
  size: number,
  uploadTimeout: Duration.Duration
) {
  const buffered = yield* Effect.try({
    try: () => file.encoder.write(record),
    catch: (cause) => stageError(file.destination, `Avro encoding failed: ${causeText(cause)}`, cause)
  })
  file.rows++
  file.rowBytes += size
  if (!buffered) {
    yield* settledWithin(file, true, uploadTimeout).pipe(
      Effect.mapError(({ cause }) => uploadFailed(file.destination, file, cause))
    )
  }
})

/** Destroys the streams of every open file (their uploads are abandoned, never finished). */
const abandonAll = (open: Map<string, OpenFile>): void => {
  for (const file of open.values()) {
    file.encoder.destroy()
    file.upload.destroy()
  }
  open.clear()
}

/** The staging of one writer; open files are abandoned (uploads destroyed) when the scope closes. @internal */
export const make = Effect.fnUntraced(function*(options: StagingOptions) {
  const run = (yield* Random.nextIntBetween(0, 0xffffffff)).toString(16).padStart(8, "0")
  let seq = 0
  const open = new Map<string, OpenFile>()
  const closed: Array<Committable> = []
  const { bucket, prefix } = options.stagingPath
  const base = `${prefix.length === 0 ? "" : `${prefix}/`}${idPart(options.writerId)}`

  yield* Effect.addFinalizer(() => Effect.sync(() => abandonAll(open)))

  const append = Effect.fnUntraced(
    function*(destination: TableDestination, schema: avro.Type, record: unknown, size: number) {
      const path = destination.toString()
      let file = open.get(path)
      if (file === undefined) {
        file = openFile(
          options.storage,
          bucket,
          `${base}/${path}/${run}-${String(seq++).padStart(8, "0")}.avro`,
          path,
          schema
        )
        open.set(path, file)
      }
      const current = file
      if (current.failure !== undefined) {
        open.delete(path)
        return yield* uploadFailed(path, current, current.failure.cause)
      }
      yield* encode(current, record, size, options.uploadTimeout)
      // the encoder emits whole (deflated) blocks, later: roll on the rows' own sizes, an upper bound
      if (current.rowBytes < options.maxStagingFileBytes) return false
      open.delete(path)
      closed.push(yield* close(options, current))
      return true
    }
  )

  const closeOpen = Effect.gen(function*() {
    const files = [...open.values()]
    open.clear()
    const done = yield* Effect.forEach(files, (file) => close(options, file), { concurrency: "unbounded" })
    closed.push(...done)
  })

  const closeAll = Effect.map(closeOpen, () => {
    const all = closed.toSorted((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0))
    closed.length = 0
    return all
  })

  return { append, closeOpen, closeAll, openCount: () => open.size }
})
