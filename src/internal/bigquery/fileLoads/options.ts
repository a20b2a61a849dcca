/**
 * `WriteMethod.fileLoads` options (reference 2.9) decoded with `Schema` into the settings of the
 * file-loads writer, each failure a `SinkConfigError` naming the option as written
 * (`writeMethod.stagingPath`), before any I/O. Options of the other methods are not options here.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Handler } from "../../../BigQuery/BigQuerySink.ts"
import type * as WriteMethod from "../../../BigQuery/WriteMethod.ts"
import type { RetryPolicy } from "../../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, WithFailureHandler } from "../../../Sink/SinkOptions.ts"
import * as retryPolicy from "../../options/retryPolicy.ts"
import * as O from "../../options/schema.ts"
import { decode as decodeOptions, type Settings, type SinkOptions } from "../options.ts"
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

/** Reference 2.9: `gs://bucket[/prefix]`, lowercase scheme, trailing `/` stripped. @internal */
export const stagingPath: O.Rule<StagingPath> = (input) => {
  if (!O.isString(input)) return Result.fail(`must be gs://bucket[/prefix] (a string), was ${O.describe(input)}`)
  const path = input.replace(/\/+$/, "")
  if (!path.startsWith("gs://")) return Result.fail(`must be gs://bucket[/prefix], was ${O.describe(input)}`)
  const rest = path.slice("gs://".length)
  const slash = rest.indexOf("/")
  const bucket = slash === -1 ? rest : rest.slice(0, slash)
  const prefix = slash === -1 ? "" : rest.slice(slash + 1)
  if (!bucketPattern.test(bucket)) {
    return Result.fail(`must be gs://bucket[/prefix] with a valid bucket name, was ${O.describe(input)}`)
  }
  if (prefix.split("/").some((part) => part.length === 0) && prefix.length > 0) {
    return Result.fail(`must not contain empty path segments ('//'), was ${O.describe(input)}`)
  }
  return Result.succeed({ bucket, prefix })
}

const isStagingPath = (u: unknown): u is StagingPath => O.isRecord(u) && O.isString(u.bucket)

const stagingFormat: O.Rule<"AVRO"> = (input) =>
  input === "PARQUET"
    ? Result.fail(
      "PARQUET is not supported yet: files are staged as Avro (see docs/adr/0023-file-loads.md)"
    )
    : O.literal(["AVRO"])(input)

/** The schema of `WriteMethod.fileLoads` options. @internal */
export const FileLoadsOptions = Schema.Struct({
  stagingPath: O.field(O.leaf(isStagingPath, stagingPath)),
  writeDisposition: O.optional(
    (u): u is WriteDisposition => O.isString(u),
    O.literal(["WRITE_APPEND", "WRITE_TRUNCATE", "WRITE_TRUNCATE_DATA", "WRITE_EMPTY"]),
    defaults.writeDisposition
  ),
  tempDataset: O.maybe(O.isString, O.component),
  maxStagingFileBytes: O.optional(O.isNumber, O.integer({ min: 1 }), defaults.maxStagingFileBytes),
  stagingFormat: O.optional((u): u is "AVRO" => u === "AVRO", stagingFormat, defaults.stagingFormat),
  poll: O.field(retryPolicy.schema(defaults.poll)),
  reconcile: O.field(retryPolicy.schema(defaults.reconcile)),
  adminTimeout: O.optional(O.isDuration, O.duration("atLeastOneMilli"), defaults.adminTimeout),
  perDestinationMetrics: O.optional(O.isBoolean, O.boolean, defaults.perDestinationMetrics)
})

/** Decodes `WriteMethod.fileLoads` options alone, errors under `path`. @internal */
export const decode = (
  options: WriteMethod.FileLoadsOptions,
  path = "writeMethod"
): Effect.Effect<FileLoadsSettings, SinkConfigError> => O.decode(FileLoadsOptions, path)(options)

const isFileLoads = (u: unknown): u is WriteMethod.FileLoads =>
  O.isRecord(u) && u._tag === "FileLoads" && u.connector === "bigquery"

/**
 * Decodes the options of `BigQuerySink.fileLoads` (`form: "checkpointed"`) or of `BigQuerySink.make`
 * with file loads (`form: "plain"`): `writeMethod` must be `WriteMethod.fileLoads(...)` (its options
 * decoded here); `checkpoint` is decoded by the checkpointed sink form and refused by the plain one
 * (`checkpoint`: use `BigQuerySink.fileLoads`); the rest as the other BigQuery sinks decode it.
 *
 * @internal
 */
export const decodeSink = <A, H extends Handler | undefined>(
  options: WithFailureHandler<
    Omit<SinkOptions<A, unknown, unknown>, "writeMethod"> & { readonly writeMethod?: unknown },
    H
  >,
  form: "checkpointed" | "plain" = "checkpointed"
): Effect.Effect<
  { readonly settings: Settings<A, HandlerError<H>, HandlerContext<H>>; readonly files: FileLoadsSettings },
  SinkConfigError
> =>
  Effect.gen(function*() {
    const input: unknown = options
    if (!O.isRecord(input)) return yield* O.fail("options", `must be an object, was ${O.describe(input)}`)
    const { checkpoint, writeMethod, ...rest } = input
    if (form === "plain" && checkpoint !== undefined) {
      return yield* O.fail(
        "checkpoint",
        "is not an option of BigQuerySink.make: use BigQuerySink.fileLoads({ ..., checkpoint }) for checkpointed file loads"
      )
    }
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
        `must be WRITE_APPEND with checkpoints (each checkpoint loads), was ${files.writeDisposition}: ` +
          "use BigQuerySink.make for a single load at the end of input"
      )
    }
    const settings = yield* decodeOptions(rest as WithFailureHandler<SinkOptions<A, unknown, unknown>, H>)
    return { settings, files }
  })
