/**
 * The compiled row encoder: a `TableSchema` becomes, once, a tree of closures that validate a row
 * and write its proto2 wire bytes for the descriptor of `descriptor.ts` (same field numbers, labels
 * and unpacked repeated fields) into a reused {@link WireWriter}. Per row it allocates nothing but the
 * output bytes; an invalid value stops the row with an {@link EncodeFailure} naming the field path.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import type { Field, TableSchema } from "../../../BigQuery/TableSchema.ts"
import { isRequiredOnWire, rangeFields } from "./descriptor.ts"
import { type ScalarEncoder, scalarEncoder, wireTypeOf } from "./scalarEncoders.ts"
import { describeValue as describe } from "./valueText.ts"
import { tag, WireWriter } from "./wireWriter.ts"

/**
 * Why a row cannot be encoded. `segments` holds the path innermost first while the failure
 * travels up; {@link EncodeFailure.path} renders it as `items[2].price`.
 *
 * @internal
 */
export class EncodeFailure {
  readonly segments: Array<string | number>
  readonly message: string
  constructor(segment: string | number | undefined, message: string) {
    this.segments = segment === undefined ? [] : [segment]
    this.message = message
  }
  get path(): string {
    let out = ""
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const s = this.segments[i]
      out += typeof s === "number" ? `[${s}]` : out === "" ? s : `.${s}`
    }
    return out
  }
}

/** Writes the fields of one message (no tag, no length) or fails. @internal */
export type MessageEncoder = (w: WireWriter, value: Readonly<Record<string, unknown>>) => EncodeFailure | undefined

/** Writes one present field value, tag included. */
type ValueWriter = (w: WireWriter, value: unknown) => EncodeFailure | undefined

interface CompiledField {
  readonly name: string
  readonly required: boolean
  readonly write: ValueWriter
  /** A singular scalar of fields 1 to 15: what its writer calls, for a generated walk to call directly. */
  readonly scalar: OneByteScalar | undefined
}

/** A scalar field whose key takes one byte, and its value's encoder. */
interface OneByteScalar {
  readonly key: number
  readonly encode: ScalarEncoder
}

/** Options of {@link compileMessage}. @internal */
export interface CompileOptions {
  /** Refuse object keys that are not fields (with a value other than `undefined`). */
  readonly rejectUnknownFields: boolean
  /** The number of the first field; later fields follow in order. */
  readonly firstFieldNumber?: number | undefined
  /** Generate each message's field walk as code (the default); `false` for the plain loop. */
  readonly generate?: boolean | undefined
}

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  Predicate.isObject(u) && !Array.isArray(u) && !(u instanceof Uint8Array)

const singular = (field: Field, number: number, options: CompileOptions): ValueWriter => {
  if (field.type === "RECORD" || field.type === "RANGE") {
    const inner = compileMessage(field.type === "RECORD" ? field.fields : rangeFields(field.rangeElementType), options)
    const key = tag(number, 2)
    const kind = field.type === "RECORD" ? "a RECORD takes an object" : "a RANGE takes an object { start, end }"
    return (w, v) => {
      if (!isRecord(v)) return new EncodeFailure(undefined, `${kind}, was ${describe(v)}`)
      w.uint32(key)
      const at = w.beginDelimited()
      const failure = inner(w, v)
      w.endDelimited(at)
      return failure
    }
  }
  const encode = scalarEncoder(field.type, field)
  const key = tag(number, wireTypeOf(field.type))
  return (w, v) => {
    w.uint32(key)
    const message = encode(w, v)
    return message === undefined ? undefined : new EncodeFailure(undefined, message)
  }
}

/** A scalar field's key and encoder when its key takes one byte (the rest are {@link singular}'s). */
const oneByteScalar = (field: Field, number: number): OneByteScalar | undefined => {
  if (field.type === "RECORD" || field.type === "RANGE") return undefined
  const key = tag(number, wireTypeOf(field.type))
  return key < 128 ? { key, encode: scalarEncoder(field.type, field) } : undefined
}

/** A scalar field's writer with a one-byte key (fields 1 to 15: most columns), written without the varint loop. */
const oneByteWriter = ({ encode, key }: OneByteScalar): ValueWriter => (w, v) => {
  w.byte(key)
  const message = encode(w, v)
  return message === undefined ? undefined : new EncodeFailure(undefined, message)
}

const repeated = (element: ValueWriter): ValueWriter => (w, v) => {
  if (!Array.isArray(v)) return new EncodeFailure(undefined, `a REPEATED column takes an array, was ${describe(v)}`)
  for (let i = 0; i < v.length; i++) {
    const item: unknown = v[i]
    const failure = item === null || item === undefined
      ? new EncodeFailure(undefined, "an array element cannot be NULL")
      : element(w, item)
    if (failure !== undefined) {
      failure.segments.push(i)
      return failure
    }
  }
  return undefined
}

