/**
 * BigQuery table schemas as data: every column type and mode, conversions to and from the REST
 * JSON form and the Storage Write API `TableSchema`, the proto2 descriptor rows are written with,
 * derivation from an Effect `Schema`, and the union of a live and a desired schema under
 * {@link SchemaUpdateOptions}.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as descriptor from "../internal/bigquery/encoding/descriptor.ts"
import * as derive from "../internal/bigquery/encoding/fromSchema.ts"
import * as model from "../internal/bigquery/schema/model.ts"
import * as rest from "../internal/bigquery/schema/rest.ts"
import * as schemaUnion from "../internal/bigquery/schema/union.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { SchemaUpdateOptions } from "./SchemaUpdateOptions.ts"

/**
 * The column types whose values are single scalars.
 *
 * @category models
 * @since 0.1.0
 */
export type ScalarType =
  | "STRING"
  | "BYTES"
  | "INT64"
  | "FLOAT64"
  | "NUMERIC"
  | "BIGNUMERIC"
  | "BOOL"
  | "TIMESTAMP"
  | "DATE"
  | "TIME"
  | "DATETIME"
  | "GEOGRAPHY"
  | "JSON"

/**
 * The element types a RANGE column can have.
 *
 * @category models
 * @since 0.1.0
 */
export type RangeElementType = "DATE" | "DATETIME" | "TIMESTAMP"

/**
 * Every column type, in GoogleSQL spelling (`INT64`, not the legacy `INTEGER`).
 *
 * @category models
 * @since 0.1.0
 */
export type FieldType = ScalarType | "RECORD" | "RANGE"

/**
 * A column's mode. REPEATED columns are arrays, which BigQuery stores as empty rather than NULL.
 *
 * @category models
 * @since 0.1.0
 */
export type Mode = "NULLABLE" | "REQUIRED" | "REPEATED"

/**
 * Attributes every column may carry. `maxLength` applies to STRING (characters) and BYTES (bytes);
 * `precision` and `scale` to NUMERIC and BIGNUMERIC (`NUMERIC(P, S)`).
 *
 * @category models
 * @since 0.1.0
 */
export interface FieldAttributes {
  readonly description?: string | undefined
  readonly defaultValueExpression?: string | undefined
  readonly maxLength?: number | undefined
  readonly precision?: number | undefined
  readonly scale?: number | undefined
}

/**
 * A column holding scalars.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScalarField extends FieldAttributes {
  readonly name: string
  readonly type: ScalarType
  readonly mode: Mode
}

/**
 * A RECORD (STRUCT) column and its nested columns.
 *
 * @category models
 * @since 0.1.0
 */
export interface RecordField extends FieldAttributes {
  readonly name: string
  readonly type: "RECORD"
  readonly mode: Mode
  readonly fields: ReadonlyArray<Field>
}

/**
 * A RANGE column; its values are `{ start, end }` where a missing bound is unbounded.
 *
 * @category models
 * @since 0.1.0
 */
export interface RangeField extends FieldAttributes {
  readonly name: string
  readonly type: "RANGE"
  readonly mode: Mode
  readonly rangeElementType: RangeElementType
}

/**
 * One column of a table schema.
 *
 * @category models
 * @since 0.1.0
 */
export type Field = ScalarField | RecordField | RangeField

/**
 * A BigQuery table schema: its columns in order.
 *
 * **Details**
 *
 * Build one with {@link make} (validated), {@link fromRest}, {@link fromStorage} or
 * {@link fromSchema}. Column names are 1 to 300 letters, digits and underscores not starting with a
 * digit (BigQuery's flexible column names are not supported), unique ignoring case, without reserved
 * prefixes; RECORDs nest at most 15 levels.
 *
 * **Example** (A schema)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * const schema: TableSchema.TableSchema = {
 *   fields: [
 *     TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
 *     TableSchema.record({ name: "items", mode: "REPEATED", fields: [TableSchema.field({ name: "sku", type: "STRING" })] })
 *   ]
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface TableSchema {
  readonly fields: ReadonlyArray<Field>
}

/**
 * A column in the REST JSON form (`tables.get`, `tables.insert`). Legacy type names (`INTEGER`,
 * `FLOAT`, `BOOLEAN`, `RECORD`/`STRUCT`) are what the service returns; counts are decimal strings.
 *
 * @category models
 * @since 0.1.0
 */
export interface RestField {
  readonly name: string
  readonly type: string
  readonly mode?: string
  readonly fields?: Array<RestField>
  readonly description?: string
  readonly defaultValueExpression?: string
  readonly maxLength?: string
  readonly precision?: string
  readonly scale?: string
  readonly rangeElementType?: { readonly type: string }
}

