/**
 * An Effect `Schema` annotation choosing the BigQuery column type a field is derived as.
 *
 * @since 0.1.0
 */
import type * as Schema from "effect/Schema"
import type { RangeElementType, ScalarType } from "./TableSchema.ts"

/**
 * The column types an annotation can name: every scalar type, `RECORD`, and `RANGE<DATE>`,
 * `RANGE<DATETIME>` or `RANGE<TIMESTAMP>`.
 *
 * @category models
 * @since 0.1.0
 */
export type BigQueryType = ScalarType | "RECORD" | `RANGE<${RangeElementType}>`

/**
 * The annotation key read by `TableSchema.fromSchema`.
 *
 * **Example** (The annotation key)
 * ```ts
 * import { BigQueryType } from "effect-gcp-sinks/BigQuery"
 * BigQueryType.key
 * // => "effect-gcp-sinks/BigQueryType"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export const key = "effect-gcp-sinks/BigQueryType"

/**
 * Annotates a schema with the BigQuery type of the column derived from it.
 *
 * **Details**
 *
 * The annotation must suit the values of the schema, as the encoder takes them: a string schema
 * can be STRING, INT64, NUMERIC, BIGNUMERIC, TIMESTAMP, DATE, TIME, DATETIME, GEOGRAPHY or JSON; an
 * integer `Number` INT64, FLOAT64 or DATE (days); a `BigInt` INT64, NUMERIC, BIGNUMERIC or TIMESTAMP
 * (µs); a `Date` TIMESTAMP or DATE (midnight UTC); a struct RECORD, JSON or RANGE; `Unknown` any
 * type. Anything else makes `TableSchema.fromSchema` fail with a `SinkConfigError`.
 *
 * **Example** (Decimal strings as NUMERIC, WKT as GEOGRAPHY)
 * ```ts
 * import { Schema } from "effect"
 * import { BigQueryType } from "effect-gcp-sinks/BigQuery"
 * const Shop = Schema.Struct({
 *   revenue: Schema.String.pipe(BigQueryType.annotate("NUMERIC")),
 *   location: Schema.String.pipe(BigQueryType.annotate("GEOGRAPHY")),
 *   open: Schema.Struct({ start: Schema.String, end: Schema.String }).pipe(BigQueryType.annotate("RANGE<DATE>"))
 * })
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const annotate = (type: BigQueryType) => <S extends Schema.Top>(self: S): S["Rebuild"] =>
  self.annotate({ [key]: type })
