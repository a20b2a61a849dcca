/**
 * How a BigQuery sink creates missing tables: time partitioning and clustering.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as internal from "../internal/bigquery/schema/tableCreateOptions.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { TableSchema } from "./TableSchema.ts"

/**
 * The granularity of time partitions.
 *
 * @category models
 * @since 0.1.0
 */
export type PartitionType = "HOUR" | "DAY" | "MONTH" | "YEAR"

/**
 * Time partitioning: by ingestion time when `field` is absent, else by that TIMESTAMP, DATE or
 * DATETIME column; partitions older than `expiration` are deleted (never, when absent).
 *
 * @category models
 * @since 0.1.0
 */
export interface TimePartitioning {
  readonly type: PartitionType
  readonly field?: string | undefined
  readonly expiration?: Duration.Duration | undefined
}

/**
 * Validated creation options. They apply only when the sink creates a table; existing tables are
 * never changed by them. The schema always comes from the serializer (plus additional fields).
 *
 * @category models
 * @since 0.1.0
 */
export interface TableCreateOptions {
  readonly timePartitioning?: TimePartitioning | undefined
  readonly clustering?: ReadonlyArray<string> | undefined
}

/**
 * The options as written by users: `timePartitioning.expiration` as a `Duration.Input`.
 *
 * @category models
 * @since 0.1.0
 */
export interface TableCreateOptionsInput {
  readonly timePartitioning?:
    | {
      readonly type: PartitionType
      readonly field?: string | undefined
      readonly expiration?: Duration.Input | undefined
    }
    | undefined
  readonly clustering?: ReadonlyArray<string> | undefined
}

/**
 * A plain, unpartitioned, unclustered table.
 *
 * **Example** (A plain table)
 * ```ts
 * import { TableCreateOptions } from "effect-gcp-sinks/BigQuery"
 * Object.keys(TableCreateOptions.defaults).length
 * // => 0
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaults: TableCreateOptions = {}

/**
 * Validates creation options.
 *
 * **Details**
 *
 * `timePartitioning.type` is HOUR, DAY, MONTH or YEAR; `field`, when given, is not blank;
 * `expiration` is at least 1 ms. `clustering` has 1 to 4 non-blank column names, distinct ignoring
 * case. Errors are `SinkConfigError`s under `path` (default `"tableCreateOptions"`).
 *
 * **Example** (Daily partitions, clustered)
 * ```ts
 * import { Effect } from "effect"
 * import { TableCreateOptions } from "effect-gcp-sinks/BigQuery"
 * const options = Effect.runSync(TableCreateOptions.make({
 *   timePartitioning: { type: "DAY", field: "placed", expiration: "90 days" },
 *   clustering: ["customer"]
 * }))
 * Effect.runSync(Effect.flip(TableCreateOptions.make({ clustering: ["a", "b", "c", "d", "e"] }))).message
 * // => "must have 1 to 4 columns, had 5"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  input: TableCreateOptionsInput,
  path = "tableCreateOptions"
): Effect.Effect<TableCreateOptions, SinkConfigError> => internal.make(input, path)

/**
 * Checks the options against the schema of the table to create: the partitioning column is a
 * top-level, non-REPEATED TIMESTAMP, DATE or DATETIME column (a DATE column cannot have HOUR
 * partitions), and each clustering column is a top-level, non-REPEATED column of a clusterable type.
 *
 * **Example** (A missing partitioning column)
 * ```ts
 * import { Effect } from "effect"
 * import { TableCreateOptions, TableSchema } from "effect-gcp-sinks/BigQuery"
 * const schema = { fields: [TableSchema.field({ name: "id", type: "INT64" })] }
 * Effect.runSync(Effect.flip(TableCreateOptions.checkSchema({ timePartitioning: { type: "DAY", field: "day" } }, schema))).message
 * // => "is not a column of the table"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const checkSchema = (
  options: TableCreateOptions,
  schema: TableSchema,
  path = "tableCreateOptions"
): Effect.Effect<void, SinkConfigError> => internal.checkSchema(options, schema, path)

/**
 * The REST `tables.insert` fields of the options: `timePartitioning` (`expirationMs` as a string)
 * and `clustering`.
 *
 * **Example** (Request fields)
 * ```ts
 * import { Duration } from "effect"
 * import { TableCreateOptions } from "effect-gcp-sinks/BigQuery"
 * TableCreateOptions.toRest({ timePartitioning: { type: "DAY", expiration: Duration.days(1) }, clustering: ["a"] })
 * // => { timePartitioning: { type: "DAY", expirationMs: "86400000" }, clustering: { fields: ["a"] } }
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const toRest = (options: TableCreateOptions): {
  readonly timePartitioning?: { readonly type: PartitionType; readonly field?: string; readonly expirationMs?: string }
  readonly clustering?: { readonly fields: ReadonlyArray<string> }
} => {
  const p = options.timePartitioning
  return {
    ...(p === undefined ? {} : {
      timePartitioning: {
        type: p.type,
        ...(p.field === undefined ? {} : { field: p.field }),
        ...(p.expiration === undefined ? {} : { expirationMs: String(Math.floor(Duration.toMillis(p.expiration))) })
      }
    }),
    ...(options.clustering === undefined ? {} : { clustering: { fields: options.clustering } })
  }
}

/**
 * Tells whether creation options request nothing beyond a plain table.
 *
 * **Example** (The defaults)
 * ```ts
 * import { TableCreateOptions } from "effect-gcp-sinks/BigQuery"
 * TableCreateOptions.isPlain(TableCreateOptions.defaults)
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isPlain = (options: TableCreateOptions): boolean =>
  options.timePartitioning === undefined && options.clustering === undefined
