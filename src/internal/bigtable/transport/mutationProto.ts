/**
 * Mutations as exact protobuf wire bytes: the size of each `MutateRowsRequest.Entry` (measured and
 * validated once, at admission: what batch thresholds count), a whole `MutateRowsRequest` encoded
 * straight from the entries into one buffer per request (ADR 0010), and one entry's bytes (the
 * payload of a `FailedMutation`).
 *
 * @internal
 */
import type { BytesInput, Mutation, SetCell, ValueInput } from "../../../Bigtable/Mutation.ts"
import type { RowMutationEntry } from "../../../Bigtable/RowMutationEntry.ts"
import { int64Size, uint32Size, writeBigint, writeInt64, writeUint } from "../../wire/varint.ts"

const utf8 = new TextEncoder()

// ---------------------------------------------------------------------------------------------
// Input normalisation (used by the public constructors; throws, so a serializer routes the record)

/**
 * UTF-8 bytes of text. `Buffer.from` (a `Uint8Array`) is used because it allocates short strings
 * from Node's shared pool, markedly cheaper than `TextEncoder.encode` on the per-record path.
 *
 * @internal
 */
export const bytes = (input: BytesInput): Uint8Array => (typeof input === "string" ? Buffer.from(input, "utf8") : input)

const int64Min = -(2n ** 63n)
const int64Max = 2n ** 63n - 1n

/** @internal */
export const int64 = (input: number | bigint): bigint => {
  if (typeof input === "number" && !Number.isSafeInteger(input)) {
    throw new RangeError(`an int64 input must be a safe integer or a bigint, was ${input}`)
  }
  const value = BigInt(input)
  if (value < int64Min || value > int64Max) throw new RangeError(`${value} is outside the int64 range`)
  return value
}

/** 8-byte big-endian two's complement, Bigtable's int64 cell encoding. @internal */
export const int64Bytes = (value: bigint): Uint8Array => {
  const out = new Uint8Array(8)
  new DataView(out.buffer).setBigInt64(0, value)
  return out
}

/** @internal */
export const value = (input: ValueInput): Uint8Array =>
  typeof input === "bigint" ? int64Bytes(int64(input)) : bytes(input)

/** @internal */
export const family = (name: string): string => {
  if (typeof name !== "string" || name.length === 0) throw new RangeError("a column family name must not be empty")
  return name
}

/** @internal */
export const timestamp = (field: string, input: number | bigint): number => {
  const n = typeof input === "bigint" ? Number(input) : input
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new RangeError(`${field} must be a non-negative safe integer of microseconds, was ${String(input)}`)
  }
  return n
}

// ---------------------------------------------------------------------------------------------
// Exact wire size and bytes of MutateRowsRequest.Entry (field numbers from google/bigtable/v2/data.proto)

/** The size of a length-delimited field of `len` bytes (key, length, body). @internal */
export const lenField = (len: number): number => 1 + uint32Size(len) + len
// An int64 field (key and varint). -1 is the server-assigned timestamp of every SetCell without one,
// so a safe integer takes no `BigInt` (`int64Size`, `writeInt64`): a BigInt per mutation cost ~0.8 us
// of the ~1 us a SetCell took to encode.
const intField = (v: number | bigint): number => 1 + int64Size(v)

// Family names repeat across records: their UTF-8 bytes are encoded once (a bounded cache), and the
// last name's are kept beside it: an entry's size (at admission and again when it is encoded) and its
// encoding each look its family up, and the next entry's is usually the same: a string compare
// instead of a hash lookup.
const familyCache = new Map<string, Uint8Array>()
let lastName = ""
let lastBytes: Uint8Array = new Uint8Array(0)
const familyBytes = (name: string): Uint8Array => {
  if (name === lastName) return lastBytes
  let b = familyCache.get(name)
  if (b === undefined) {
    if (typeof name !== "string") throw new TypeError("a column family name must be a string")
    b = utf8.encode(name)
    if (familyCache.size < 10_000) familyCache.set(name, b)
  }
  lastName = name
  lastBytes = b
  return b
}