/** Compiles the fields of a message into its encoder. */
const compileMessage = (fields: ReadonlyArray<Field>, options: CompileOptions): MessageEncoder => {
  const first = options.firstFieldNumber ?? 1
  const compiled: ReadonlyArray<CompiledField> = fields.map((field, index) => {
    const number = first + index
    const scalar = oneByteScalar(field, number)
    const write = scalar !== undefined ? oneByteWriter(scalar) : singular(field, number, {
      rejectUnknownFields: options.rejectUnknownFields,
      generate: options.generate
    })
    const repeats = field.mode === "REPEATED"
    return {
      name: field.name,
      required: isRequiredOnWire(field),
      write: repeats ? repeated(write) : write,
      scalar: repeats ? undefined : scalar
    }
  })
  const names: ReadonlySet<string> = new Set(fields.map((f) => f.name))
  const known = (options.generate === false ? undefined : specialize(compiled)) ?? loop(compiled)
  if (!options.rejectUnknownFields) return known
  return (w, value) => {
    for (const key in value) {
      if (!names.has(key) && value[key] !== undefined) {
        return new EncodeFailure(key, "is not a column of the table schema")
      }
    }
    return known(w, value)
  }
}

/** Reads each field by a name that changes from one iteration to the next (a megamorphic load). */
const loop = (compiled: ReadonlyArray<CompiledField>): MessageEncoder => (w, value) => {
  for (const field of compiled) {
    const v = value[field.name]
    if (v === undefined || v === null) {
      if (field.required) return new EncodeFailure(field.name, "is REQUIRED but missing")
      continue
    }
    const failure = field.write(w, v)
    if (failure !== undefined) {
      failure.segments.push(field.name)
      return failure
    }
  }
  return undefined
}

const isMessageEncoder = (u: unknown): u is MessageEncoder => typeof u === "function"

/**
 * The same walk as {@link loop}, generated once per message with one constant-name read per field,
 * as protobufjs generates its encoders: each read is then monomorphic for a row shape, and a double
 * is not boxed on its way to the field's writer (about 20% of the encoding time of a 10-column
 * row). Names are embedded as JSON string literals; `undefined` when the runtime refuses code
 * generation from strings, and the loop is used instead.
 */
const specialize = (compiled: ReadonlyArray<CompiledField>): MessageEncoder | undefined => {
  const steps = compiled.map((field, i) =>
    `v = value[${JSON.stringify(field.name)}]\n` +
    `if (v === undefined || v === null) {${field.required ? ` return missing(${i})` : ""} }\n` +
    (field.scalar === undefined
      ? `else { failure = f${i}(w, v); if (failure !== undefined) return located(failure, ${i}) }`
      // a scalar's key written and its encoder called here, not through the field's writer: a call
      // site of its own, so the compiler can inline the encoder (a writer's call of it is shared by
      // every field of its kind, and sees many encoders); the key without a call of `byte`, whose
      // bytecode would count against what V8 inlines into this function (ADR 0011)
      : `else { if (w.pos >= w.capacity) w.ensure(1); w.buf[w.pos++] = ${field.scalar.key}\n` +
        `message = f${i}(w, v); if (message !== undefined) return refused(message, ${i}) }`)
  )
  // each writer in its own binding: every call site sees one target
  const bindings = compiled.map((_, i) => `const f${i} = writers[${i}]\n`).join("")
  const source = `"use strict"\n${bindings}return function known(w, value) {\nlet v, failure, message\n` +
    `${steps.join("\n")}\nreturn undefined\n}`
  const missing = (i: number): EncodeFailure => new EncodeFailure(compiled[i]?.name, "is REQUIRED but missing")
  const located = (failure: EncodeFailure, i: number): EncodeFailure => {
    const name = compiled[i]?.name
    if (name !== undefined) failure.segments.push(name)
    return failure
  }
  const refused = (message: string, i: number): EncodeFailure => new EncodeFailure(compiled[i]?.name, message)
  const writers: ReadonlyArray<ValueWriter | ScalarEncoder> = compiled.map((field) =>
    field.scalar === undefined ? field.write : field.scalar.encode
  )
  try {
    const made: unknown = new Function("writers", "missing", "located", "refused", source)(
      writers,
      missing,
      located,
      refused
    )
    return isMessageEncoder(made) ? made : undefined
  } catch {
    return undefined
  }
}

/**
 * A compiled row encoder with its own writer: `serialize` returns the row's bytes (a fresh copy)
 * or the failure; `encodeInto` appends to a caller's writer (a batch buffer).
 *
 * @internal
 */
export interface RowEncoder {
  readonly serialize: (row: unknown) => Uint8Array | EncodeFailure
  readonly encodeInto: (w: WireWriter, row: unknown) => EncodeFailure | undefined
}

/** Compiles a table schema into its row encoder. @internal */
export const compile = (schema: TableSchema, options: CompileOptions): RowEncoder => {
  const message = compileMessage(schema.fields, options)
  const writer = new WireWriter(4096)
  const encodeInto = (w: WireWriter, row: unknown): EncodeFailure | undefined => {
    if (!isRecord(row)) return new EncodeFailure(undefined, `a row must be an object, was ${describe(row)}`)
    const start = w.pos
    const failure = message(w, row)
    if (failure !== undefined) w.pos = start
    return failure
  }
  return {
    encodeInto,
    serialize: (row) => {
      writer.pos = 0
      const failure = encodeInto(writer, row)
      return failure === undefined ? writer.take(0) : failure
    }
  }
}
