/**
 * Appending additional physical columns to serialized rows: the provider values are validated and
 * encoded as extra fields numbered after the base descriptor's highest field number, and the
 * descriptor and table schema are extended to match.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import type { AdditionalField, AdditionalFields } from "../../BigQuery/AdditionalFields.ts"
import type { DescriptorProto, Field, TableSchema } from "../../BigQuery/TableSchema.ts"
import { labels, scalarProtoType } from "./descriptor.ts"
import { EncodeFailure } from "./encoder.ts"
import { scalarEncoder, wireTypeOf } from "./scalarEncoders.ts"
import { tag, WireWriter } from "./wireWriter.ts"

/** The column of an additional field. */
const columnOf = <A>(field: AdditionalField<A>): Field => ({
  name: field.name,
  type: field.type,
  mode: field.nullPolicy
})

/** The schema with the additional columns appended (collisions are not checked here). @internal */
export const appendColumns = <A>(schema: TableSchema, additional: AdditionalFields<A>): TableSchema => ({
  fields: [...schema.fields, ...additional.fields.map(columnOf)]
})

const firstFreeNumber = (descriptor: DescriptorProto): number =>
  descriptor.field.reduce((max, f) => Math.max(max, f.number), 0) + 1

/** The descriptor with the additional fields appended. @internal */
export const appendDescriptor = <A>(descriptor: DescriptorProto, additional: AdditionalFields<A>): DescriptorProto => {
  const first = firstFreeNumber(descriptor)
  return {
    ...descriptor,
    field: [
      ...descriptor.field,
      ...additional.fields.map((f, i) => ({
        name: f.name,
        number: first + i,
        label: f.nullPolicy === "REQUIRED" ? labels.required : labels.optional,
        type: scalarProtoType(f.type)
      }))
    ]
  }
}

/** Encodes the additional fields of one element after a row's bytes. @internal */
export type AdditionalEncoder<A> = (element: A, row: Uint8Array) => Uint8Array | EncodeFailure

/** Compiles the additional fields for a base descriptor. @internal */
export const compile = <A>(additional: AdditionalFields<A>, base: DescriptorProto): AdditionalEncoder<A> => {
  const first = firstFreeNumber(base)
  const writer = new WireWriter(256)
  const fields = additional.fields.map((f, i) => ({
    name: f.name,
    required: f.nullPolicy === "REQUIRED",
    provider: f.provider,
    key: tag(first + i, wireTypeOf(f.type)),
    encode: scalarEncoder(f.type)
  }))
  return (element, row) => {
    writer.pos = 0
    writer.ensure(row.length)
    writer.buf.set(row, 0)
    writer.pos = row.length
    for (const field of fields) {
      const value = Result.try({ try: () => field.provider(element), catch: (cause) => cause })
      if (Result.isFailure(value)) {
        const cause = value.failure
        const detail = Predicate.hasProperty(cause, "message") ? String(cause.message) : String(cause)
        return new EncodeFailure(field.name, `the provider threw: ${detail}`)
      }
      const v = value.success
      if (v === null || v === undefined) {
        if (field.required) return new EncodeFailure(field.name, "is REQUIRED but the provider gave no value")
        continue
      }
      writer.uint32(field.key)
      const message = field.encode(writer, v)
      if (message !== undefined) return new EncodeFailure(field.name, message)
    }
    return writer.take(0)
  }
}