const rawValueSize = (b: Uint8Array): number => lenField(b.length) // Value.raw_value = 8
const valueOfInt = (v: bigint): number => intField(v) // Value.int_value = 6 / raw_timestamp_micros = 9

/** The size of one `Mutation` message's body (without its own key and length). @internal */
export const mutationBodySize = (m: Mutation): number => {
  switch (m._tag) {
    case "SetCell":
      return lenField(familyBytes(m.family).length) + lenField(m.qualifier.length) +
        intField(m.timestampMicros ?? -1) + lenField(m.value.length)
    case "DeleteFromColumn": {
      const range = m.startTimestampMicros === undefined && m.endTimestampMicros === undefined
        ? 0
        : lenField(intField(m.startTimestampMicros ?? 0) + intField(m.endTimestampMicros ?? 0))
      return lenField(familyBytes(m.family).length) + lenField(m.qualifier.length) + range
    }
    case "DeleteFromFamily":
      return lenField(familyBytes(m.family).length)
    case "DeleteFromRow":
      return 0
    case "AddToCell":
    case "MergeToCell": {
      const input = typeof m.input === "bigint" ? valueOfInt(m.input) : rawValueSize(m.input)
      return lenField(familyBytes(m.family).length) + lenField(rawValueSize(m.qualifier)) +
        lenField(valueOfInt(BigInt(m.timestampMicros))) + lenField(input)
    }
  }
}

const malformed = (what: string): TypeError => new TypeError(`${what} must be a Uint8Array`)

const checkBytes = (b: unknown, what: string): void => {
  if (!(b instanceof Uint8Array)) throw malformed(what)
}

/** Throws a `TypeError` on a mutation with a field of the wrong type. @internal */
export const checkMutation = (m: Mutation): void => {
  switch (m._tag) {
    case "SetCell":
      checkBytes(m.qualifier, "qualifier")
      checkBytes(m.value, "value")
      return
    case "DeleteFromColumn":
      checkBytes(m.qualifier, "qualifier")
      return
    case "AddToCell":
      checkBytes(m.qualifier, "qualifier")
      return
    case "MergeToCell":
      checkBytes(m.qualifier, "qualifier")
      if (typeof m.input !== "bigint") checkBytes(m.input, "input")
      return
    case "DeleteFromFamily":
    case "DeleteFromRow":
      return
    default:
      throw new TypeError("not a Mutation")
  }
}

/**
 * The exact serialized size of the entry as a `MutateRowsRequest.Entry`. Throws on a malformed
 * entry (a field of the wrong type), so the caller can route it: an entry measured without an
 * exception encodes without one.
 *
 * @internal
 */
export const entryByteSize = (entry: RowMutationEntry): number => {
  checkBytes(entry.rowKey, "rowKey")
  let size = lenField(entry.rowKey.length)
  for (const m of entry.mutations) {
    checkMutation(m)
    size += lenField(lenField(mutationBodySize(m)))
  }
  return size
}

/** A cursor writing protobuf fields into a buffer of known size. @internal */
export class Out {
  readonly buf: Uint8Array
  pos: number
  constructor(buf: Uint8Array, pos: number) {
    this.buf = buf
    this.pos = pos
  }
  uint(n: number): void {
    this.pos = writeUint(this.buf, this.pos, n)
  }
  varint(v: bigint): void {
    this.pos = writeBigint(this.buf, this.pos, v)
  }
  /** A field key of wire type 2 and a length. */
  len(field: number, length: number): void {
    this.buf[this.pos++] = (field << 3) | 2
    this.uint(length)
  }
  lenBytes(field: number, b: Uint8Array, what: string): void {
    this.pos = bytesField(this.buf, this.pos, field, b, what)
  }
  int(field: number, v: number | bigint): void {
    this.pos = writeInt(this.buf, this.pos, field, v)
  }
}

/** An int64 field of wire type 0 at `pos` (its key and varint); where it ends. */
const writeInt = (buf: Uint8Array, pos: number, field: number, v: number | bigint): number => {
  buf[pos] = field << 3
  return writeInt64(buf, pos + 1, v)
}

