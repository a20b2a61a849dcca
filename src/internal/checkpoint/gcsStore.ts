/**
 * The Cloud Storage `CheckpointStore`: one object per writer, replaced on each save under a
 * generation-match precondition, which makes the upload itself the compare-and-set.
 *
 * - First save: `ifGenerationMatch: 0` (create only). Later saves: the generation of the record this
 *   store last loaded or saved for the writer, when that record's id is the expected previous id;
 *   otherwise the stored object is read and its record's id compared with the expectation first.
 * - A 412 is a conflict, unless the object now holds this very save (its per-save nonce in the
 *   object's metadata): an attempt whose answer was lost (deadline, reset) that did land.
 * - Every call has a deadline; transient failures (408, 429, 5xx, network) are retried on a
 *   `Schedule`; the rest are `CheckpointStoreError`s, never the driver's exception.
 *
 * @internal
 */
import type { Storage } from "@google-cloud/storage"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import type * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as retrySchedule from "../core/retrySchedule.ts"
import * as retryPolicy from "../options/retryPolicy.ts"
import * as O from "../options/schema.ts"
import { isTransientNetworkError } from "../wire/networkError.ts"
import { decodeEnvelope, directoryName, type ErrorFields, format, version } from "./fileStore.ts"
import type { Fields } from "./memoryStore.ts"

// ---------------------------------------------------------------------------------------------
// Options

/** Defaults of `CheckpointStore.gcs`. @internal */
export const defaults = {
  responseTimeout: Duration.seconds(30),
  retry: retryPolicy.backoff({
    initialBackoff: Duration.millis(100),
    maxBackoff: Duration.seconds(5),
    maxAttempts: 8
  })
} as const

const bucketSegment = /^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$/

const isBucketName = (input: string): boolean => {
  const segments = input.split(".")
  return input.length >= 3 && input.length <= (segments.length > 1 ? 222 : 63) &&
    segments.every((segment) => bucketSegment.test(segment))
}

/** A bucket name as GCS accepts it: 3-63 characters (222 with dots), lower-case letters, digits, `-_.`. @internal */
export const BucketName = Schema.String.annotate({ expected: "a string" }).check(
  Schema.makeFilter(isBucketName, {
    expected: "a bucket name (3-63 characters: lower-case letters, digits, '-', '_', dots between parts, " +
      "starting and ending with a letter or digit)"
  })
)

/**
 * A folder of object names: empty (the bucket's top level) or a path, which gets a trailing `/`;
 * no leading `/`, no control characters.
 *
 * @internal
 */
export const Prefix = Schema.String.annotate({ expected: "a string" }).check(
  Schema.makeFilter((input: string) => !input.startsWith("/"), { rule: "must not start with '/'" }),
  // oxlint-disable-next-line no-control-regex
  Schema.makeFilter((input: string) => !/[\u0000-\u001f\u007f]/.test(input), {
    message: "must not contain control characters"
  }),
  Schema.makeFilter((input: string) => new TextEncoder().encode(input).length <= 512, {
    message: "must be at most 512 bytes"
  })
).pipe(Schema.decodeTo(
  Schema.String,
  SchemaTransformation.transform({
    decode: (input) => input.length === 0 || input.endsWith("/") ? input : `${input}/`,
    encode: (folder) => folder
  })
))

const Options = Schema.Struct({
  bucket: O.requiredValue(BucketName),
  prefix: Prefix.pipe(O.withDefault("")),
  responseTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(defaults.responseTimeout)),
  retry: retryPolicy.schema(defaults.retry)
})

/** @internal */
export interface Settings {
  readonly bucket: string
  readonly prefix: string
  readonly responseTimeout: Duration.Duration
  readonly retry: RetryPolicy
}

/** Decodes the options of `CheckpointStore.gcs`; errors are `SinkConfigError`s naming the option. @internal */
export const settings = (options: unknown): Effect.Effect<Settings, SinkConfigError> => O.decode(Options)(options)

/** The longest object name GCS accepts, in UTF-8 bytes. @internal */
export const maxObjectNameBytes = 1024