/**
 * A table schema in the REST JSON form. Arrays are mutable so that it can be passed to
 * `@google-cloud/bigquery` as is.
 *
 * @category models
 * @since 0.1.0
 */
export interface RestTableSchema {
  readonly fields: Array<RestField>
}

/**
 * A column as the Storage Write API `TableFieldSchema` message (plain object; enums by name).
 *
 * @category models
 * @since 0.1.0
 */
export interface StorageField {
  readonly name: string
  readonly type:
    | "STRING"
    | "INT64"
    | "DOUBLE"
    | "STRUCT"
    | "BYTES"
    | "BOOL"
    | "TIMESTAMP"
    | "DATE"
    | "TIME"
    | "DATETIME"
    | "GEOGRAPHY"
    | "NUMERIC"
    | "BIGNUMERIC"
    | "JSON"
    | "RANGE"
  readonly mode: Mode
  readonly fields?: ReadonlyArray<StorageField> | undefined
  readonly description?: string | undefined
  readonly defaultValueExpression?: string | undefined
  readonly maxLength?: number | undefined
  readonly precision?: number | undefined
  readonly scale?: number | undefined
  readonly rangeElementType?: { readonly type: RangeElementType } | undefined
}

/**
 * The Storage Write API `TableSchema` message (what `GetWriteStream` returns).
 *
 * @category models
 * @since 0.1.0
 */
export interface StorageTableSchema {
  readonly fields: ReadonlyArray<StorageField>
}

/**
 * A `google.protobuf.FieldDescriptorProto` as a plain object (`label` and `type` are the enum
 * numbers), accepted by gax and protobufjs.
 *
 * @category models
 * @since 0.1.0
 */
export interface FieldDescriptorProto {
  readonly name: string
  readonly number: number
  readonly label: 1 | 2 | 3
  readonly type: number
  readonly typeName?: string
}

/**
 * A self-contained `google.protobuf.DescriptorProto` (nested types declared inside) as a plain
 * object, the `writer_schema` of Storage Write appends.
 *
 * @category models
 * @since 0.1.0
 */
export interface DescriptorProto {
  readonly name: string
  readonly field: Array<FieldDescriptorProto>
  readonly nestedType: Array<DescriptorProto>
}