/** Writes one `Mutation` message's body (`bodySize` from {@link mutationBodySize}). @internal */
export const writeMutation = (out: Out, m: Mutation, bodySize: number): void => {
  switch (m._tag) {
    case "SetCell":
      out.pos = writeSetCell(out.buf, out.pos, m, bodySize)
      return
    case "DeleteFromColumn":
      out.len(2, bodySize)
      out.lenBytes(1, familyBytes(m.family), "family")
      out.lenBytes(2, m.qualifier, "qualifier")
      if (m.startTimestampMicros !== undefined || m.endTimestampMicros !== undefined) {
        const start = m.startTimestampMicros ?? 0
        const end = m.endTimestampMicros ?? 0
        out.len(3, intField(start) + intField(end))
        out.int(1, start)
        out.int(2, end)
      }
      return
    case "DeleteFromFamily":
      out.len(3, bodySize)
      out.lenBytes(1, familyBytes(m.family), "family")
      return
    case "DeleteFromRow":
      out.len(4, 0)
      return
    case "AddToCell":
    case "MergeToCell": {
      out.len(m._tag === "AddToCell" ? 5 : 6, bodySize)
      out.lenBytes(1, familyBytes(m.family), "family")
      out.len(2, rawValueSize(m.qualifier))
      out.lenBytes(8, m.qualifier, "qualifier")
      out.len(3, valueOfInt(BigInt(m.timestampMicros)))
      out.int(9, m.timestampMicros)
      const input = m.input
      if (typeof input === "bigint") {
        out.len(4, valueOfInt(input))
        out.int(6, input)
      } else {
        out.len(4, rawValueSize(input))
        out.lenBytes(8, input, "input")
      }
      return
    }
  }
}

/** `b`, a validated byte string, copied into `buf` at `pos`; where it ends. */
const copyBytes = (buf: Uint8Array, pos: number, b: Uint8Array): number => {
  const n = b.length
  // a loop beats `TypedArray.set` (a builtin call) for the short keys, qualifiers and names
  if (n < 32) {
    for (let i = 0; i < n; i++) buf[pos++] = b[i] as number
    return pos
  }
  buf.set(b, pos)
  return pos + n
}

/** A length-delimited field of bytes at `pos` (its key, length and bytes); where it ends. */
const bytesField = (buf: Uint8Array, pos: number, field: number, b: unknown, what: string): number => {
  if (!(b instanceof Uint8Array)) throw malformed(what)
  buf[pos] = (field << 3) | 2
  return copyBytes(buf, writeUint(buf, pos + 1, b.length), b)
}

/**
 * A `SetCell` (`Mutation.set_cell`, its key and `bodySize`) at `pos`, through locals rather than an
 * {@link Out}'s fields (each byte written through a field is a load and a store of its position):
 * the usual mutation, most of an entry's encoding. Where it ends.
 */
const writeSetCell = (buf: Uint8Array, pos: number, m: SetCell, bodySize: number): number => {
  buf[pos] = (1 << 3) | 2 // Mutation.set_cell
  pos = writeUint(buf, pos + 1, bodySize)
  pos = bytesField(buf, pos, 1, familyBytes(m.family), "family")
  pos = bytesField(buf, pos, 2, m.qualifier, "qualifier")
  pos = writeInt(buf, pos, 3, m.timestampMicros ?? -1)
  return bytesField(buf, pos, 4, m.value, "value")
}

const writeEntry = (out: Out, entry: RowMutationEntry): void => {
  out.lenBytes(1, entry.rowKey, "rowKey")
  const mutations = entry.mutations
  for (let i = 0; i < mutations.length; i++) {
    const m = mutations[i] as Mutation
    const body = mutationBodySize(m)
    out.len(2, lenField(body))
    writeMutation(out, m, body)
  }
}

