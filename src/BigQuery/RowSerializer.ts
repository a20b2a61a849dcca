/**
 * How a BigQuery sink turns records into rows: the serializer contract and its built-ins.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as protobuf from "protobufjs"
import * as descriptor from "../internal/bigquery/encoding/descriptor.ts"
import * as encoder from "../internal/bigquery/encoding/encoder.ts"
import * as derive from "../internal/bigquery/encoding/fromSchema.ts"
import { describeMessage } from "../internal/bigquery/encoding/protoMessage.ts"
import * as internal from "../internal/bigquery/encoding/serializers.ts"
import { WireWriter } from "../internal/bigquery/encoding/wireWriter.ts"
import * as model from "../internal/bigquery/schema/model.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { TableDestination } from "./TableDestination.ts"
import type { DescriptorProto, TableSchema } from "./TableSchema.ts"

/**
 * Why one record could not be serialized. A sink routes it to its failure handler as a `FailedRow`
 * (no payload); it never fails the write.
 *
 * **Details**
 *
 * `path` names the offending value (`items[2].price`; empty for the row itself) and `reason` says
 * what is wrong with it; `message` is both together.
 *
 * **Example** (A rejected value)
 * ```ts
 * import { RowSerializer } from "effect-gcp-sinks/BigQuery"
 * new RowSerializer.RowSerializationError({ path: "items[2].price", reason: "must be a number" }).message
 * // => "items[2].price: must be a number"
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class RowSerializationError extends Schema.TaggedError<RowSerializationError>()("RowSerializationError", {
  path: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  /**
   * `path: reason`, or the reason alone for the row itself.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return this.path === "" ? this.reason : `${this.path}: ${this.reason}`
  }
}

/**
 * Tells a serialization failure from row bytes or a skip.
 *
 * **Example** (Checking a result)
 * ```ts
 * import { RowSerializer } from "effect-gcp-sinks/BigQuery"
 * RowSerializer.isRowSerializationError(new RowSerializer.RowSerializationError({ path: "", reason: "no id" }))
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isRowSerializationError = (u: unknown): u is RowSerializationError => u instanceof RowSerializationError

/**
 * Turns records of type `A` into Storage Write API rows.
 *
 * **Details**
 *
 * - `tableSchema(destination)`: the schema of the destination as this serializer writes it; the
 *   source of truth for table creation and schema updates. Called when a destination is prepared,
 *   not per record.
 * - `descriptor(destination)` (optional): the `writer_schema` rows are encoded with; by default
 *   `TableSchema.toDescriptor(tableSchema(destination))`.
 * - `fingerprint(destination)` (optional): a cheap token compared (`===`) per record with the one
 *   captured when the destination was opened; a change means the schema evolved and the sink
 *   refreshes the destination before writing rows of the new schema. Absent: the schema is static.
 * - `serialize(element, destination)`: the row bytes (a message of the descriptor), `null` to skip
 *   the record (not a failure, counted as skipped), or a {@link RowSerializationError}, which is
 *   routed to the failure handler. It runs per record, synchronously, and must not throw.
 * - `encodeInto(buffer, element, destination)` (optional): the same row written in place into a
 *   sink's batch buffer (a {@link RowBuffer}) instead of returned: `undefined` once written, `null`
 *   to skip, or a {@link RowSerializationError}. A sink uses it instead of `serialize` when present,
 *   so a batch is encoded without a byte array per row; whatever it wrote before a skip or a failure
 *   is discarded. It must write what `serialize` would return.
 *
 * The built-in serializers (and {@link make}) hold `encodeInto` as a non-enumerable property: an
 * object spread such as `{ ...serializer, serialize: skipSome }` leaves it behind, so the sink calls
 * the `serialize` written there. {@link filter} and {@link contramap} change a serializer and keep
 * its in-place writer. A serializer may be a class instance: the sink and every combinator call its
 * functions as its methods (`this` is the serializer), and never copy one off it.
 *
 * Rows already serialized are never re-encoded, so schema changes must be wire compatible: append
 * columns (also inside RECORDs), relax REQUIRED to NULLABLE; never remove, reorder or retype.
 *
 * **Example** (A hand-written serializer)
 * ```ts
 * import { RowSerializer, TableSchema } from "effect-gcp-sinks/BigQuery"
 * declare const schema: TableSchema.TableSchema
 * declare const encode: (event: { readonly id: string }) => Uint8Array
 * const serializer: RowSerializer.RowSerializer<{ readonly id: string }> = {
 *   tableSchema: () => schema,
 *   serialize: (event) => (event.id === "" ? null : encode(event))
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface RowSerializer<A> {
  readonly tableSchema: (destination: TableDestination) => TableSchema
  readonly descriptor?: ((destination: TableDestination) => DescriptorProto) | undefined
  readonly fingerprint?: ((destination: TableDestination) => unknown) | undefined
  readonly serialize: (element: A, destination: TableDestination) => Uint8Array | null | RowSerializationError
  readonly encodeInto?:
    | ((buffer: RowBuffer, element: A, destination: TableDestination) => undefined | null | RowSerializationError)
    | undefined
}

/**
 * The growable byte buffer a sink hands to `RowSerializer.encodeInto`: the row's message bytes go at
 * `pos`, after a call to `ensure(n)` for the `n` bytes about to be written (which may replace `buf`),
 * and `pos` moves past them. The bytes before `pos` belong to other rows: never touch them.
 *
 * **Example** (Encoding in place with a protobufjs type)
 * ```ts
 * import type protobuf from "protobufjs"
 * import type { RowSerializer } from "effect-gcp-sinks/BigQuery"
 * declare const Event: protobuf.Type
 * const encodeInto = (buffer: RowSerializer.RowBuffer, event: { readonly id: string }) => {
 *   const bytes = Event.encode(event).finish()
 *   buffer.ensure(bytes.length)
 *   buffer.buf.set(bytes, buffer.pos)
 *   buffer.pos += bytes.length
 *   return undefined
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface RowBuffer {
  readonly buf: Uint8Array
  pos: number
  readonly ensure: (n: number) => void
}

/**
 * The descriptor a serializer's rows are encoded with for a destination.
 *
 * **Example** (The writer schema)
 * ```ts
 * import { RowSerializer, TableDestination } from "effect-gcp-sinks/BigQuery"
 * declare const serializer: RowSerializer.RowSerializer<unknown>
 * declare const table: TableDestination.TableDestination
 * const writerSchema = RowSerializer.descriptorOf(serializer, table)
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const descriptorOf = <A>(serializer: RowSerializer<A>, destination: TableDestination): DescriptorProto =>
  serializer.descriptor === undefined
    ? descriptor.toDescriptor(serializer.tableSchema(destination))
    : serializer.descriptor(destination)

/**
 * Builds a serializer from its functions, holding `encodeInto` (when given) so that an object
 * spread leaves it behind.
 *
 * **Details**
 *
 * The result is a plain object with `tableSchema`, `serialize` and, when given, `descriptor` and
 * `fingerprint`; `encodeInto` is a non-enumerable property. So `{ ...serializer, serialize: f }`
 * has no `encodeInto`, and the sink calls `f`: an override can never be bypassed by an in-place
 * writer of the original.
 *
 * **Example** (A serializer with an in-place writer)
 * ```ts
 * import { RowSerializer, TableSchema } from "effect-gcp-sinks/BigQuery"
 * declare const schema: TableSchema.TableSchema
 * declare const encode: (event: { readonly id: string }) => Uint8Array
 * const serializer = RowSerializer.make({
 *   tableSchema: () => schema,
 *   serialize: (event: { readonly id: string }) => encode(event),
 *   encodeInto: (buffer, event) => {
 *     const bytes = encode(event)
 *     buffer.ensure(bytes.length)
 *     buffer.buf.set(bytes, buffer.pos)
 *     buffer.pos += bytes.length
 *     return undefined
 *   }
 * })
 * Object.keys(serializer)
 * // => ["tableSchema", "serialize"]
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <A>(serializer: RowSerializer<A>): RowSerializer<A> =>
  internal.make(internal.methodsOf(serializer), internal.encodeIntoOf(serializer))

/**
 * Skips the records for which `predicate` is `false` (counted as skipped, like a `serialize` that
 * returns `null`) and serializes the others as `self` does, in place when `self` can.
 *
 * **When to use**
 *
 * To drop records before they are written, instead of spreading a serializer with another
 * `serialize`.
 *
 * **Example** (Skipping test events)
 * ```ts
 * import { Effect, pipe, Schema } from "effect"
 * import { RowSerializer, TableDestination } from "effect-gcp-sinks/BigQuery"
 * const all = Effect.runSync(RowSerializer.fromSchema(Schema.Struct({ id: Schema.String })))
 * const real = pipe(all, RowSerializer.filter((event) => event.id !== "test"))
 * const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
 * real.serialize({ id: "test" }, table)
 * // => null
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const filter: {
  <A>(predicate: (element: A, destination: TableDestination) => boolean): (self: RowSerializer<A>) => RowSerializer<A>
  <A>(self: RowSerializer<A>, predicate: (element: A, destination: TableDestination) => boolean): RowSerializer<A>
} = dual(2, internal.filter)

/**
 * Serializes records of another type `B` by mapping each to the `A` that `self` serializes, in
 * place when `self` can.
 *
 * **Example** (Rows from domain events)
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { RowSerializer } from "effect-gcp-sinks/BigQuery"
 * interface Clicked { readonly clickId: string }
 * const row = Effect.runSync(RowSerializer.fromSchema(Schema.Struct({ id: Schema.String })))
 * const clicks: RowSerializer.RowSerializer<Clicked> = RowSerializer.contramap(row, (event: Clicked) => ({
 *   id: event.clickId
 * }))
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const contramap: {
  <A, B>(f: (element: B, destination: TableDestination) => A): (self: RowSerializer<A>) => RowSerializer<B>
  <A, B>(self: RowSerializer<A>, f: (element: B, destination: TableDestination) => A): RowSerializer<B>
} = dual(2, internal.contramap)

const toError = (failure: encoder.EncodeFailure): RowSerializationError =>
  new RowSerializationError({ path: failure.path, reason: failure.message })

const compiled = <A>(schema: TableSchema, rejectUnknownFields: boolean): RowSerializer<A> => {
  const row = encoder.compile(schema, { rejectUnknownFields })
  const writerSchema = descriptor.toDescriptor(schema)
  const scratch = new WireWriter(4096)
  return internal.make<A>({
    tableSchema: () => schema,
    descriptor: () => writerSchema,
    serialize: (element) => {
      const bytes = row.serialize(element)
      return bytes instanceof Uint8Array ? bytes : toError(bytes)
    }
  }, (buffer, element) => {
    // a sink's batch buffer is a WireWriter: the compiled encoder writes into it directly
    if (buffer instanceof WireWriter) {
      const failure = row.encodeInto(buffer, element)
      return failure === undefined ? undefined : toError(failure)
    }
    scratch.pos = 0
    const failure = row.encodeInto(scratch, element)
    if (failure !== undefined) return toError(failure)
    buffer.ensure(scratch.pos)
    buffer.buf.set(scratch.buf.subarray(0, scratch.pos), buffer.pos)
    buffer.pos += scratch.pos
    return undefined
  })
}

/**
 * A serializer for values of an Effect `Schema` struct, writing the table derived by
 * `TableSchema.fromSchema`.
 *
 * **Details**
 *
 * Values are the schema's `Type` (decoded values: `Date`, `bigint`, `DateTime`, ...), encoded by a
 * compiled encoder without running the schema. Every value is checked against its column: a wrong
 * type, an out-of-range INT64, TIMESTAMP or DATE, a NUMERIC with too many digits, invalid JSON, a
 * lone surrogate in a string or a missing REQUIRED value gives a {@link RowSerializationError}
 * naming the field path. Keys the schema does not declare are ignored.
 *
 * **Example** (Serializing orders)
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { RowSerializer, TableDestination } from "effect-gcp-sinks/BigQuery"
 * const Order = Schema.Struct({ id: Schema.BigInt, placed: Schema.Date })
 * const serializer = Effect.runSync(RowSerializer.fromSchema(Order))
 * declare const table: TableDestination.TableDestination
 * serializer.serialize({ id: 1n, placed: new Date(0) }, table)
 * // => Uint8Array [8, 1, 16, 0]
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromSchema = <S extends Schema.Top>(
  schema: S,
  path = "schema"
): Effect.Effect<RowSerializer<S["Type"]>, SinkConfigError> =>
  Effect.suspend(() => Effect.fromResult(derive.fromSchema(schema.ast, path))).pipe(
    Effect.map((tableSchema) => compiled<S["Type"]>(tableSchema, false))
  )

/**
 * Options of {@link fromJson}.
 *
 * - `ignoreUnknownFields`: skip object keys that are not columns instead of failing the row
 *   (default `false`: an unknown key is a routed failure, never silently dropped).
 *
 * @category models
 * @since 0.1.0
 */
