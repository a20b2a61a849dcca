/**
 * Decoding and validation of table schemas from untyped input (the library's own model, the REST
 * JSON form or the Storage Write API proto form) into `TableSchema`, with `SinkConfigError`s that
 * name the offending field's path.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import type {
  Field,
  FieldType,
  Mode,
  RangeElementType,
  ScalarType,
  TableSchema
} from "../../../BigQuery/TableSchema.ts"
import { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import { describe } from "../../options/schema.ts"

/** The forms a schema is read from; they differ in type names and number encodings. @internal */
export type Dialect = "model" | "rest" | "storage"

/** BigQuery's nesting limit for RECORD columns. @internal */
export const maxDepth = 15
/** BigQuery's limit on columns in a table, nested ones included. */
const maxColumns = 10_000

/** A table written in rows, as one array. */
const rows = <T>(...lines: ReadonlyArray<ReadonlyArray<T>>): ReadonlyArray<T> => lines.flat()

/** Every non-composite column type, in declaration order. @internal */
export const scalarTypeNames: ReadonlyArray<ScalarType> = rows<ScalarType>(
  ["STRING", "BYTES", "INT64", "FLOAT64", "NUMERIC", "BIGNUMERIC", "BOOL"],
  ["TIMESTAMP", "DATE", "TIME", "DATETIME", "GEOGRAPHY", "JSON"]
)

/** {@link scalarTypeNames} as a set, for membership tests on untyped input. @internal */
export const scalarTypes: ReadonlySet<string> = new Set(scalarTypeNames)

/** Storage Write API `TableFieldSchema.Type` numbers and names, in the model's spelling. @internal */
export const storageTypes: ReadonlyArray<FieldType | undefined> = rows<FieldType | undefined>(
  [undefined, "STRING", "INT64", "FLOAT64", "RECORD", "BYTES", "BOOL", "TIMESTAMP", "DATE", "TIME"], // 0-9
  // 14 is INTERVAL, not writable through the Storage Write API
  ["DATETIME", "GEOGRAPHY", "NUMERIC", "BIGNUMERIC", undefined, "JSON", "RANGE"] // 10-16
)

const storageModes: ReadonlyArray<Mode | undefined> = [undefined, "NULLABLE", "REQUIRED", "REPEATED"]

const aliases: Readonly<Record<string, FieldType>> = {
  INTEGER: "INT64",
  FLOAT: "FLOAT64",
  DOUBLE: "FLOAT64",
  BOOLEAN: "BOOL",
  STRUCT: "RECORD"
}

const reservedPrefixes = ["_TABLE_", "_FILE_", "_PARTITION", "_ROW_TIMESTAMP", "__ROOT__", "_COLIDENTIFIER"]
const namePattern = /^[A-Za-z_][A-Za-z0-9_]{0,299}$/

/** Why `name` cannot be a column name, or `undefined`. @internal */
export const nameError = (name: string): string | undefined => {
  if (!namePattern.test(name)) {
    return `must be 1 to 300 letters, digits or underscores, not starting with a digit, was ${describe(name)}`
  }
  const upper = name.toUpperCase()
  const reserved = reservedPrefixes.find((prefix) => upper.startsWith(prefix))
  return reserved === undefined ? undefined : `must not start with the reserved prefix ${reserved}, was '${name}'`
}

/** A `SinkConfigError` at `path` as a failed `Result`. @internal */
export const fail = (path: string, message: string): Result.Result<never, SinkConfigError> =>
  Result.fail(new SinkConfigError({ path, detail: message }))

const typeOf = (raw: unknown, dialect: Dialect, path: string): Result.Result<FieldType, SinkConfigError> => {
  if (dialect === "storage" && Predicate.isNumber(raw)) {
    const type = storageTypes[raw]
    return type === undefined ? fail(path, `unsupported type number ${raw}`) : Result.succeed(type)
  }
  if (!Predicate.isString(raw)) return fail(path, `must be a type name, was ${describe(raw)}`)
  const upper = raw.toUpperCase()
  const name = dialect === "model" ? raw : (aliases[upper] ?? upper)
  if (scalarTypes.has(name) || name === "RECORD" || name === "RANGE") return Result.succeed(name as FieldType)
  return fail(path, `unsupported type ${describe(raw)}`)
}

