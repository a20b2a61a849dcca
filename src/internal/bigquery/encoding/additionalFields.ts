/**
 * Appending additional physical columns to serialized rows: the provider values are validated and
 * encoded as extra fields numbered after the base descriptor's highest field number, and the
 * descriptor and table schema are extended to match.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import type { AdditionalField, AdditionalFields } from "../../../BigQuery/AdditionalFields.ts"
import { descriptorOf, RowSerializationError, type RowSerializer } from "../../../BigQuery/RowSerializer.ts"
import type { DescriptorProto, Field, TableSchema } from "../../../BigQuery/TableSchema.ts"
import * as check from "../../options/schema.ts"
import { nameError, scalarTypes } from "../schema/model.ts"
import { labels, scalarProtoType } from "./descriptor.ts"
import { EncodeFailure } from "./encoder.ts"
import { scalarEncoder, wireTypeOf } from "./scalarEncoders.ts"
import { methodsOf } from "./serializers.ts"
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

/** `AdditionalFields.make`: validates the fields (they may come from JavaScript). @internal */
export const make = Effect.fnUntraced(
  function*<A>(fields: ReadonlyArray<AdditionalField<A>>, path = "additionalFields") {
    if (!Array.isArray(fields) || fields.length === 0) return yield* check.fail(path, "must have at least one field")
    const seen = new Set<string>()
    for (const [i, field] of fields.entries()) {
      const at = `${path}[${i}]`
      // from JavaScript an element may be anything: a SinkConfigError, never a TypeError
      const given: unknown = field
      if (!check.isRecord(given)) return yield* check.fail(at, `must be an object, was ${check.describe(given)}`)
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
  }
)

/** `AdditionalFields.extendSchema`. @internal */
export const extendSchema = Effect.fnUntraced(
  function*<A>(additional: AdditionalFields<A>, schema: TableSchema, path = "additionalFields") {
    for (const [i, field] of additional.fields.entries()) {
      const clash = schema.fields.find((f) => f.name.toLowerCase() === field.name.toLowerCase())
      if (clash !== undefined) {
        return yield* check.fail(`${path}[${i}].name`, `collides with the serializer's column '${clash.name}'`)
      }
    }
    return appendColumns(schema, additional)
  }
)

/** `AdditionalFields.augment`. @internal */
export const augment = <A>(serializer: RowSerializer<A>, additional: AdditionalFields<A>): RowSerializer<A> => {
  const compiled = new WeakMap<object, AdditionalEncoder<A>>()
  const { fingerprint } = methodsOf(serializer)
  return {
    tableSchema: (destination) => appendColumns(serializer.tableSchema(destination), additional),
    descriptor: (destination) => appendDescriptor(descriptorOf(serializer, destination), additional),
    ...(fingerprint === undefined ? {} : { fingerprint }),
    serialize: (element, destination) => {
      const row = serializer.serialize(element, destination)
      if (!(row instanceof Uint8Array)) return row
      const key: object = serializer.descriptor === undefined
        ? serializer.tableSchema(destination)
        : serializer.descriptor(destination)
      let encode = compiled.get(key)
      if (encode === undefined) {
        encode = compile(additional, descriptorOf(serializer, destination))
        compiled.set(key, encode)
      }
      const out = encode(element, row)
      return out instanceof Uint8Array ? out : new RowSerializationError({ path: out.path, reason: out.message })
    }
  }
}
