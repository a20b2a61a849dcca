import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import descriptorExt from "protobufjs/ext/descriptor/index.js"
import * as TableSchema from "../../../../src/BigQuery/TableSchema.ts"
import { tableSchemaArb } from "../../../BigQuery/arbitraries.ts"

describe("TableSchema.toDescriptor", () => {
  it("encodes to bytes protobufjs reads back as the same DescriptorProto", () => {
    fc.assert(fc.property(tableSchemaArb, (schema) => {
      const plain = TableSchema.toDescriptor(schema)
      const decoded = descriptorExt.DescriptorProto.toObject(
        descriptorExt.DescriptorProto.decode(TableSchema.toDescriptorBytes(schema)),
        {
          enums: Number
        }
      )
      const normalize = (d: TableSchema.DescriptorProto): unknown => ({
        name: d.name,
        field: d.field.map((f) => ({ ...f })),
        ...(d.nestedType.length === 0 ? {} : { nestedType: d.nestedType.map(normalize) })
      })
      assert.deepStrictEqual(decoded, normalize(plain))
    }))
  })

  it("numbers fields 1..N in schema order with proto2 labels and BigQuery's encodings", () => {
    const schema: TableSchema.TableSchema = {
      fields: [
        TableSchema.field({ name: "s", type: "STRING", mode: "REQUIRED" }),
        TableSchema.field({ name: "i", type: "INT64", mode: "REPEATED" }),
        TableSchema.field({ name: "t", type: "TIMESTAMP" }),
        TableSchema.field({ name: "d", type: "DATE" }),
        TableSchema.field({ name: "f", type: "FLOAT64" }),
        TableSchema.field({ name: "b", type: "BOOL" }),
        TableSchema.field({ name: "y", type: "BYTES" }),
        TableSchema.field({ name: "n", type: "NUMERIC", mode: "REQUIRED", defaultValueExpression: "0" }),
        TableSchema.record({ name: "r", fields: [TableSchema.range({ name: "p", rangeElementType: "DATETIME" })] })
      ]
    }
    assert.deepStrictEqual(TableSchema.toDescriptor(schema), {
      name: "__ROOT__",
      field: [
        { name: "s", number: 1, label: 2, type: 9 },
        { name: "i", number: 2, label: 3, type: 3 },
        { name: "t", number: 3, label: 1, type: 3 },
        { name: "d", number: 4, label: 1, type: 5 },
        { name: "f", number: 5, label: 1, type: 1 },
        { name: "b", number: 6, label: 1, type: 8 },
        { name: "y", number: 7, label: 1, type: 12 },
        { name: "n", number: 8, label: 1, type: 9 },
        { name: "r", number: 9, label: 1, type: 11, typeName: "__ROOT__F9" }
      ],
      nestedType: [
        {
          name: "__ROOT__F9_1",
          field: [{ name: "start", number: 1, label: 1, type: 9 }, { name: "end", number: 2, label: 1, type: 9 }],
          nestedType: []
        },
        {
          name: "__ROOT__F9",
          field: [{ name: "p", number: 1, label: 1, type: 11, typeName: "__ROOT__F9_1" }],
          nestedType: []
        }
      ]
    })
  })
})