/** The object of a writer: `<prefix><writerId escaped as in the file store>.json`. @internal */
export const objectName = (prefixPath: string, writerId: string): string =>
  `${prefixPath}${directoryName(writerId)}.json`

// ---------------------------------------------------------------------------------------------
// Classification of driver failures

/** What a failed call means: `transient` ones are retried. @internal */
export type Verdict = "notFound" | "precondition" | "transient" | "fatal"

const statusOf = (cause: unknown): number | undefined => {
  if (!Predicate.isObject(cause)) return undefined
  if ("code" in cause && Predicate.isNumber(cause.code)) return cause.code
  if ("status" in cause && Predicate.isNumber(cause.status)) return cause.status
  if ("response" in cause && Predicate.isObject(cause.response) && "status" in cause.response) {
    const status = cause.response.status
    return Predicate.isNumber(status) ? status : undefined
  }
  return undefined
}

/**
 * The verdict on a rejection of `@google-cloud/storage`: its `ApiError` carries the HTTP status in
 * `code`; a gaxios network error carries a Node error code (`ECONNRESET`) as a string.
 *
 * @internal
 */
export const classify = (cause: unknown): Verdict => {
  const status = statusOf(cause)
  if (status !== undefined) {
    if (status === 404) return "notFound"
    if (status === 412) return "precondition"
    if (status === 408 || status === 429 || status >= 500) return "transient"
    return "fatal"
  }
  return isTransientNetworkError(cause) ? "transient" : "fatal"
}

// ---------------------------------------------------------------------------------------------
// Driver edge

/** A failed call, classified; turned into the caller's error type in `make`. */
class CallFailure extends Data.TaggedError("CallFailure")<{
  readonly verdict: Verdict
  readonly detail: string
  readonly cause: unknown
}> {}

// A failure of the store's steps, before `make` turns it into the caller's error type.
class StoreFailure extends Data.TaggedError("StoreFailure")<{ readonly fields: ErrorFields }> {}

/** Custom metadata keys of a checkpoint object. @internal */
export const metadataKeys = {
  /** The id of the record inside: for people reading the bucket. */
  checkpointId: "effect-gcp-sinks-checkpoint-id",
  /** Unique per `save` call (not per attempt): tells a landed retry from a competitor. */
  nonce: "effect-gcp-sinks-save-nonce"
} as const

interface Head {
  readonly generation: string
  readonly nonce: string | undefined
}

const headOf = (metadata: unknown): Head | undefined => {
  if (!Predicate.isObject(metadata) || !("generation" in metadata)) return undefined
  const generation = metadata.generation
  if (!Predicate.isString(generation) && !Predicate.isNumber(generation)) return undefined
  const custom = "metadata" in metadata && Predicate.isObject(metadata.metadata) ? metadata.metadata : undefined
  const nonce = custom !== undefined && metadataKeys.nonce in custom ? custom[metadataKeys.nonce] : undefined
  return { generation: String(generation), nonce: Predicate.isString(nonce) ? nonce : undefined }
}

interface Calls {
  readonly head: (writerId: string, name: string) => Effect.Effect<Head, CallFailure>
  readonly read: (writerId: string, name: string, generation: string) => Effect.Effect<Uint8Array, CallFailure>
  readonly write: (
    writerId: string,
    name: string,
    body: string,
    ifGenerationMatch: string,
    custom: Record<string, string>
  ) => Effect.Effect<string, CallFailure>
}

/**
 * One call: its deadline, then transient failures retried on the schedule, which sees each as the
 * `CheckpointStoreError` it would end as (`failed`), never the internal `CallFailure`.
 */
const call = (
  config: Settings,
  schedule: Schedule.Schedule<unknown, unknown>,
  failed: (writerId: string, f: CallFailure) => unknown
) =>
<A>(writerId: string, detail: string, run: () => Promise<A>): Effect.Effect<A, CallFailure> =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new CallFailure({ verdict: classify(cause), detail, cause })
  }).pipe(
    Effect.timeoutOrElse({
      duration: config.responseTimeout,
      orElse: () =>
        Effect.fail(
          new CallFailure({
            verdict: "transient",
            detail,
            cause: `no answer within ${Duration.format(config.responseTimeout)}`
          })
        )
    }),
    Effect.tapError((failure) =>
      failure.verdict === "transient"
        ? Effect.logDebug(`checkpoint store: ${detail} failed, retrying`, failure.cause)
        : Effect.void
    ),
    Effect.retry({
      schedule: retrySchedule.mapInput(schedule, (failure: CallFailure) => failed(writerId, failure)),
      while: (failure) => failure.verdict === "transient"
    })
  )