const modeOf = (raw: unknown, dialect: Dialect, path: string): Result.Result<Mode, SinkConfigError> => {
  if (dialect !== "model" && (raw === undefined || raw === null || raw === 0 || raw === "MODE_UNSPECIFIED")) {
    return Result.succeed("NULLABLE")
  }
  if (dialect === "storage" && Predicate.isNumber(raw)) {
    const mode = storageModes[raw]
    return mode === undefined ? fail(path, `unsupported mode number ${raw}`) : Result.succeed(mode)
  }
  const name = Predicate.isString(raw) && dialect !== "model" ? raw.toUpperCase() : raw
  return name === "NULLABLE" || name === "REQUIRED" || name === "REPEATED"
    ? Result.succeed(name)
    : fail(path, `must be NULLABLE, REQUIRED or REPEATED, was ${describe(raw)}`)
}

/** A count given as number, decimal string (REST int64) or bigint. */
const countOf = (raw: unknown, path: string): Result.Result<number | undefined, SinkConfigError> => {
  if (raw === undefined || raw === null) return Result.succeed(undefined)
  const n = Predicate.isString(raw) && /^\d+$/.test(raw)
    ? Number(raw)
    : Predicate.isBigInt(raw)
    ? Number(raw)
    : raw
  return Predicate.isNumber(n) && Number.isSafeInteger(n) && n >= 0
    ? Result.succeed(n)
    : fail(path, `must be a non-negative integer, was ${describe(raw)}`)
}

const optionalString = (raw: unknown, path: string): Result.Result<string | undefined, SinkConfigError> =>
  raw === undefined || raw === null || raw === ""
    ? Result.succeed(undefined)
    : Predicate.isString(raw)
    ? Result.succeed(raw)
    : fail(path, `must be a string, was ${describe(raw)}`)

const checkParameters = (field: Field, path: string): Result.Result<Field, SinkConfigError> => {
  if (field.maxLength !== undefined && (field.type !== "STRING" && field.type !== "BYTES" || field.maxLength < 1)) {
    return fail(`${path}.maxLength`, `applies to STRING and BYTES only and must be at least 1`)
  }
  if (field.scale !== undefined && field.precision === undefined) {
    return fail(`${path}.scale`, "requires precision")
  }
  if (field.precision !== undefined) {
    if (field.type !== "NUMERIC" && field.type !== "BIGNUMERIC") {
      return fail(`${path}.precision`, "applies to NUMERIC and BIGNUMERIC only")
    }
    const s = field.scale ?? 0
    const [maxScale, maxInteger] = field.type === "NUMERIC" ? [9, 29] : [38, 38]
    if (s > maxScale || field.precision - s < 1 || field.precision - s > maxInteger) {
      return fail(
        `${path}.precision`,
        `${field.type}(P, S) needs 0 <= S <= ${maxScale} and 1 <= P - S <= ${maxInteger}, was (${field.precision}, ${s})`
      )
    }
  }
  return Result.succeed(field)
}

interface Budget {
  columns: number
}