/**
 * A scalar column; `mode` defaults to NULLABLE.
 *
 * **Example** (A required string column)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * TableSchema.field({ name: "name", type: "STRING", mode: "REQUIRED", maxLength: 64 })
 * // => { name: "name", type: "STRING", mode: "REQUIRED", maxLength: 64 }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const field = (
  options: FieldAttributes & { readonly name: string; readonly type: ScalarType; readonly mode?: Mode | undefined }
): ScalarField => ({ ...options, mode: options.mode ?? "NULLABLE" })

/**
 * A RECORD column; `mode` defaults to NULLABLE.
 *
 * **Example** (An array of records)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * TableSchema.record({ name: "items", mode: "REPEATED", fields: [TableSchema.field({ name: "sku", type: "STRING" })] })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const record = (options: {
  readonly name: string
  readonly fields: ReadonlyArray<Field>
  readonly mode?: Mode | undefined
  readonly description?: string | undefined
}): RecordField => ({ ...options, type: "RECORD", mode: options.mode ?? "NULLABLE" })

/**
 * A RANGE column over DATE, DATETIME or TIMESTAMP; `mode` defaults to NULLABLE.
 *
 * **Example** (A validity period)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * TableSchema.range({ name: "valid", rangeElementType: "DATE" })
 * // => { name: "valid", rangeElementType: "DATE", type: "RANGE", mode: "NULLABLE" }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const range = (options: {
  readonly name: string
  readonly rangeElementType: RangeElementType
  readonly mode?: Mode | undefined
  readonly description?: string | undefined
}): RangeField => ({ ...options, type: "RANGE", mode: options.mode ?? "NULLABLE" })

/**
 * Validates columns into a {@link TableSchema}.
 *
 * **Details**
 *
 * Checks names (pattern, length, reserved prefixes, uniqueness ignoring case), types, modes,
 * RECORDs (at least one field, at most 15 levels), RANGE element types, `maxLength`,
 * `precision`/`scale` bounds and the 10,000-column limit. Errors are `SinkConfigError`s whose path
 * starts with `path` (default `"schema"`), like `schema.fields[2].name`.
 *
 * **Example** (Validating a schema)
 * ```ts
 * import { Effect } from "effect"
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * const schema = Effect.runSync(TableSchema.make([TableSchema.field({ name: "id", type: "INT64" })]))
 * Effect.runSync(Effect.flip(TableSchema.make([TableSchema.field({ name: "1d", type: "INT64" })]))).path
 * // => "schema.fields[0].name"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (fields: ReadonlyArray<Field>, path = "schema"): Effect.Effect<TableSchema, SinkConfigError> =>
  Effect.suspend(() => Effect.fromResult(model.decodeSchema({ fields }, "model", path)))

/**
 * Reads the REST JSON form (`{ fields: [{ name, type, mode, fields, description }] }`), accepting
 * the legacy type names `INTEGER`, `FLOAT`, `BOOLEAN`, `RECORD` and `STRUCT`, case-insensitive types
 * and modes, a missing mode as NULLABLE, and counts as strings or numbers.
 *
 * **Example** (Reading `tables.get` output)
 * ```ts
 * import { Effect } from "effect"
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * Effect.runSync(TableSchema.fromRest({ fields: [{ name: "n", type: "INTEGER" }] }))
 * // => { fields: [{ name: "n", type: "INT64", mode: "NULLABLE" }] }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromRest = (json: unknown, path = "schema"): Effect.Effect<TableSchema, SinkConfigError> =>
  Effect.suspend(() => Effect.fromResult(model.decodeSchema(json, "rest", path)))

/**
 * The REST JSON form, with the type names `tables.get` returns (`INTEGER`, `FLOAT`, `BOOLEAN`,
 * `RECORD`), explicit modes and counts as strings.
 *
 * **Example** (For `tables.insert`)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * TableSchema.toRest({ fields: [TableSchema.field({ name: "n", type: "INT64" })] })
 * // => { fields: [{ name: "n", type: "INTEGER", mode: "NULLABLE" }] }
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const toRest: (schema: TableSchema) => RestTableSchema = rest.toRest

/**
 * Reads a Storage Write API `TableSchema` message (enums as names or numbers, counts as numbers,
 * strings or bigints; proto3 zero values as unset).
 *
 * **Example** (Reading `GetWriteStream` output)
 * ```ts
 * import { Effect } from "effect"
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * Effect.runSync(TableSchema.fromStorage({ fields: [{ name: "x", type: 3, mode: 2 }] }))
 * // => { fields: [{ name: "x", type: "FLOAT64", mode: "REQUIRED" }] }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromStorage = (message: unknown, path = "schema"): Effect.Effect<TableSchema, SinkConfigError> =>
  Effect.suspend(() => Effect.fromResult(model.decodeSchema(message, "storage", path)))

/**
 * The Storage Write API `TableSchema` message (enums by name: `DOUBLE`, `STRUCT`, ...).
 *
 * **Example** (A storage schema)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * TableSchema.toStorage({ fields: [TableSchema.field({ name: "x", type: "FLOAT64" })] })
 * // => { fields: [{ name: "x", type: "DOUBLE", mode: "NULLABLE" }] }
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const toStorage: (schema: TableSchema) => StorageTableSchema = rest.toStorage

/**
 * The proto2 `DescriptorProto` rows of this schema are encoded with: the `writer_schema` of
 * Storage Write appends.
 *
 * **Details**
 *
 * Field numbers are 1-based in column order; RECORD and RANGE columns are nested message types
 * declared inside the root message (`__ROOT__`); REQUIRED columns are `LABEL_REQUIRED` unless they
 * have a default value expression; repeated scalars are unpacked. Encodings: INT64 and TIMESTAMP
 * (µs) `int64`, DATE `int32` (days), FLOAT64 `double`, BOOL `bool`, BYTES `bytes`, every other
 * scalar `string`.
 *
 * **Example** (A descriptor)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * TableSchema.toDescriptor({ fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] })
 * // => { name: "__ROOT__", field: [{ name: "id", number: 1, label: 2, type: 3 }], nestedType: [] }
 * ```
 *
 * @see {@link toDescriptorBytes} for the encoded form
 * @category encoding
 * @since 0.1.0
 */
export const toDescriptor: (schema: TableSchema) => DescriptorProto = descriptor.toDescriptor

