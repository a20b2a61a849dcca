/**
 * Mutations as the plain objects the gapic client serializes, and as exact protobuf wire bytes
 * (`MutateRowsRequest.Entry`): the size that batch thresholds count and the payload of a
 * `FailedMutation`.
 *
 * @internal
 */
import type { protos } from "@google-cloud/bigtable"
import type { BytesInput, Mutation, ValueInput } from "../../Bigtable/Mutation.ts"
import type { RowMutationEntry } from "../../Bigtable/RowMutationEntry.ts"

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
// Plain objects for the gapic client (google.bigtable.v2.MutateRowsRequest.IEntry)

/** @internal */
export type ProtoEntry = protos.google.bigtable.v2.MutateRowsRequest.IEntry

/** @internal */
export type ProtoMutation = protos.google.bigtable.v2.IMutation

const int64Field = (
  v: bigint
): number | string => (v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v.toString())

/** @internal */
export const toProtoMutation = (m: Mutation): ProtoMutation => {
  switch (m._tag) {
    case "SetCell":
      return {
        setCell: {
          familyName: m.family,
          columnQualifier: m.qualifier,
          timestampMicros: m.timestampMicros ?? -1,
          value: m.value
        }
      }
    case "DeleteFromColumn": {
      const timeRange = m.startTimestampMicros === undefined && m.endTimestampMicros === undefined
        ? undefined
        : { startTimestampMicros: m.startTimestampMicros ?? 0, endTimestampMicros: m.endTimestampMicros ?? 0 }
      return {
        deleteFromColumn: timeRange === undefined
          ? { familyName: m.family, columnQualifier: m.qualifier }
          : { familyName: m.family, columnQualifier: m.qualifier, timeRange }
      }
    }
    case "DeleteFromFamily":
      return { deleteFromFamily: { familyName: m.family } }
    case "DeleteFromRow":
      return { deleteFromRow: {} }
    case "AddToCell":
      return {
        addToCell: {
          familyName: m.family,
          columnQualifier: { rawValue: m.qualifier },
          timestamp: { rawTimestampMicros: m.timestampMicros },
          input: { intValue: int64Field(m.input) }
        }
      }
    case "MergeToCell":
      return {
        mergeToCell: {
          familyName: m.family,
          columnQualifier: { rawValue: m.qualifier },
          timestamp: { rawTimestampMicros: m.timestampMicros },
          input: typeof m.input === "bigint" ? { intValue: int64Field(m.input) } : { rawValue: m.input }
        }
      }
  }
}

/** @internal */
export const toProtoEntry = (entry: RowMutationEntry): ProtoEntry => {
  return { rowKey: entry.rowKey, mutations: entry.mutations.map(toProtoMutation) }
}

// ---------------------------------------------------------------------------------------------
// Exact wire size and bytes of MutateRowsRequest.Entry (field numbers from google/bigtable/v2/data.proto)

const varintSize = (v: bigint): number => {
  let u = BigInt.asUintN(64, v)
  let n = 1
  while (u >= 0x80n) {
    u >>= 7n
    n++
  }
  return n
}
const numberVarintSize = (n: number): number => {
  let size = 1
  while (n >= 128) {
    n = Math.floor(n / 128)
    size++
  }
  return size
}
const uintSize = (n: number): number => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5)
const lenField = (len: number): number => 1 + uintSize(len) + len
const intField = (v: number | bigint): number =>
  1 + (typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER ? numberVarintSize(v) : varintSize(BigInt(v)))
const strLen = (s: string): number => utf8.encode(s).length

const familyLen = (() => {
  const cache = new Map<string, number>()
  return (name: string): number => {
    let n = cache.get(name)
    if (n === undefined) {
      n = strLen(name)
      if (cache.size < 10_000) cache.set(name, n)
    }
    return n
  }
})()

const rawValueSize = (b: Uint8Array): number => lenField(b.length) // Value.raw_value = 8
const valueOfInt = (v: bigint): number => intField(v) // Value.int_value = 6 / raw_timestamp_micros = 9