/** The entry as `MutateRowsRequest.Entry` wire bytes (the payload of a `FailedMutation`). @internal */
export const encodeEntry = (entry: RowMutationEntry): Uint8Array => {
  const size = entryByteSize(entry)
  const out = new Out(new Uint8Array(size), 0)
  writeEntry(out, entry)
  if (out.pos !== size) throw new RangeError(`the entry encoded to ${out.pos} bytes, not ${size}`)
  return out.buf
}

// ---------------------------------------------------------------------------------------------
// MutateRowsRequest framing (google/bigtable/v2/bigtable.proto)

/**
 * An entry and its wire size (`entryByteSize`), measured (and so validated) when it was admitted:
 * what the sink's items are, encoded as they are (no array of entries and one of sizes a request).
 *
 * @internal
 */
export interface Sized {
  readonly entry: RowMutationEntry
  readonly bytes: number
}

/**
 * A `MutateRowsRequest`: `table_name` (1), `app_profile_id` (3) and the entries (2), encoded
 * straight into one buffer: no per-entry buffers or message objects. `sizes[i]` is
 * `entryByteSize(entries[i])`, measured (and so validated) when the entry was admitted. The first
 * `reserve` bytes are left free (gRPC's message prefix, written there by our HTTP/2 transport).
 *
 * @internal
 */
export const encodeRequest = (
  tableName: string,
  appProfileId: string | undefined,
  entries: ReadonlyArray<RowMutationEntry>,
  sizes: ReadonlyArray<number>,
  reserve = 0
): Buffer => {
  const head = new Head(tableName, appProfileId)
  let size = head.size
  for (let i = 0; i < entries.length; i++) size += lenField(sizes[i] ?? 0)
  const buf = Buffer.allocUnsafe(reserve + size)
  const out = head.write(buf, reserve)
  for (let i = 0; i < entries.length; i++) writeSized(out, entries[i] as RowMutationEntry, sizes[i] ?? 0, i)
  return buf
}

/** {@link encodeRequest} of entries that carry their sizes (the sink's items). @internal */
export const encodeSized = (
  tableName: string,
  appProfileId: string | undefined,
  sized: ReadonlyArray<Sized>,
  reserve = 0
): Buffer => {
  const head = new Head(tableName, appProfileId)
  let size = head.size
  for (let i = 0; i < sized.length; i++) size += lenField((sized[i] as Sized).bytes)
  const buf = Buffer.allocUnsafe(reserve + size)
  const out = head.write(buf, reserve)
  for (let i = 0; i < sized.length; i++) {
    const item = sized[i] as Sized
    writeSized(out, item.entry, item.bytes, i)
  }
  return buf
}

/** A request's table name and app profile fields: their UTF-8 lengths measured once, for its size and its writing. */
class Head {
  readonly tableName: string
  readonly appProfileId: string | undefined
  readonly table: number
  readonly profile: number
  readonly size: number
  constructor(tableName: string, appProfileId: string | undefined) {
    this.tableName = tableName
    this.appProfileId = appProfileId
    this.table = Buffer.byteLength(tableName, "utf8")
    this.profile = appProfileId === undefined || appProfileId === "" ? 0 : Buffer.byteLength(appProfileId, "utf8")
    this.size = lenField(this.table) + (this.profile > 0 ? lenField(this.profile) : 0)
  }

  /** Writes the fields into `buf` after `reserve` bytes; the cursor after them. */
  write(buf: Buffer, reserve: number): Out {
    const out = new Out(buf, reserve)
    out.len(1, this.table)
    out.pos += buf.write(this.tableName, out.pos, "utf8")
    if (this.profile > 0 && this.appProfileId !== undefined) {
      out.len(3, this.profile)
      out.pos += buf.write(this.appProfileId, out.pos, "utf8")
    }
    return out
  }
}

/** Entry `i` of a request, which must encode to the `entrySize` it measured. */
const writeSized = (out: Out, entry: RowMutationEntry, entrySize: number, i: number): void => {
  out.len(2, entrySize)
  const start = out.pos
  writeEntry(out, entry)
  if (out.pos - start !== entrySize) {
    throw new RangeError(`entry ${i} encoded to ${out.pos - start} bytes, not the ${entrySize} it measured`)
  }
}
