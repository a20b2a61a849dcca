/**
 * A protobufjs message type as a BigQuery table: the table schema its fields map to, and a
 * self-contained proto2 descriptor keeping the type's own field numbers (so `Type.encode` output
 * is read correctly), with every referenced message declared flat inside the root.
 *
 * @internal
 */
import * as Result from "effect/Result"
import type * as protobuf from "protobufjs"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import { fail, maxDepth, nameError } from "../schema/model.ts"
import { labels, nestedTypeName, protoTypes, rootName } from "./descriptor.ts"

/** protobufjs scalar type names: their `FieldDescriptorProto.Type` number and column type. */
const scalars: Readonly<Record<string, readonly [number, TableSchema.ScalarType]>> = {
  double: [protoTypes.double, "FLOAT64"],
  float: [2, "FLOAT64"],
  int64: [protoTypes.int64, "INT64"],
  int32: [protoTypes.int32, "INT64"],
  sint64: [18, "INT64"],
  sint32: [17, "INT64"],
  sfixed64: [16, "INT64"],
  sfixed32: [15, "INT64"],
  uint32: [13, "INT64"],
  fixed32: [7, "INT64"],
  bool: [protoTypes.bool, "BOOL"],
  string: [protoTypes.string, "STRING"],
  bytes: [protoTypes.bytes, "BYTES"]
}

interface Described {
  readonly fields: ReadonlyArray<TableSchema.Field>
  readonly descriptorFields: Array<TableSchema.FieldDescriptorProto>
}

const describeType = (
  type: protobuf.Type,
  typeName: string,
  path: string,
  depth: number,
  nested: Array<TableSchema.DescriptorProto>
): Result.Result<Described, SinkConfigError> =>
  Result.gen(function*() {
    if (depth > maxDepth) return yield* fail(path, `messages nest at most ${maxDepth} levels deep`)
    const fields: Array<TableSchema.Field> = []
    const descriptorFields: Array<TableSchema.FieldDescriptorProto> = []
    for (const field of type.fieldsArray) {
      const fieldPath = `${path}.${field.name}`
      const badName = nameError(field.name)
      if (badName !== undefined) return yield* fail(fieldPath, `column name ${badName}`)
      if ("keyType" in field) return yield* fail(fieldPath, "map fields cannot be BigQuery columns")
      const required = field.required
      const mode = field.repeated ? "REPEATED" : required ? "REQUIRED" : "NULLABLE"
      const label = field.repeated ? labels.repeated : required ? labels.required : labels.optional
      const scalar = scalars[field.type]
      if (scalar !== undefined) {
        fields.push({ name: field.name, type: scalar[1], mode })
        descriptorFields.push({ name: field.name, number: field.id, label, type: scalar[0] })
        continue
      }
      const resolved = field.resolvedType
      if (resolved === null || !("fieldsArray" in resolved)) {
        return yield* fail(fieldPath, `protobuf type ${field.type} has no BigQuery column type`)
      }
      const nestedName = nestedTypeName(typeName, field.id)
      const inner = yield* describeType(resolved, nestedName, fieldPath, depth + 1, nested)
      nested.push({ name: nestedName, field: inner.descriptorFields, nestedType: [] })
      fields.push({ name: field.name, type: "RECORD", mode, fields: inner.fields })
      descriptorFields.push({
        name: field.name,
        number: field.id,
        label,
        type: protoTypes.message,
        typeName: nestedName
      })
    }
    if (fields.length === 0) return yield* fail(path, "a message needs at least one field")
    return { fields, descriptorFields }
  })

/** @internal */
export const describeMessage = (
  type: protobuf.Type,
  path: string
): Result.Result<
  { readonly schema: TableSchema.TableSchema; readonly descriptor: TableSchema.DescriptorProto },
  SinkConfigError
> => {
  const nested: Array<TableSchema.DescriptorProto> = []
  const resolved = Result.try({
    try: () => type.root.resolveAll(),
    catch: (cause) => new SinkConfigError({ path, detail: `cannot resolve the message type: ${String(cause)}` })
  })
  if (Result.isFailure(resolved)) return Result.fail(resolved.failure)
  return Result.map(describeType(type, rootName, path, 0, nested), ({ descriptorFields, fields }) => ({
    schema: { fields },
    descriptor: { name: rootName, field: descriptorFields, nestedType: nested }
  }))
}
