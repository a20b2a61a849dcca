/**
 * `TableSchema` to the REST JSON form (`tables.insert`, `tables.patch`) and to the Storage Write
 * API `TableSchema` message (as the plain object gax and protobufjs take).
 *
 * @internal
 */
import type {
  Field,
  FieldType,
  RestField,
  RestTableSchema,
  StorageField,
  StorageTableSchema,
  TableSchema
} from "../../BigQuery/TableSchema.ts"

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

const restField = (field: Field): RestField => {
  const base = {
    name: field.name,
    type: restTypes[field.type],
    mode: field.mode,
    ...(field.description === undefined ? {} : { description: field.description }),
    ...(field.defaultValueExpression === undefined ? {} : { defaultValueExpression: field.defaultValueExpression })
  }
  switch (field.type) {
    case "RECORD":
      return { ...base, fields: field.fields.map(restField) }
    case "RANGE":
      return { ...base, rangeElementType: { type: field.rangeElementType } }
    default:
      return {
        ...base,
        ...(field.maxLength === undefined ? {} : { maxLength: String(field.maxLength) }),
        ...(field.precision === undefined ? {} : { precision: String(field.precision) }),
        ...(field.scale === undefined ? {} : { scale: String(field.scale) })
      }
  }
}

/** @internal */
export const toRest = (schema: TableSchema): RestTableSchema => ({ fields: schema.fields.map(restField) })

const storageField = (field: Field): StorageField => {
  const base = {
    name: field.name,
    type: storageTypes[field.type],
    mode: field.mode,
    ...(field.description === undefined ? {} : { description: field.description }),
    ...(field.defaultValueExpression === undefined ? {} : { defaultValueExpression: field.defaultValueExpression })
  }
  switch (field.type) {
    case "RECORD":
      return { ...base, fields: field.fields.map(storageField) }
    case "RANGE":
      return { ...base, rangeElementType: { type: field.rangeElementType } }
    default:
      return {
        ...base,
        ...(field.maxLength === undefined ? {} : { maxLength: field.maxLength }),
        ...(field.precision === undefined ? {} : { precision: field.precision }),
        ...(field.scale === undefined ? {} : { scale: field.scale })
      }
  }
}

/** @internal */
export const toStorage = (schema: TableSchema): StorageTableSchema => ({ fields: schema.fields.map(storageField) })