/**
 * The encoded `google.protobuf.DescriptorProto` of {@link toDescriptor}, for hand-framed requests.
 *
 * **Example** (Descriptor bytes)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * const bytes = TableSchema.toDescriptorBytes({ fields: [TableSchema.field({ name: "id", type: "INT64" })] })
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const toDescriptorBytes = (schema: TableSchema): Uint8Array =>
  descriptor.encodeDescriptor(descriptor.toDescriptor(schema))

/**
 * Derives a table schema from an Effect `Schema` struct (or `Schema.Class`).
 *
 * **Details**
 *
 * - Mode: REQUIRED for a field that is neither optional nor nullable, NULLABLE for `optional`,
 *   `optionalKey`, `NullOr` and `UndefinedOr`, REPEATED for arrays (optional arrays too: a missing
 *   array is written as empty).
 * - Type, unless a {@link BigQueryType} annotation says otherwise: `String`, string literals and
 *   template literals STRING; `Number` FLOAT64, an integer-checked `Number` (`Schema.Int`) INT64;
 *   `BigInt` INT64; `Boolean` BOOL; `Date`, `DateTimeUtc`, `DateTimeZoned` TIMESTAMP; `Uint8Array`
 *   BYTES; `BigDecimal` NUMERIC; `Json` JSON; structs and classes RECORD.
 * - The `description` annotation becomes the column description.
 * - Unsupported shapes (tuples, records, unions of several types, nested arrays, nullable array
 *   elements, `Unknown` without an annotation, recursion beyond 15 levels) fail with a
 *   `SinkConfigError` naming the field (`schema.items[].price`).
 *
 * **Example** (Deriving a schema)
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { BigQueryType, TableSchema } from "effect-gcp-sinks/BigQuery"
 * const Order = Schema.Struct({
 *   id: Schema.BigInt,
 *   placed: Schema.Date,
 *   total: Schema.String.pipe(BigQueryType.annotate("NUMERIC")),
 *   note: Schema.optional(Schema.String)
 * })
 * Effect.runSync(TableSchema.fromSchema(Order)).fields.map((f) => `${f.name} ${f.type} ${f.mode}`)
 * // => ["id INT64 REQUIRED", "placed TIMESTAMP REQUIRED", "total NUMERIC REQUIRED", "note STRING NULLABLE"]
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromSchema = (schema: Schema.Top, path = "schema"): Effect.Effect<TableSchema, SinkConfigError> =>
  Effect.suspend(() => Effect.fromResult(derive.fromSchema(schema.ast, path)))

/**
 * A schema union that cannot be applied to the live table.
 *
 * **Details**
 *
 * `reason` is `"TypeChanged"` (a column's type differs, RECORD/RANGE element included),
 * `"RepeatedChanged"` (REPEATED added to or removed from a column) or `"NewField"` (a desired
 * column is missing from the table and `allowNewFields` is off). `path` names the column, like
 * `items.price`.
 *
 * **Example** (A refused union)
 * ```ts
 * import { TableSchema } from "effect-gcp-sinks/BigQuery"
 * const error = new TableSchema.SchemaUnionError({ reason: "NewField", path: "items.price", message: "new column" })
 * error.reason
 * // => "NewField"
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class SchemaUnionError extends Schema.TaggedError<SchemaUnionError>()("SchemaUnionError", {
  reason: Schema.Literals(["TypeChanged", "RepeatedChanged", "NewField"]),
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * The result of {@link union}: the schema to apply and whether it differs from the live one.
 *
 * @category models
 * @since 0.1.0
 */
export interface UnionResult {
  readonly schema: TableSchema
  readonly changed: boolean
}

/**
 * Unites the live table schema with a desired one, as far as `options` allow.
 *
 * **Details**
 *
 * Names match ignoring case; a matched column keeps the live spelling and attributes. Live columns
 * are never dropped, reordered or retyped: a type change (RECORD/RANGE element types included) or a
 * REPEATED added or removed is an error. Desired-only columns are appended at the end of their
 * level (inside RECORDs too) as NULLABLE (REPEATED stays REPEATED; nested columns of a new RECORD
 * are made NULLABLE as well) when `allowNewFields`, else an error. A REQUIRED live column becomes
 * NULLABLE when the desired column is not REQUIRED and `allowFieldRelaxation`, else it stays
 * REQUIRED (rows without it are then rejected row by row); modes are never tightened. `changed` is `false` exactly when the result equals `live`. Pure and
 * deterministic.
 *
 * **Example** (Appending a column)
 * ```ts
 * import { Result } from "effect"
 * import { SchemaUpdateOptions, TableSchema } from "effect-gcp-sinks/BigQuery"
 * const live = { fields: [TableSchema.field({ name: "id", type: "INT64" })] }
 * const desired = { fields: [...live.fields, TableSchema.field({ name: "note", type: "STRING", mode: "REQUIRED" })] }
 * const united = TableSchema.union(live, desired, { ...SchemaUpdateOptions.defaults, allowNewFields: true })
 * Result.isSuccess(united) && united.success.schema.fields.map((f) => f.mode)
 * // => ["NULLABLE", "NULLABLE"]
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const union: (
  live: TableSchema,
  desired: TableSchema,
  options: SchemaUpdateOptions
) => Result.Result<UnionResult, SchemaUnionError> = (live, desired, options) =>
  schemaUnion.union(live, desired, options, (reason, path, message) => new SchemaUnionError({ reason, path, message }))