const mutationBodySize = (m: Mutation): number => {
  switch (m._tag) {
    case "SetCell":
      return lenField(familyLen(m.family)) + lenField(m.qualifier.length) + intField(m.timestampMicros ?? -1) +
        lenField(m.value.length)
    case "DeleteFromColumn": {
      const range = m.startTimestampMicros === undefined && m.endTimestampMicros === undefined
        ? 0
        : lenField(intField(m.startTimestampMicros ?? 0) + intField(m.endTimestampMicros ?? 0))
      return lenField(familyLen(m.family)) + lenField(m.qualifier.length) + range
    }
    case "DeleteFromFamily":
      return lenField(familyLen(m.family))
    case "DeleteFromRow":
      return 0
    case "AddToCell":
    case "MergeToCell": {
      const input = typeof m.input === "bigint" ? valueOfInt(m.input) : rawValueSize(m.input)
      return lenField(familyLen(m.family)) + lenField(rawValueSize(m.qualifier)) +
        lenField(valueOfInt(BigInt(m.timestampMicros))) + lenField(input)
    }
  }
}

/** The exact serialized size of the entry as a `MutateRowsRequest.Entry`. @internal */
export const entryByteSize = (entry: RowMutationEntry): number => {
  let size = lenField(entry.rowKey.length)
  for (const m of entry.mutations) size += lenField(lenField(mutationBodySize(m)))
  return size
}

class Out {
  readonly buf: Uint8Array
  pos = 0
  constructor(size: number) {
    this.buf = new Uint8Array(size)
  }
  byte(b: number): void {
    this.buf[this.pos++] = b
  }
  uint(n: number): void {
    while (n >= 0x80) {
      this.byte((n & 0x7f) | 0x80)
      n = Math.floor(n / 128)
    }
    this.byte(n)
  }
  varint(v: bigint): void {
    let u = BigInt.asUintN(64, v)
    while (u >= 0x80n) {
      this.byte(Number(u & 0x7fn) | 0x80)
      u >>= 7n
    }
    this.byte(Number(u))
  }
  key(field: number, wire: number): void {
    this.byte((field << 3) | wire)
  }
  lenBytes(field: number, b: Uint8Array): void {
    this.key(field, 2)
    this.uint(b.length)
    this.buf.set(b, this.pos)
    this.pos += b.length
  }
  int(field: number, v: number | bigint): void {
    this.key(field, 0)
    if (typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER) this.uint(v)
    else this.varint(BigInt(v))
  }
  nested(field: number, size: number, body: () => void): void {
    this.key(field, 2)
    this.uint(size)
    body()
  }
}

const writeMutation = (out: Out, m: Mutation): void => {
  const familyName = (): void => out.lenBytes(1, utf8.encode("family" in m ? m.family : ""))
  switch (m._tag) {
    case "SetCell":
      return out.nested(1, mutationBodySize(m), () => {
        familyName()
        out.lenBytes(2, m.qualifier)
        out.int(3, m.timestampMicros ?? -1)
        out.lenBytes(4, m.value)
      })
    case "DeleteFromColumn":
      return out.nested(2, mutationBodySize(m), () => {
        familyName()
        out.lenBytes(2, m.qualifier)
        if (m.startTimestampMicros !== undefined || m.endTimestampMicros !== undefined) {
          const start = m.startTimestampMicros ?? 0
          const end = m.endTimestampMicros ?? 0
          out.nested(3, intField(start) + intField(end), () => {
            out.int(1, start)
            out.int(2, end)
          })
        }
      })
    case "DeleteFromFamily":
      return out.nested(3, mutationBodySize(m), familyName)
    case "DeleteFromRow":
      return out.nested(4, 0, () => undefined)
    case "AddToCell":
    case "MergeToCell":
      return out.nested(m._tag === "AddToCell" ? 5 : 6, mutationBodySize(m), () => {
        familyName()
        out.nested(2, rawValueSize(m.qualifier), () => out.lenBytes(8, m.qualifier))
        out.nested(3, valueOfInt(BigInt(m.timestampMicros)), () => out.int(9, m.timestampMicros))
        const input = m.input
        if (typeof input === "bigint") out.nested(4, valueOfInt(input), () => out.int(6, input))
        else out.nested(4, rawValueSize(input), () => out.lenBytes(8, input))
      })
  }
}

/** The entry as `MutateRowsRequest.Entry` wire bytes. @internal */
export const encodeEntry = (entry: RowMutationEntry): Uint8Array => {
  const out = new Out(entryByteSize(entry))
  out.lenBytes(1, entry.rowKey)
  for (const m of entry.mutations) out.nested(2, lenField(mutationBodySize(m)), () => writeMutation(out, m))
  return out.buf
}
