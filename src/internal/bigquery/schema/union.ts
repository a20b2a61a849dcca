/**
 * The union of a live table schema and a desired one, a pure function:
 * case-insensitive matching keeping the live column, no drops, reorders or retypes, REPEATED never
 * added or removed, desired-only columns appended NULLABLE when allowed, relaxation when allowed.
 *
 * @internal
 */
import * as Result from "effect/Result"
import type { SchemaUpdateOptions } from "../../../BigQuery/SchemaUpdateOptions.ts"
import type { Field, TableSchema } from "../../../BigQuery/TableSchema.ts"

/** @internal */
export type UnionReason = "TypeChanged" | "RepeatedChanged" | "NewField"

/** @internal */
export type MakeError<E> = (reason: UnionReason, path: string, message: string) => E

interface Merged {
  readonly fields: ReadonlyArray<Field>
  readonly changed: boolean
}

const typeName = (field: Field): string => (field.type === "RANGE" ? `RANGE<${field.rangeElementType}>` : field.type)

/** A desired-only column as it is added to an existing table: NULLABLE unless REPEATED, recursively. */
const asNew = (field: Field): Field => {
  const mode = field.mode === "REPEATED" ? "REPEATED" : "NULLABLE"
  return field.type === "RECORD" ? { ...field, mode, fields: field.fields.map(asNew) } : { ...field, mode }
}

const mergeFields = <E>(
  live: ReadonlyArray<Field>,
  desired: ReadonlyArray<Field>,
  options: SchemaUpdateOptions,
  prefix: string,
  makeError: MakeError<E>
): Result.Result<Merged, E> => {
  const wanted = new Map<string, Field>()
  for (const field of desired) wanted.set(field.name.toLowerCase(), field)
  const out: Array<Field> = []
  let changed = false
  for (const liveField of live) {
    const key = liveField.name.toLowerCase()
    const desiredField = wanted.get(key)
    if (desiredField === undefined) {
      out.push(liveField)
      continue
    }
    wanted.delete(key)
    const merged = mergeField(liveField, desiredField, options, `${prefix}${liveField.name}`, makeError)
    if (Result.isFailure(merged)) return Result.fail(merged.failure)
    if (merged.success !== liveField) changed = true
    out.push(merged.success)
  }
  for (const field of desired) {
    if (!wanted.has(field.name.toLowerCase())) continue
    if (!options.allowNewFields) {
      return Result.fail(
        makeError(
          "NewField",
          `${prefix}${field.name}`,
          `column ${prefix}${field.name} is not in the table and allowNewFields is off`
        )
      )
    }
    out.push(asNew(field))
    changed = true
  }
  return Result.succeed({ fields: changed ? out : live, changed })
}

const mergeField = <E>(
  live: Field,
  desired: Field,
  options: SchemaUpdateOptions,
  path: string,
  makeError: MakeError<E>
): Result.Result<Field, E> => {
  if (typeName(live) !== typeName(desired)) {
    return Result.fail(
      makeError(
        "TypeChanged",
        path,
        `column ${path} is ${typeName(live)} in the table, ${typeName(desired)} in the desired schema`
      )
    )
  }
  if ((live.mode === "REPEATED") !== (desired.mode === "REPEATED")) {
    return Result.fail(
      makeError(
        "RepeatedChanged",
        path,
        `column ${path} is ${live.mode} in the table, ${desired.mode} in the desired schema; REPEATED cannot change`
      )
    )
  }
  const relax = live.mode === "REQUIRED" && desired.mode !== "REQUIRED" && options.allowFieldRelaxation
  if (live.type === "RECORD" && desired.type === "RECORD") {
    const nested = mergeFields(live.fields, desired.fields, options, `${path}.`, makeError)
    if (Result.isFailure(nested)) return Result.fail(nested.failure)
    if (!nested.success.changed && !relax) return Result.succeed(live)
    return Result.succeed({ ...live, mode: relax ? "NULLABLE" : live.mode, fields: nested.success.fields })
  }
  return Result.succeed(relax ? { ...live, mode: "NULLABLE" } : live)
}

/** @internal */
export const union = <E>(
  live: TableSchema,
  desired: TableSchema,
  options: SchemaUpdateOptions,
  makeError: MakeError<E>
): Result.Result<{ readonly schema: TableSchema; readonly changed: boolean }, E> =>
  Result.map(
    mergeFields(live.fields, desired.fields, options, "", makeError),
    ({ changed, fields }) => ({ schema: changed ? { fields } : live, changed })
  )