/** The head in `metadata`, or a fatal `CallFailure` saying `missing`. */
const headIn = (metadata: unknown, missing: string): Effect.Effect<Head, CallFailure> => {
  const head = headOf(metadata)
  return head === undefined
    ? Effect.fail(new CallFailure({ verdict: "fatal", detail: missing, cause: metadata }))
    : Effect.succeed(head)
}

const calls = (
  storage: Storage,
  config: Settings,
  failed: (writerId: string, failure: CallFailure) => unknown
): Calls => {
  const bucket = storage.bucket(config.bucket)
  const run = call(config, retrySchedule.toSchedule(config.retry), failed)
  const where = (name: string) => `gs://${config.bucket}/${name}`
  return {
    head: (writerId, name) =>
      Effect.flatMap(
        run(writerId, `get metadata of ${where(name)}`, () => bucket.file(name).getMetadata()),
        ([metadata]) => headIn(metadata, `metadata of ${where(name)} has no generation`)
      ),
    read: (writerId, name, generation) =>
      Effect.map(
        run(writerId, `read ${where(name)}#${generation}`, () => bucket.file(name, { generation }).download()),
        ([bytes]) => bytes
      ),
    write: (writerId, name, body, ifGenerationMatch, custom) => {
      const file = bucket.file(name)
      return run(writerId, `write ${where(name)} if generation ${ifGenerationMatch}`, () =>
        file.save(body, {
          // A single multipart request: fake-gcs-server ignores preconditions on resumable uploads.
          resumable: false,
          contentType: "application/json",
          metadata: { metadata: custom },
          preconditionOpts: { ifGenerationMatch }
        })).pipe(
          Effect.flatMap(() => headIn(file.metadata, `the upload of ${where(name)} returned no generation`)),
          Effect.map((head) => head.generation)
        )
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The store

/** What this store knows of a writer's object: the record at a generation. */
interface Known {
  readonly id: string
  readonly generation: string
  readonly sequence: number
}

interface Current<R> extends Known {
  readonly nonce: string | undefined
  readonly record: R
}

/** @internal */
export interface Options<R, C, E> {
  readonly decode: (u: unknown) => Result.Result<R, Schema.SchemaError>
  readonly conflict: (fields: Fields) => C
  readonly error: (fields: ErrorFields) => E
}

/** How often a read retries when the object is replaced between its metadata and its contents. */
const readRaces = 5

const nonce = (): string => crypto.randomUUID()

const fail = (fields: ErrorFields) => Effect.fail(new StoreFailure({ fields }))
const io = (writerId: string, failure: CallFailure) =>
  fail({ reason: "Io", writerId, detail: failure.detail, cause: failure.cause })
const corrupt = (writerId: string, detail: string) => fail({ reason: "Corrupt", writerId, detail })

/** The object name of a writer, or `InvalidWriterId`. */
const nameOf = (config: Settings, writerId: string): Effect.Effect<string, StoreFailure> => {
  if (writerId.length === 0) {
    return fail({ reason: "InvalidWriterId", writerId, detail: "writerId must not be empty" })
  }
  const name = objectName(config.prefix, writerId)
  return new TextEncoder().encode(name).length > maxObjectNameBytes
    ? fail({
      reason: "InvalidWriterId",
      writerId,
      detail: `the object name of this writerId is longer than ${maxObjectNameBytes} bytes`
    })
    : Effect.succeed(name)
}

/** A stored object's record, checked against its writer and the caller's record schema. */
const decodeObject = <R extends { readonly id: string }, C, E>(
  config: Settings,
  options: Options<R, C, E>,
  writerId: string,
  name: string,
  head: Head,
  bytes: Uint8Array
) => {
  const where = `gs://${config.bucket}/${name}`
  const envelope = decodeEnvelope(new TextDecoder().decode(bytes))
  if (Result.isFailure(envelope)) {
    return corrupt(
      writerId,
      `${where}#${head.generation} is not a valid checkpoint (foreign or damaged object): ` +
        envelope.failure.message
    )
  }
  const { record: raw, sequence, writerId: storedWriter } = envelope.success
  if (storedWriter !== writerId) {
    return corrupt(writerId, `${where}#${head.generation} holds a checkpoint of writer '${storedWriter}'`)
  }
  const record = options.decode(raw)
  if (Result.isFailure(record)) {
    return corrupt(writerId, `${where}#${head.generation} holds an invalid record: ${record.failure.message}`)
  }
  const current: Current<R> = {
    id: record.success.id,
    generation: head.generation,
    sequence,
    nonce: head.nonce,
    record: record.success
  }
  return Effect.succeed(current)
}

/** The object was replaced between reading its metadata and its contents. */
class Replaced extends Data.TaggedError("Replaced") {}

// The stored record with the generation it was read at. The metadata gives the generation, the
// contents are read at exactly that generation; if the object was replaced in between, that read
// is a 404 and both are read again, at most `readRaces` times.
const readCurrent = <R extends { readonly id: string }, C, E>(
  driver: Calls,
  config: Settings,
  options: Options<R, C, E>
) =>
(writerId: string, name: string): Effect.Effect<Option.Option<Current<R>>, StoreFailure> =>
  Effect.gen(function*() {
    const head = yield* Effect.result(driver.head(writerId, name))
    if (Result.isFailure(head)) {
      if (head.failure.verdict === "notFound") return Option.none()
      return yield* io(writerId, head.failure)
    }
    const bytes = yield* Effect.result(driver.read(writerId, name, head.success.generation))
    if (Result.isFailure(bytes)) {
      if (bytes.failure.verdict === "notFound") return yield* new Replaced()
      return yield* io(writerId, bytes.failure)
    }
    return Option.some(yield* decodeObject(config, options, writerId, name, head.success, bytes.success))
  }).pipe(
    Effect.retry({ times: readRaces - 1, while: (e) => e instanceof Replaced }),
    Effect.catchIf((e): e is Replaced => e instanceof Replaced, () =>
      fail({
        reason: "Io",
        writerId,
        detail: `gs://${config.bucket}/${name} was replaced ${readRaces} times while being read`
      }))
  )

/**
 * What this store knows of each writer's object, read and written in single synchronous steps only
 * (as the memory store's map).
 */
const knownRecords = () => {
  const known = new Map<string, Known>()
  return {
    known,
    remember: (writerId: string, current: Option.Option<Known>): void => {
      if (Option.isSome(current)) {
        const { generation, id, sequence } = current.value
        known.set(writerId, { id, generation, sequence })
      } else known.delete(writerId)
    },
    /** Forgets what this store knew of a writer, unless a concurrent save already replaced it. */
    forget: (writerId: string, stale: Known | undefined): void => {
      if (stale !== undefined && known.get(writerId)?.generation === stale.generation) known.delete(writerId)
    }
  }
}

/** What a save is conditioned on: none (create only), the known record, or the stored one. */
const conditionOf = <R extends Known>(
  records: ReturnType<typeof knownRecords>,
  readStored: (writerId: string, name: string) => Effect.Effect<Option.Option<R>, StoreFailure>
) =>
  Effect.fnUntraced(function*(writerId: string, name: string, expected: string | undefined) {
    if (expected === undefined) return Result.succeed<Known | undefined>(undefined)
    const cached = records.known.get(writerId)
    if (cached?.id === expected) return Result.succeed<Known | undefined>(cached)
    const current = yield* readStored(writerId, name)
    records.remember(writerId, current)
    const actualId = Option.isSome(current) ? current.value.id : undefined
    return actualId === expected && Option.isSome(current)
      ? Result.succeed<Known | undefined>(current.value)
      : Result.fail<Fields>({ writerId, expectedPreviousId: expected, actualId })
  })

/** What the store's operations share: the calls, the settings, the caller's options, the known records. */
interface StoreContext<R extends { readonly id: string }, C, E> {
  readonly driver: Calls
  readonly config: Settings
  readonly options: Options<R, C, E>
  readonly records: ReturnType<typeof knownRecords>
  readonly readStored: (writerId: string, name: string) => Effect.Effect<Option.Option<Current<R>>, StoreFailure>
}

/**
 * After a 412 on save: another writer replaced the object, or an attempt of this save landed without
 * its answer (the stored nonce is this save's), which is a success.
 */
const settlePrecondition = <R extends { readonly id: string }, C, E>(
  context: StoreContext<R, C, E>,
  save: {
    readonly writerId: string
    readonly name: string
    readonly nonce: string
    readonly base: Known | undefined
    readonly expectedPreviousId: string | undefined
  }
): Effect.Effect<void, C | StoreFailure> =>
  Effect.flatMap(context.readStored(save.writerId, save.name), (current) => {
    if (Option.isSome(current) && current.value.nonce === save.nonce) {
      context.records.remember(save.writerId, current)
      return Effect.void
    }
    context.records.forget(save.writerId, save.base)
    return Effect.fail(context.options.conflict({
      writerId: save.writerId,
      expectedPreviousId: save.expectedPreviousId,
      actualId: Option.isSome(current) ? current.value.id : undefined
    }))
  })

/** Saves a record conditioned on the stored generation, with a sequence one past the base's. */
const saveWith = <R extends { readonly id: string }, C, E>(context: StoreContext<R, C, E>) => {
  const { config, driver, options, records } = context
  const baseOf = conditionOf(records, context.readStored)
  return Effect.fn("CheckpointStore.gcs.save")(
    function*(writerId: string, record: R, expectedPreviousId: string | undefined) {
      yield* Effect.annotateCurrentSpan("checkpoint.writerId", writerId)
      const name = yield* nameOf(config, writerId)
      const base = yield* baseOf(writerId, name, expectedPreviousId)
      if (Result.isFailure(base)) return yield* Effect.fail(options.conflict(base.failure))
      const sequence = (base.success?.sequence ?? 0) + 1
      const body = JSON.stringify({ format, version, writerId, sequence, record })
      const saveNonce = nonce()
      const written = yield* Effect.result(
        driver.write(writerId, name, body, base.success?.generation ?? "0", {
          [metadataKeys.checkpointId]: record.id,
          [metadataKeys.nonce]: saveNonce
        })
      )
      if (Result.isSuccess(written)) {
        records.known.set(writerId, { id: record.id, generation: written.success, sequence })
        return
      }
      if (written.failure.verdict !== "precondition") return yield* io(writerId, written.failure)
      return yield* settlePrecondition(context, {
        writerId,
        name,
        nonce: saveNonce,
        base: base.success,
        expectedPreviousId
      })
    },
    Effect.mapError((error) => (error instanceof StoreFailure ? options.error(error.fields) : error))
  )
}

/** @internal */
export const make = <R extends { readonly id: string }, C, E>(
  storage: Storage,
  config: Settings,
  options: Options<R, C, E>
) => {
  // the schedule's input: the error a call would end as (`io`), so a caller's schedule reads what it is promised
  const driver = calls(
    storage,
    config,
    (writerId, failure) => options.error({ reason: "Io", writerId, detail: failure.detail, cause: failure.cause })
  )
  const records = knownRecords()
  const readStored = readCurrent(driver, config, options)
  const load = Effect.fn("CheckpointStore.gcs.load")(
    function*(writerId: string) {
      yield* Effect.annotateCurrentSpan("checkpoint.writerId", writerId)
      const name = yield* nameOf(config, writerId)
      const current = yield* readStored(writerId, name)
      records.remember(writerId, current)
      return Option.map(current, (c) => c.record)
    },
    Effect.mapError((error: StoreFailure): E => options.error(error.fields))
  )
  return { load, save: saveWith({ driver, config, options, records, readStored }) }
}
