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
const restType = (type: FieldType): string =>
  type === "INT64" ? "INTEGER" : type === "FLOAT64" ? "FLOAT" : type === "BOOL" ? "BOOLEAN" : type

/** The Storage Write API enum name of each type. */
const storageType = (type: FieldType): StorageField["type"] =>
  type === "FLOAT64" ? "DOUBLE" : type === "RECORD" ? "STRUCT" : type

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

const converter = <T extends string, N>(typeName: (type: FieldType) => T, number: (n: number) => N) => {
  const convert = (field: Field): Converted<T, N> => {
    const base = {
      name: field.name,
      type: typeName(field.type),
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
const restField: (field: Field) => RestField = converter(restType, String)
const storageField: (field: Field) => StorageField = converter(storageType, (n) => n)

/** @internal */
export const toRest = (schema: TableSchema): RestTableSchema => ({ fields: schema.fields.map(restField) })

/** @internal */
export const toStorage = (schema: TableSchema): StorageTableSchema => ({ fields: schema.fields.map(storageField) })
