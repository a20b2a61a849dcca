/**
 * The one protobuf wire reader of the hand-written decoders (Bigtable's `MutateRowsResponse`, the
 * Storage Write API's `AppendRowsResponse`, `google.rpc.Status`, `StorageError`): a cursor with
 * exact 64-bit varints, and a decoder of small declarative message tables for messages read
 * rarely enough that a table lookup per field costs nothing that matters.
 *
 * **Details**
 *
 * - Every read is bounded by the `end` of the (sub)message it is in, so a value cannot run out of
 *   its parent. Unknown fields are skipped by wire type; groups, wire types 6 and 7, a truncated
 *   value, a varint over 10 bytes, field number 0 and nesting deeper than 100 are malformed.
 * - Errors are `RangeError`s naming the message being decoded (the reader's `label`).
 *
 * @internal
 */

const two32 = 4_294_967_296
/** protobufjs's nesting limit, so that a hostile message cannot exhaust the stack. */
const maxDepth = 100
// non-fatal, as protobufjs: a bad byte sequence becomes U+FFFD rather than a failed call
const utf8 = new TextDecoder("utf-8", { fatal: false })

/**
 * A cursor over one message's bytes. `lo` and `hi` hold the halves of the last varint read, so a
 * 64-bit value is exact without a `BigInt` or `Long` per read.
 *
 * @internal
 */
export class ProtoReader {
  readonly buf: Uint8Array
  /** What is being decoded, for error messages (e.g. `"MutateRowsResponse"`). */
  readonly label: string
  pos = 0
  lo = 0
  hi = 0
  constructor(buf: Uint8Array, label: string) {
    this.buf = buf
    this.label = label
  }
  /** A `RangeError` saying what is wrong with the message. */
  malformed(what: string): RangeError {
    return new RangeError(`${what} in ${this.label}`)
  }
  /**
   * The next byte if it is a whole varint (below 0x80) inside `end`, else -1. Keys, lengths,
   * indexes and codes mostly are: this path reads them without touching `lo` / `hi`.
   */
  private small(end: number): number {
    const pos = this.pos
    if (pos >= end) return -1
    const b = this.buf[pos] ?? 0
    if (b >= 0x80) return -1
    this.pos = pos + 1
    return b
  }
  /** Reads a varint into `lo` / `hi`; bits past the 64th are dropped, as protobufjs drops them. */
  varint(end: number): void {
    let lo = 0
    let hi = 0
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) throw this.malformed("truncated varint")
      const b = this.buf[this.pos++] ?? 0
      const bits = b & 0x7f
      if (i < 4) {
        lo |= bits << (7 * i)
      } else if (i === 4) {
        lo |= bits << 28
        hi = bits >>> 4
      } else {
        hi |= bits << (7 * i - 32)
      }
      if (b < 0x80) {
        this.lo = lo >>> 0
        this.hi = hi >>> 0
        return
      }
    }
    throw this.malformed("varint longer than 10 bytes")
  }
  /** An `int32` or enum: the low 32 bits, signed. */
  int32(end: number): number {
    const b = this.small(end)
    if (b >= 0) return b
    this.varint(end)
    return this.lo | 0
  }
  /** An `int64` as the nearest number (one rounding of the exact value, as `Long.toNumber`). */
  int64(end: number): number {
    const b = this.small(end)
    if (b >= 0) return b
    this.varint(end)
    return (this.hi | 0) * two32 + this.lo
  }
  /** A field key (`field number << 3 | wire type`); field number 0 is malformed. */
  key(end: number): number {
    const b = this.small(end)
    if (b >= 8) return b
    if (b >= 0) throw this.malformed("invalid field key")
    this.varint(end)
    if (this.hi !== 0 || this.lo < 8) throw this.malformed("invalid field key")
    return this.lo
  }
  /** The end offset of the length-delimited value whose length is next. */
  delimited(end: number): number {
    let length = this.small(end)
    if (length < 0) {
      this.varint(end)
      length = this.hi * two32 + this.lo
    }
    const to = this.pos + length
    if (to > end) throw this.malformed("truncated length-delimited value")
    return to
  }
  /** A `bytes` value: a view of the input, not a copy. */
  bytes(end: number): Uint8Array {
    const to = this.delimited(end)
    const out = this.buf.subarray(this.pos, to)
    this.pos = to
    return out
  }
  string(end: number): string {
    const to = this.delimited(end)
    const out = utf8.decode(this.buf.subarray(this.pos, to))
    this.pos = to
    return out
  }
  /** Skips an unknown field's value. Groups (deprecated, never in proto3) are malformed. */
  skip(wire: number, end: number): void {
    switch (wire) {
      case 0:
        this.varint(end)
        return
      case 1:
        this.pos += 8
        break
      case 2:
        this.pos = this.delimited(end)
        return
      case 5:
        this.pos += 4
        break
      default:
        throw this.malformed(`unsupported wire type ${wire}`)
    }
    if (this.pos > end) throw this.malformed("truncated fixed-width value")
  }
}

