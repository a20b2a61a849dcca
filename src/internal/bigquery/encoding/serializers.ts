/**
 * Building `RowSerializer` values whose in-place writer (`encodeInto`) cannot outlive the
 * `serialize` it belongs to: it is a non-enumerable property, so an object spread
 * (`{ ...serializer, serialize: f }`) drops it and the sink calls the overriding `serialize`.
 * Combinators (`filter`, `contramap`) wrap both functions, keeping the fast path.
 *
 * @internal
 */
import type { RowBuffer, RowSerializationError, RowSerializer } from "../../../BigQuery/RowSerializer.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"

/** The in-place writer of a serializer. @internal */
export type EncodeInto<A> = (
  buffer: RowBuffer,
  element: A,
  destination: TableDestination
) => undefined | null | RowSerializationError

/** The fields of a serializer other than `encodeInto`. @internal */
export type Fields<A> = Omit<RowSerializer<A>, "encodeInto">

/**
 * A serializer with `encodeInto`, when given, as a non-enumerable (and read-only) own property.
 *
 * @internal
 */
export const make = <A>(fields: Fields<A>, encodeInto: EncodeInto<A> | undefined): RowSerializer<A> => {
  const serializer: RowSerializer<A> = {
    tableSchema: fields.tableSchema,
    serialize: fields.serialize,
    ...(fields.descriptor === undefined ? {} : { descriptor: fields.descriptor }),
    ...(fields.fingerprint === undefined ? {} : { fingerprint: fields.fingerprint })
  }
  return encodeInto === undefined
    ? serializer
    : Object.defineProperty(serializer, "encodeInto", { value: encodeInto, enumerable: false, writable: false })
}

/**
 * `self`'s functions other than `encodeInto`, each called as `self`'s method: a serializer may be a
 * class instance whose methods read `this`, so a combinator never copies a function off it.
 *
 * @internal
 */
export const methodsOf = <A>(self: RowSerializer<A>): Fields<A> => {
  const { descriptor, fingerprint } = self
  return {
    tableSchema: (destination) => self.tableSchema(destination),
    serialize: (element, destination) => self.serialize(element, destination),
    ...(descriptor === undefined ? {} : { descriptor: (destination) => descriptor.call(self, destination) }),
    ...(fingerprint === undefined ? {} : { fingerprint: (destination) => fingerprint.call(self, destination) })
  }
}

/** `self`'s `encodeInto`, called as its method, when it has one. @internal */
export const encodeIntoOf = <A>(self: RowSerializer<A>): EncodeInto<A> | undefined => {
  const encodeInto = self.encodeInto
  return encodeInto === undefined
    ? undefined
    : (buffer, element, destination) => encodeInto.call(self, buffer, element, destination)
}

/** Records failing `predicate` are skipped (`null`), on both paths. @internal */
export const filter = <A>(
  self: RowSerializer<A>,
  predicate: (element: A, destination: TableDestination) => boolean
): RowSerializer<A> => {
  const { serialize, ...fields } = methodsOf(self)
  const inPlace = encodeIntoOf(self)
  return make(
    {
      ...fields,
      serialize: (element, destination) => predicate(element, destination) ? serialize(element, destination) : null
    },
    inPlace === undefined ?
      undefined :
      (buffer, element, destination) => predicate(element, destination) ? inPlace(buffer, element, destination) : null
  )
}

/** Records of type `B` serialized as `f(record)`, on both paths. @internal */
export const contramap = <A, B>(
  self: RowSerializer<A>,
  f: (element: B, destination: TableDestination) => A
): RowSerializer<B> => {
  const { serialize, ...fields } = methodsOf(self)
  const inPlace = encodeIntoOf(self)
  return make<B>(
    {
      ...fields,
      serialize: (element, destination) => serialize(f(element, destination), destination)
    },
    inPlace === undefined ?
      undefined :
      (buffer, element, destination) => inPlace(buffer, f(element, destination), destination)
  )
}
