/**
 * `WriteMethod.fileLoads` options (reference 2.9) decoded with `Schema` into the settings of the
 * file-loads writer, each failure a `SinkConfigError` naming the option as written
 * (`writeMethod.stagingPath`), before any I/O. Options of the other methods are not options here.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { Handler } from "../../../BigQuery/BigQuerySink.ts"
import type * as WriteMethod from "../../../BigQuery/WriteMethod.ts"
import type { RetryPolicy } from "../../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { WithFailureHandler } from "../../../Sink/SinkOptions.ts"
import * as retryPolicy from "../../options/retryPolicy.ts"
import * as O from "../../options/schema.ts"
import { decode as decodeOptions, type SinkOptions } from "../options.ts"
import type { WriteDisposition } from "./plan.ts"

/** A `gs://bucket[/prefix]` staging location, trailing `/` stripped. @internal */
export interface StagingPath {
  readonly bucket: string
  /** Without leading or trailing `/`; empty for the bucket's root. */
  readonly prefix: string
}

/** The decoded options. @internal */
export interface FileLoadsSettings {
  readonly stagingPath: StagingPath
  readonly writeDisposition: WriteDisposition
  readonly tempDataset: string | undefined
  readonly maxStagingFileBytes: number
  readonly stagingFormat: "AVRO"
  readonly poll: RetryPolicy
  readonly reconcile: RetryPolicy
  readonly adminTimeout: Duration.Duration
  readonly perDestinationMetrics: boolean
}

const MiB = 1024 * 1024

/** The defaults of reference 2.9. @internal */
export const defaults = {
  writeDisposition: "WRITE_APPEND",
  maxStagingFileBytes: 16 * MiB,
  stagingFormat: "AVRO",
  // completion polling has no attempt cap: the job's own timeout bounds it
  poll: retryPolicy.backoff({
    initialBackoff: Duration.seconds(1),
    maxBackoff: Duration.seconds(30),
    maxAttempts: Number.MAX_SAFE_INTEGER
  }),
  reconcile: retryPolicy.backoff({
    initialBackoff: Duration.millis(500),
    maxBackoff: Duration.seconds(10),
    maxAttempts: 10
  }),
  adminTimeout: Duration.minutes(1),
  perDestinationMetrics: false
} as const

// bucket names: 3-63 characters (222 with dots), lowercase letters, digits, '-', '_' and '.', starting
// and ending with a letter or digit
const bucketPattern = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/

/** The rule of reference 2.9 a `gs://` string breaks, if any. */
const stagingPathIssue = (input: string, bucket: string, prefix: string): string | undefined => {
  if (!input.replace(/\/+$/, "").startsWith("gs://")) return `must be gs://bucket[/prefix], was ${O.describe(input)}`
  if (!bucketPattern.test(bucket)) {
    return `must be gs://bucket[/prefix] with a valid bucket name, was ${O.describe(input)}`
  }
  return prefix.split("/").some((part) => part.length === 0) && prefix.length > 0
    ? `must not contain empty path segments ('//'), was ${O.describe(input)}`
    : undefined
}

const parseStagingPath = (input: string): StagingPath => {
  const rest = input.replace(/\/+$/, "").slice("gs://".length)
  const slash = rest.indexOf("/")
  return slash === -1 ? { bucket: rest, prefix: "" } : { bucket: rest.slice(0, slash), prefix: rest.slice(slash + 1) }
}

/** Reference 2.9: `gs://bucket[/prefix]`, lowercase scheme, trailing `/` stripped. @internal */
export const StagingPathSchema = Schema.String.annotate({ expected: "gs://bucket[/prefix] (a string)" }).pipe(
  Schema.decodeTo(
    Schema.declare((u: unknown): u is StagingPath => O.isRecord(u) && Predicate.isString(u.bucket)),
    SchemaTransformation.transformEffect({
      decode: (input) => {
        const parsed = parseStagingPath(input)
        const message = stagingPathIssue(input, parsed.bucket, parsed.prefix)
        return message === undefined ? Effect.succeed(parsed) : Effect.fail(O.invalid(message))
      },
      encode: (p: StagingPath) => Effect.succeed(`gs://${p.bucket}${p.prefix.length === 0 ? "" : `/${p.prefix}`}`)
    })
  )
)

