/**
 * The options of `CheckpointStore.gcs`, decoded with `Schema`, and the object name of a writer.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as retryPolicy from "../options/retryPolicy.ts"
import * as O from "../options/schema.ts"
import { directoryName } from "./fileStore.ts"

/** The retry budget of a shared store's calls (GCS, SQL): 8 attempts, backoff 100 ms to 5 s. @internal */
export const storeRetry = retryPolicy.backoff({
  initialBackoff: Duration.millis(100),
  maxBackoff: Duration.seconds(5),
  maxAttempts: 8
})

/** Defaults of `CheckpointStore.gcs`. @internal */
export const defaults = {
  responseTimeout: Duration.seconds(30),
  retry: storeRetry
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
