/**
 * `TableSchema` to the self-contained proto2 `DescriptorProto` sent as `writer_schema`, as a plain
 * object (what gax and protobufjs take) and as its encoded bytes (for hand-framed requests).
 *
 * - Field numbers are 1-based in schema order, exactly as the row encoder writes them.
 * - RECORD and RANGE columns become nested message types, all declared flat inside the root message
 *   and named after their field-number path (`__ROOT__F3_1`). `__ROOT__` is a reserved column prefix,
 *   so no column can collide with a type name.
 * - Labels: REQUIRED -> LABEL_REQUIRED (LABEL_OPTIONAL when the column has a default value
 *   expression, so the service may fill it), NULLABLE -> LABEL_OPTIONAL, REPEATED -> LABEL_REPEATED.
 *   Repeated scalars are not packed (proto2's default), and the encoder writes them unpacked.
 *
 * @internal
 */
import type {
  DescriptorProto,
  Field,
  FieldDescriptorProto,
  ScalarType,
  TableSchema
} from "../../../BigQuery/TableSchema.ts"
import { tag, WireWriter } from "./wireWriter.ts"

/** `FieldDescriptorProto.Type` numbers used by the encodings. @internal */
export const protoTypes = { double: 1, int64: 3, int32: 5, bool: 8, string: 9, message: 11, bytes: 12 } as const

/** `FieldDescriptorProto.Label` numbers. @internal */
export const labels = { optional: 1, required: 2, repeated: 3 } as const

/** The name of the root message. @internal */
export const rootName = "__ROOT__"

/** Whether the encoder must refuse a row without a value for this field. @internal */
export const isRequiredOnWire = (field: Field): boolean =>
  field.mode === "REQUIRED" && field.defaultValueExpression === undefined

/** The protobuf scalar type of each BigQuery scalar encoding. @internal */
export const scalarProtoType = (type: ScalarType): number => {
  switch (type) {
    case "INT64":
    case "TIMESTAMP":
      return protoTypes.int64
    case "DATE":
      return protoTypes.int32
    case "FLOAT64":
      return protoTypes.double
    case "BOOL":
      return protoTypes.bool
    case "BYTES":
      return protoTypes.bytes
    default:
      return protoTypes.string
  }
}

const labelOf = (field: Field): FieldDescriptorProto["label"] =>
  field.mode === "REPEATED" ? labels.repeated : isRequiredOnWire(field) ? labels.required : labels.optional

/** The name of the nested message type of field `number` in the message named `parent`. @internal */
export const nestedTypeName = (parent: string, number: number): string =>
  `${parent}${parent === rootName ? "F" : "_"}${number}`

const messageFields = (
  fields: ReadonlyArray<Field>,
  typePath: string,
  nested: Array<DescriptorProto>
): Array<FieldDescriptorProto> =>
  fields.map((field, index) => {
    const number = index + 1
    const base = { name: field.name, number, label: labelOf(field) }
    if (field.type === "RECORD" || field.type === "RANGE") {
      const typeName = nestedTypeName(typePath, number)
      const inner: ReadonlyArray<Field> = field.type === "RECORD" ? field.fields : rangeFields(field.rangeElementType)
      nested.push({ name: typeName, field: messageFields(inner, typeName, nested), nestedType: [] })
      return { ...base, type: protoTypes.message, typeName }
    }
    return { ...base, type: scalarProtoType(field.type) }
  })

/** The two NULLABLE bounds of a RANGE message. @internal */
export const rangeFields = (element: "DATE" | "DATETIME" | "TIMESTAMP"): ReadonlyArray<Field> => [
  { name: "start", type: element, mode: "NULLABLE" },
  { name: "end", type: element, mode: "NULLABLE" }
]

/** @internal */
export const toDescriptor = (schema: TableSchema): DescriptorProto => {
  const nested: Array<DescriptorProto> = []
  const field = messageFields(schema.fields, rootName, nested)
  return { name: rootName, field, nestedType: nested }
}

const writeMessage = (w: WireWriter, d: DescriptorProto): void => {
  w.uint32(tag(1, 2))
  w.string(d.name)
  for (const f of d.field) {
    w.uint32(tag(2, 2))
    const at = w.beginDelimited()
    w.uint32(tag(1, 2))
    w.string(f.name)
    w.uint32(tag(3, 0))
    w.uint32(f.number)
    w.uint32(tag(4, 0))
    w.uint32(f.label)
    w.uint32(tag(5, 0))
    w.uint32(f.type)
    if (f.typeName !== undefined) {
      w.uint32(tag(6, 2))
      w.string(f.typeName)
    }
    w.endDelimited(at)
  }
  for (const n of d.nestedType) {
    w.uint32(tag(3, 2))
    const at = w.beginDelimited()
    writeMessage(w, n)
    w.endDelimited(at)
  }
}

/** The encoded `google.protobuf.DescriptorProto`. @internal */
export const encodeDescriptor = (descriptor: DescriptorProto): Uint8Array => {
  const w = new WireWriter(256)
  writeMessage(w, descriptor)
  return w.take(0)
}