const decodeField = (
  raw: unknown,
  dialect: Dialect,
  path: string,
  depth: number,
  budget: Budget
): Result.Result<Field, SinkConfigError> =>
  Result.gen(function*() {
    if (!Predicate.isObject(raw)) return yield* fail(path, `must be a field object, was ${describe(raw)}`)
    if (++budget.columns > maxColumns) return yield* fail(path, `a table has at most ${maxColumns} columns`)
    const name = raw["name"]
    if (!Predicate.isString(name)) return yield* fail(`${path}.name`, `must be a string, was ${describe(name)}`)
    const badName = nameError(name)
    if (badName !== undefined) return yield* fail(`${path}.name`, badName)
    const type = yield* typeOf(raw["type"], dialect, `${path}.type`)
    const mode = yield* modeOf(raw["mode"], dialect, `${path}.mode`)
    const description = yield* optionalString(raw["description"], `${path}.description`)
    const defaultValueExpression = yield* optionalString(
      raw["defaultValueExpression"],
      `${path}.defaultValueExpression`
    )
    const attributes = {
      ...(description === undefined ? {} : { description }),
      ...(defaultValueExpression === undefined ? {} : { defaultValueExpression })
    }
    if (type === "RECORD") {
      if (depth >= maxDepth) return yield* fail(path, `RECORD columns nest at most ${maxDepth} levels deep`)
      const fields = yield* decodeFields(raw["fields"], dialect, `${path}.fields`, depth + 1, budget)
      return { name, type, mode, fields, ...attributes }
    }
    if (type === "RANGE") {
      const element = dialect === "model" ? raw["rangeElementType"] : rangeElementOf(raw["rangeElementType"])
      const elementType = yield* typeOf(element, dialect, `${path}.rangeElementType`)
      if (elementType !== "DATE" && elementType !== "DATETIME" && elementType !== "TIMESTAMP") {
        return yield* fail(`${path}.rangeElementType`, `must be DATE, DATETIME or TIMESTAMP, was ${elementType}`)
      }
      return { name, type, mode, rangeElementType: elementType as RangeElementType, ...attributes }
    }
    if (raw["fields"] !== undefined && raw["fields"] !== null && !isEmptyArray(raw["fields"])) {
      return yield* fail(`${path}.fields`, `only RECORD columns have fields, this one is ${type}`)
    }
    const maxLength = yield* countOf(raw["maxLength"], `${path}.maxLength`)
    const precision = yield* countOf(raw["precision"], `${path}.precision`)
    const scale = yield* countOf(raw["scale"], `${path}.scale`)
    const field: Field = {
      name,
      type: type as ScalarType,
      mode,
      ...attributes,
      ...(maxLength === undefined || maxLength === 0 && dialect === "storage" ? {} : { maxLength }),
      ...(precision === undefined || precision === 0 && dialect === "storage" ? {} : { precision }),
      ...(scale === undefined || (scale === 0 && dialect === "storage") ? {} : { scale })
    }
    return yield* checkParameters(field, path)
  })

const isEmptyArray = (u: unknown): boolean => Array.isArray(u) && u.length === 0

const rangeElementOf = (raw: unknown): unknown => (Predicate.isObject(raw) ? raw["type"] : raw)

/** Decodes and validates a list of fields (a table or a RECORD). @internal */
export const decodeFields = (
  raw: unknown,
  dialect: Dialect,
  path: string,
  depth = 0,
  budget: Budget = { columns: 0 }
): Result.Result<ReadonlyArray<Field>, SinkConfigError> =>
  Result.gen(function*() {
    if (!Array.isArray(raw)) return yield* fail(path, `must be an array of fields, was ${describe(raw)}`)
    if (raw.length === 0) return yield* fail(path, "must have at least one field")
    const fields: Array<Field> = []
    const seen = new Map<string, number>()
    for (let i = 0; i < raw.length; i++) {
      const field = yield* decodeField(raw[i], dialect, `${path}[${i}]`, depth, budget)
      const key = field.name.toLowerCase()
      const previous = seen.get(key)
      if (previous !== undefined) {
        return yield* fail(`${path}[${i}].name`, `'${field.name}' repeats ${path}[${previous}] (names ignore case)`)
      }
      seen.set(key, i)
      fields.push(field)
    }
    return fields
  })

/** Decodes `{ fields: [...] }` in the given dialect. @internal */
export const decodeSchema = (
  raw: unknown,
  dialect: Dialect,
  path: string
): Result.Result<TableSchema, SinkConfigError> =>
  Predicate.isObject(raw)
    ? Result.map(decodeFields(raw["fields"], dialect, `${path}.fields`), (fields) => ({ fields }))
    : fail(path, `must be an object with fields, was ${describe(raw)}`)
