/**
 * Extra physical columns computed per record (ingestion time, source partition, ...) and appended
 * to every row a serializer writes.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as internal from "../internal/bigquery/encoding/additionalFields.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { RowSerializer } from "./RowSerializer.ts"
import type { TableSchema } from "./TableSchema.ts"

/**
 * The column types an additional field can have: singular scalars only.
 *
 * @category models
 * @since 0.1.0
 */
export type AdditionalFieldType =
  | "BOOL"
  | "BYTES"
  | "DATE"
  | "DATETIME"
  | "FLOAT64"
  | "GEOGRAPHY"
  | "INT64"
  | "NUMERIC"
  | "BIGNUMERIC"
  | "STRING"
  | "TIME"
  | "TIMESTAMP"
  | "JSON"

/**
 * What a missing provider value means: `"NULLABLE"` writes NULL (the column is NULLABLE);
 * `"REQUIRED"` fails the row (the column is created REQUIRED, but added to an existing table as
 * NULLABLE, since BigQuery cannot add REQUIRED columns).
 *
 * @category models
 * @since 0.1.0
 */
export type NullPolicy = "NULLABLE" | "REQUIRED"

/**
 * One additional column. `provider` runs per record after the serializer (never for skipped
 * records), in declaration order; its value is checked like any value of the column's type
 * (`RowSerializer.fromJson` lists them) and a wrong value or a throw is a routed row failure
 * naming the field.
 *
 * @category models
 * @since 0.1.0
 */
export interface AdditionalField<A> {
  readonly name: string
  readonly type: AdditionalFieldType
  readonly nullPolicy: NullPolicy
  readonly provider: (element: A) => unknown
}

/**
 * A validated, non-empty list of additional fields.
 *
 * @category models
 * @since 0.1.0
 */
export interface AdditionalFields<A> {
  readonly fields: ReadonlyArray<AdditionalField<A>>
}

/**
 * Validates additional fields: at least one; names valid column names (`[A-Za-z_][A-Za-z0-9_]*`)
 * and unique ignoring case; a supported type; a null policy; a provider function.
 *
 * **Example** (The ingestion time)
 * ```ts
 * import { Effect } from "effect"
 * import { AdditionalFields } from "effect-gcp-sinks/BigQuery"
 * const extra = Effect.runSync(AdditionalFields.make([
 *   { name: "ingested_at", type: "TIMESTAMP", nullPolicy: "REQUIRED", provider: () => new Date() }
 * ]))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: <A>(
  fields: ReadonlyArray<AdditionalField<A>>,
  path?: string
) => Effect.Effect<AdditionalFields<A>, SinkConfigError> = internal.make

/**
 * The table schema with the additional columns appended, failing when one collides (ignoring case)
 * with a column of the serializer's schema.
 *
 * **Example** (A collision)
 * ```ts
 * import { Effect } from "effect"
 * import { AdditionalFields, TableSchema } from "effect-gcp-sinks/BigQuery"
 * declare const extra: AdditionalFields.AdditionalFields<unknown> // "ingested_at"
 * const schema = { fields: [TableSchema.field({ name: "INGESTED_AT", type: "TIMESTAMP" })] }
 * Effect.runSync(Effect.flip(AdditionalFields.extendSchema(extra, schema))).message
 * // => "collides with the serializer's column 'INGESTED_AT'"
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const extendSchema: <A>(
  additional: AdditionalFields<A>,
  schema: TableSchema,
  path?: string
) => Effect.Effect<TableSchema, SinkConfigError> = internal.extendSchema

/**
 * A serializer writing the base serializer's rows followed by the additional fields.
 *
 * **Details**
 *
 * Its table schema and descriptor are the base ones with the additional columns appended (field
 * numbers after the base descriptor's highest). Collisions are checked by {@link extendSchema},
 * which a sink runs when it prepares a destination. Skipped and failed base rows pass through; the
 * providers are then not called.
 *
 * **Example** (Stamping rows)
 * ```ts
 * import { AdditionalFields, type RowSerializer } from "effect-gcp-sinks/BigQuery"
 * declare const base: RowSerializer.RowSerializer<{ readonly id: string }>
 * declare const extra: AdditionalFields.AdditionalFields<{ readonly id: string }>
 * const serializer = AdditionalFields.augment(base, extra)
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const augment: <A>(serializer: RowSerializer<A>, additional: AdditionalFields<A>) => RowSerializer<A> =
  internal.augment