// ---------------------------------------------------------------------------------------------
// Declarative messages

/**
 * How one singular field is read: its wire type and the read of one value at `r.pos`.
 *
 * @internal
 */
export interface Kind<A> {
  readonly wire: 0 | 2
  readonly read: (r: ProtoReader, end: number, depth: number) => A
}

/**
 * A repeated message field: every occurrence appends one element.
 *
 * @internal
 */
export interface Repeated<A> {
  readonly repeated: Kind<A>
}

type Spec<T> = [T] extends [ReadonlyArray<infer E>] ? Repeated<E> : Kind<T>

/**
 * A message's field table: each property of `A` with its field number and kind, so the compiler
 * checks the table against the decoded shape.
 *
 * @internal
 */
export type Fields<A> = { readonly [P in keyof A]-?: readonly [number, Spec<NonNullable<A[P]>>] }

interface Entry {
  readonly name: string
  readonly kind: Kind<unknown>
  readonly repeated: boolean
}

/**
 * A message type: its fields indexed by field number.
 *
 * @internal
 */
export interface MessageType<A> {
  readonly byNumber: ReadonlyArray<Entry | undefined>
  /** Phantom: the decoded shape. */
  readonly _A?: A
}

/** @internal */
export const messageType = <A>(fields: Fields<A>): MessageType<A> => {
  const byNumber: Array<Entry | undefined> = []
  for (const [name, [number, spec]] of Object.entries<readonly [number, Kind<unknown> | Repeated<unknown>]>(fields)) {
    byNumber[number] = "repeated" in spec
      ? { name, kind: spec.repeated, repeated: true }
      : { name, kind: spec, repeated: false }
  }
  return { byNumber }
}

/** @internal */
export const int32: Kind<number> = { wire: 0, read: (r, end) => r.int32(end) }
/** @internal */
export const int64: Kind<number> = { wire: 0, read: (r, end) => r.int64(end) }
/** @internal */
export const string: Kind<string> = { wire: 2, read: (r, end) => r.string(end) }
/** @internal */
export const bytes: Kind<Uint8Array> = { wire: 2, read: (r, end) => r.bytes(end) }

/**
 * A sub-message field. The type is a thunk so that a message can contain itself.
 *
 * @internal
 */
export const message = <A>(type: () => MessageType<A>): Kind<A> => ({
  wire: 2,
  read: (r, end, depth) => {
    if (depth >= maxDepth) throw r.malformed("maximum nesting depth exceeded")
    const to = r.delimited(end)
    const out = decodeFields(r, to, type(), depth + 1)
    r.pos = to
    return out
  }
})

/**
 * A repeated sub-message field.
 *
 * @internal
 */
export const repeated = <A>(type: () => MessageType<A>): Repeated<A> => ({ repeated: message(type) })

/**
 * Decodes the message from `r.pos` to `end` at nesting `depth` into a plain object holding only
 * the fields present on the wire (a repeated field's array is created with its first element).
 * A known field on another wire type is malformed.
 *
 * @internal
 */
export const decodeFields = <A>(r: ProtoReader, end: number, type: MessageType<A>, depth: number): A => {
  const out: Record<string, unknown> = {}
  const { byNumber } = type
  while (r.pos < end) {
    const key = r.key(end)
    const entry = byNumber[key >>> 3]
    if (entry === undefined) {
      r.skip(key & 7, end)
      continue
    }
    if ((key & 7) !== entry.kind.wire) throw r.malformed(`field ${key >>> 3} has wire type ${key & 7}`)
    const value = entry.kind.read(r, end, depth)
    if (!entry.repeated) out[entry.name] = value
    else {
      const items = out[entry.name]
      if (Array.isArray(items)) items.push(value)
      else out[entry.name] = [value]
    }
  }
  // the table is checked against A by Fields<A>; this object holds exactly what it read
  return out as A
}

/**
 * Decodes a whole message. Throws a `RangeError` naming `label` on bytes that are not a
 * well-formed message.
 *
 * @internal
 */
export const decode = <A>(input: Uint8Array, type: MessageType<A>, label: string): A =>
  decodeFields(new ProtoReader(input, label), input.length, type, 0)
