/**
 * The Cloud Storage calls of `CheckpointStore.gcs` (the driver edge): metadata, a read at a
 * generation, a multipart upload under `ifGenerationMatch`; each with its deadline, transient
 * failures (408, 429, 5xx, network) retried on the store's schedule, and classified.
 *
 * @internal
 */
import type { Storage } from "@google-cloud/storage"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Schedule from "effect/Schedule"
import * as retrySchedule from "../core/retrySchedule.ts"
import { isTransientNetworkError } from "../wire/networkError.ts"
import type { Settings } from "./gcsOptions.ts"

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

/** A failed call, classified; turned into the caller's error type by the store. @internal */
export class CallFailure extends Data.TaggedError("CallFailure")<{
  readonly verdict: Verdict
  readonly detail: string
  readonly cause: unknown
}> {}

/** Custom metadata keys of a checkpoint object. @internal */
export const metadataKeys = {
  /** The id of the record inside: for people reading the bucket. */
  checkpointId: "effect-gcp-sinks-checkpoint-id",
  /** Unique per `save` call (not per attempt): tells a landed retry from a competitor. */
  nonce: "effect-gcp-sinks-save-nonce"
} as const

/** What a checkpoint object's metadata says: its generation and the nonce of the save that wrote it. @internal */
export interface Head {
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

/** The calls the store makes, each with its deadline and retries. @internal */
export interface Calls {
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

/** The calls on `config.bucket`; `failed` is what the retry schedule sees for a failure. @internal */
export const calls = (
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
