/**
 * Which connector-driven changes a sink may make to a destination table's schema.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import { SchemaUpdateOptionsSchema } from "../internal/bigquery/schema/schemaUpdateOptions.ts"
import * as O from "../internal/options/schema.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"

/**
 * Options gating connector-driven schema updates, both off by default.
 *
 * **Details**
 *
 * When the serializer's schema evolves past the table's, a sink may update the table itself with
 * {@link TableSchema.union}: existing columns are never dropped, reordered or retyped.
 *
 * - `allowNewFields`: serializer columns missing from the table are appended, always as NULLABLE
 *   (BigQuery cannot add REQUIRED columns to an existing table).
 * - `allowFieldRelaxation`: a REQUIRED table column becomes NULLABLE when the serializer does not
 *   declare it REQUIRED. REPEATED columns never change.
 *
 * With both off the sink never modifies a table schema; changes made elsewhere (DDL) are still
 * picked up. Updates are opt-in because a column can never be dropped again: one malformed record
 * with an unexpected field could otherwise change a table for good. Enabling them needs the
 * `bigquery.tables.get` and `bigquery.tables.update` permissions.
 *
 * @category models
 * @since 0.1.0
 */
export interface SchemaUpdateOptions {
  readonly allowNewFields: boolean
  readonly allowFieldRelaxation: boolean
}

/**
 * Updates disabled: the sink never changes a table schema.
 *
 * **Example** (The defaults)
 * ```ts
 * import { SchemaUpdateOptions } from "effect-gcp-sinks/BigQuery"
 * SchemaUpdateOptions.defaults
 * // => { allowNewFields: false, allowFieldRelaxation: false }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaults: SchemaUpdateOptions = { allowNewFields: false, allowFieldRelaxation: false }

/**
 * Validates options read from untyped input or `Config`; a missing flag is off.
 *
 * **Example** (Allowing new columns)
 * ```ts
 * import { Effect } from "effect"
 * import { SchemaUpdateOptions } from "effect-gcp-sinks/BigQuery"
 * Effect.runSync(SchemaUpdateOptions.make({ allowNewFields: true }))
 * // => { allowNewFields: true, allowFieldRelaxation: false }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: { readonly allowNewFields?: boolean | undefined; readonly allowFieldRelaxation?: boolean | undefined },
  path = "schemaUpdateOptions"
): Effect.Effect<SchemaUpdateOptions, SinkConfigError> => O.decode(SchemaUpdateOptionsSchema, path)(options)

/**
 * Whether any connector-driven schema update is enabled.
 *
 * **Example** (Checking the defaults)
 * ```ts
 * import { SchemaUpdateOptions } from "effect-gcp-sinks/BigQuery"
 * SchemaUpdateOptions.isEnabled(SchemaUpdateOptions.defaults)
 * // => false
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isEnabled = (options: SchemaUpdateOptions): boolean =>
  options.allowNewFields || options.allowFieldRelaxation