/** Files are staged as Avro; PARQUET is named as not supported yet rather than as unknown. */
const StagingFormat = Schema.Unknown.check(
  Schema.makeFilter((format: unknown) => format !== "PARQUET", {
    message: "PARQUET is not supported yet: files are staged as Avro, which loads every BigQuery type exactly"
  })
).pipe(
  Schema.decodeTo(Schema.Literals(["AVRO"]).annotate({ expected: "AVRO" }), SchemaTransformation.passthroughSupertype())
)

/** The schema of `WriteMethod.fileLoads` options. @internal */
export const FileLoadsOptions = Schema.Struct({
  stagingPath: O.requiredValue(StagingPathSchema),
  writeDisposition: O.literals(["WRITE_APPEND", "WRITE_TRUNCATE", "WRITE_TRUNCATE_DATA", "WRITE_EMPTY"]).pipe(
    O.withDefault(defaults.writeDisposition)
  ),
  tempDataset: O.maybe(O.Component),
  maxStagingFileBytes: O.Int({ min: 1 }).pipe(O.withDefault(defaults.maxStagingFileBytes)),
  stagingFormat: StagingFormat.pipe(O.withDefault(defaults.stagingFormat)),
  poll: retryPolicy.schema(defaults.poll),
  reconcile: retryPolicy.schema(defaults.reconcile),
  adminTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(defaults.adminTimeout)),
  perDestinationMetrics: O.Bool.pipe(O.withDefault(defaults.perDestinationMetrics))
})

/** Decodes `WriteMethod.fileLoads` options alone, errors under `path`. @internal */
export const decode = (
  options: WriteMethod.FileLoadsOptions,
  path = "writeMethod"
): Effect.Effect<FileLoadsSettings, SinkConfigError> => O.decode(FileLoadsOptions, path)(options)

const isFileLoads = (u: unknown): u is WriteMethod.FileLoads =>
  O.isRecord(u) && u._tag === "FileLoads" && u.connector === "bigquery"

/**
 * Decodes the options of file loads but their `checkpoint` (decoded by `checkpoint/sink.ts`):
 * `writeMethod` must be `WriteMethod.fileLoads(...)` (its options decoded here), the rest as the
 * other BigQuery methods decode it. `form: "loadsOnce"` (a sink without `checkpoint.every`) accepts
 * every `writeDisposition`; `"checkpointed"` (each checkpoint loads) only `WRITE_APPEND`.
 *
 * @internal
 */
export const decodeSink = Effect.fnUntraced(function*<A, H extends Handler | undefined>(
  options: WithFailureHandler<
    Omit<SinkOptions<A, unknown, unknown>, "writeMethod"> & { readonly writeMethod?: unknown },
    H
  >,
  form: "checkpointed" | "loadsOnce" = "checkpointed"
) {
  const input: unknown = options
  if (!O.isRecord(input)) return yield* O.fail("options", `must be an object, was ${O.describe(input)}`)
  const { checkpoint: _, writeMethod, ...rest } = input
  if (!isFileLoads(writeMethod)) {
    return yield* O.fail(
      "writeMethod",
      `must be WriteMethod.fileLoads({ stagingPath }) from effect-gcp-sinks/BigQuery, was ${O.describe(writeMethod)}`
    )
  }
  const files = yield* decode(writeMethod.options)
  // reference 2.8/2.9: a disposition that replaces or requires an empty table is for one batch load
  // at the end of input; at every checkpoint it would replace the previous checkpoints' rows
  if (form === "checkpointed" && files.writeDisposition !== "WRITE_APPEND") {
    return yield* O.fail(
      "writeMethod.writeDisposition",
      `must be WRITE_APPEND with checkpoints during the input (each checkpoint loads), was ` +
        `${files.writeDisposition}: leave out checkpoint.every for a single load at the end of input`
    )
  }
  const settings = yield* decodeOptions(rest as WithFailureHandler<SinkOptions<A, unknown, unknown>, H>)
  return { settings, files }
})
