/**
 * Extra physical columns computed per record (ingestion time, source partition, ...) and appended
 * to every row a serializer writes.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as internal from "../internal/bigquery/additionalFields.ts"
import { nameError, scalarTypes } from "../internal/bigquery/schemaModel.ts"
import * as check from "../internal/optionChecks.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import { descriptorOf, RowSerializationError, type RowSerializer } from "./RowSerializer.ts"
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
export const make = <A>(
  fields: ReadonlyArray<AdditionalField<A>>,
  path = "additionalFields"
): Effect.Effect<AdditionalFields<A>, SinkConfigError> =>
  Effect.gen(function*() {
    if (!Array.isArray(fields) || fields.length === 0) return yield* check.fail(path, "must have at least one field")
    const seen = new Set<string>()
    for (const [i, field] of fields.entries()) {
      const at = `${path}[${i}]`
      const name: unknown = field.name
      if (!Predicate.isString(name)) {
        return yield* check.fail(`${at}.name`, `must be a string, was ${check.describe(name)}`)
      }
      const bad = nameError(name)
      if (bad !== undefined) {
        return yield* check.fail(`${at}.name`, bad)
      }
      if (seen.has(name.toLowerCase())) return yield* check.fail(`${at}.name`, `repeats '${name}' (names ignore case)`)
      seen.add(name.toLowerCase())
      if (!scalarTypes.has(field.type)) {
        return yield* check.fail(`${at}.type`, `must be a singular scalar type, was ${check.describe(field.type)}`)
      }
      if (field.nullPolicy !== "NULLABLE" && field.nullPolicy !== "REQUIRED") {
        return yield* check.fail(
          `${at}.nullPolicy`,
          `must be NULLABLE or REQUIRED, was ${check.describe(field.nullPolicy)}`
        )
      }
      if (!Predicate.isFunction(field.provider)) return yield* check.fail(`${at}.provider`, "must be a function")
    }
    return { fields: [...fields] }
  })

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
export const extendSchema = <A>(
  additional: AdditionalFields<A>,
  schema: TableSchema,
  path = "additionalFields"
): Effect.Effect<TableSchema, SinkConfigError> =>
  Effect.gen(function*() {
    for (const [i, field] of additional.fields.entries()) {
      const clash = schema.fields.find((f) => f.name.toLowerCase() === field.name.toLowerCase())
      if (clash !== undefined) {
        return yield* check.fail(`${path}[${i}].name`, `collides with the serializer's column '${clash.name}'`)
      }
    }
    return internal.appendColumns(schema, additional)
  })

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
export const augment = <A>(serializer: RowSerializer<A>, additional: AdditionalFields<A>): RowSerializer<A> => {
  const compiled = new WeakMap<object, internal.AdditionalEncoder<A>>()
  return {
    tableSchema: (destination) => internal.appendColumns(serializer.tableSchema(destination), additional),
    descriptor: (destination) => internal.appendDescriptor(descriptorOf(serializer, destination), additional),
    ...(serializer.fingerprint === undefined ? {} : { fingerprint: serializer.fingerprint }),
    serialize: (element, destination) => {
      const row = serializer.serialize(element, destination)
      if (!(row instanceof Uint8Array)) return row
      const key: object = serializer.descriptor === undefined
        ? serializer.tableSchema(destination)
        : serializer.descriptor(destination)
      let encode = compiled.get(key)
      if (encode === undefined) {
        encode = internal.compile(additional, descriptorOf(serializer, destination))
        compiled.set(key, encode)
      }
      const out = encode(element, row)
      return out instanceof Uint8Array ? out : new RowSerializationError({ path: out.path, reason: out.message })
    }
  }
}