export interface FromJsonOptions {
  readonly ignoreUnknownFields?: boolean | undefined
}

/**
 * A serializer for plain objects (parsed JSON, database rows) checked against a table schema.
 *
 * **Details**
 *
 * Each column takes the values listed in the type docs of the encoder: STRING a string; INT64 a
 * safe integer, a bigint or an integer string; FLOAT64 a number (NaN and ±Infinity included, as
 * BigQuery stores them); NUMERIC/BIGNUMERIC a decimal string, a bigint or a `BigDecimal`; TIMESTAMP a
 * `Date`, a `DateTime`, a bigint of µs or an RFC 3339 string with a zone; DATE `YYYY-MM-DD`, days
 * since the epoch or a `Date` at midnight UTC; DATETIME `YYYY-MM-DD HH:MM:SS[.ffffff]` (`T` also
 * accepted); TIME `HH:MM:SS[.ffffff]`; GEOGRAPHY WKT or GeoJSON text; JSON JSON text or a JSON value;
 * BYTES a `Uint8Array`; RECORD an object; RANGE `{ start, end }` (a missing bound is unbounded);
 * REPEATED an array without nulls (missing or null is written as empty). `null` and missing values
 * are NULL; a REQUIRED column without a value fails the row.
 *
 * **Example** (Rows from JSON)
 * ```ts
 * import { Effect } from "effect"
 * import { RowSerializer, TableSchema, type TableDestination } from "effect-gcp-sinks/BigQuery"
 * const schema = { fields: [TableSchema.field({ name: "price", type: "NUMERIC", mode: "REQUIRED" })] }
 * const serializer = Effect.runSync(RowSerializer.fromJson(schema))
 * declare const table: TableDestination.TableDestination
 * String(serializer.serialize({ price: "1.0000000001" }, table))
 * // => "RowSerializationError: price: NUMERIC takes at most 9 fractional digits, was '1.0000000001'"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromJson = (
  tableSchema: TableSchema,
  options: FromJsonOptions = {},
  path = "schema"
): Effect.Effect<RowSerializer<unknown>, SinkConfigError> =>
  Effect.suspend(() => Effect.fromResult(model.decodeSchema(tableSchema, "model", path))).pipe(
    Effect.map((schema) => compiled<unknown>(schema, options.ignoreUnknownFields !== true))
  )

/**
 * A serializer for protobufjs messages of one type, encoded with `Type.encode`.
 *
 * **Details**
 *
 * The table schema is derived from the message fields (`double`/`float` FLOAT64; signed integers,
 * `uint32` and `fixed32` INT64; `bool` BOOL; `string` STRING; `bytes` BYTES; messages RECORD;
 * `repeated` REPEATED; `required` REQUIRED; others NULLABLE). `uint64`, `fixed64`, enums and maps
 * have no exact column type and fail with a `SinkConfigError`. The descriptor keeps the message's own
 * field numbers. Each record is checked with `Type.verify` first; a failed check or a throwing
 * `encode` is a {@link RowSerializationError}.
 *
 * **Example** (A protobufjs type)
 * ```ts
 * import { Effect } from "effect"
 * import protobuf from "protobufjs"
 * import { RowSerializer } from "effect-gcp-sinks/BigQuery"
 * const Event = new protobuf.Type("Event").add(new protobuf.Field("id", 1, "int64", "required"))
 * new protobuf.Root().add(Event)
 * const serializer = Effect.runSync(RowSerializer.proto(Event))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const proto = <A extends object = Record<string, unknown>>(
  messageType: protobuf.Type,
  path = "messageType"
): Effect.Effect<RowSerializer<A>, SinkConfigError> =>
  Effect.suspend(() => Effect.fromResult(describeMessage(messageType, path))).pipe(
    Effect.map(({ descriptor: writerSchema, schema }): RowSerializer<A> => ({
      tableSchema: () => schema,
      descriptor: () => writerSchema,
      serialize: (element) => {
        const problem = messageType.verify(element)
        if (problem !== null) return new RowSerializationError({ path: "", reason: problem })
        const bytes = Result.try({
          try: () => messageType.encode(element).finish(),
          catch: (cause) =>
            new RowSerializationError({
              path: "",
              reason: Predicate.hasProperty(cause, "message") ? String(cause.message) : "encode failed",
              cause
            })
        })
        return Result.isSuccess(bytes) ? bytes.success : bytes.failure
      }
    }))
  )
