/**
 * `TableSchema` to the REST JSON form (`tables.insert`, `tables.patch`) and to the Storage Write
 * API `TableSchema` message (as the plain object gax and protobufjs take).
 *
 * @internal
 */
import type {
  Field,
  FieldType,
  RangeElementType,
  RestField,
  RestTableSchema,
  StorageField,
  StorageTableSchema,
  TableSchema
} from "../../../BigQuery/TableSchema.ts"

/** The REST spelling of each type: the legacy names `tables.get` itself returns. */
const restTypes: Readonly<Record<FieldType, string>> = {
  STRING: "STRING",
  BYTES: "BYTES",
  INT64: "INTEGER",
  FLOAT64: "FLOAT",
  NUMERIC: "NUMERIC",
  BIGNUMERIC: "BIGNUMERIC",
  BOOL: "BOOLEAN",
  TIMESTAMP: "TIMESTAMP",
  DATE: "DATE",
  TIME: "TIME",
  DATETIME: "DATETIME",
  GEOGRAPHY: "GEOGRAPHY",
  JSON: "JSON",
  RECORD: "RECORD",
  RANGE: "RANGE"
}

/** The Storage Write API enum name of each type. */
const storageTypes: Readonly<Record<FieldType, StorageField["type"]>> = {
  STRING: "STRING",
  BYTES: "BYTES",
  INT64: "INT64",
  FLOAT64: "DOUBLE",
  NUMERIC: "NUMERIC",
  BIGNUMERIC: "BIGNUMERIC",
  BOOL: "BOOL",
  TIMESTAMP: "TIMESTAMP",
  DATE: "DATE",
  TIME: "TIME",
  DATETIME: "DATETIME",
  GEOGRAPHY: "GEOGRAPHY",
  JSON: "JSON",
  RECORD: "STRUCT",
  RANGE: "RANGE"
}

/** A field in one of the two wire forms: they differ only in type names and in how numbers are written. */
interface Converted<T extends string, N> {
  readonly name: string
  readonly type: T
  readonly mode: Field["mode"]
  readonly fields?: Array<Converted<T, N>>
  readonly description?: string
  readonly defaultValueExpression?: string
  readonly maxLength?: N
  readonly precision?: N
  readonly scale?: N
  readonly rangeElementType?: { readonly type: RangeElementType }
}

const converter = <T extends string, N>(types: Readonly<Record<FieldType, T>>, number: (n: number) => N) => {
  const convert = (field: Field): Converted<T, N> => {
    const base = {
      name: field.name,
      type: types[field.type],
      mode: field.mode,
      ...(field.description === undefined ? {} : { description: field.description }),
      ...(field.defaultValueExpression === undefined ? {} : { defaultValueExpression: field.defaultValueExpression })
    }
    switch (field.type) {
      case "RECORD":
        return { ...base, fields: field.fields.map(convert) }
      case "RANGE":
        return { ...base, rangeElementType: { type: field.rangeElementType } }
      default:
        return {
          ...base,
          ...(field.maxLength === undefined ? {} : { maxLength: number(field.maxLength) }),
          ...(field.precision === undefined ? {} : { precision: number(field.precision) }),
          ...(field.scale === undefined ? {} : { scale: number(field.scale) })
        }
    }
  }
  return convert
}

// REST writes int64 attributes as decimal strings; the Storage message takes numbers.
const restField: (field: Field) => RestField = converter(restTypes, String)
const storageField: (field: Field) => StorageField = converter(storageTypes, (n) => n)

/** @internal */
export const toRest = (schema: TableSchema): RestTableSchema => ({ fields: schema.fields.map(restField) })

/** @internal */
export const toStorage = (schema: TableSchema): StorageTableSchema => ({ fields: schema.fields.map(storageField) })
