/**
 * Protobuf varint sizes and writing, shared by the hand-rolled encoders of both backends (BigQuery
 * append requests and rows, Bigtable mutations).
 *
 * @internal
 */

/** The bytes of an unsigned varint of a value below 2^32 (1 to 5). @internal */
export const uint32Size = (value: number): number =>
  value < 128 ? 1 : value < 16_384 ? 2 : value < 2_097_152 ? 3 : value < 268_435_456 ? 4 : 5

/** The bytes of an unsigned varint of a non-negative safe integer (1 to 8). @internal */
export const uintSize = (n: number): number => {
  if (n <= 0xffffffff) return uint32Size(n)
  let size = 1
  while (n >= 0x80) {
    n = Math.floor(n / 128)
    size++
  }
  return size
}

/** The bytes of a 64-bit varint (a negative value takes 10, as two's complement). */
const bigintSize = (v: bigint): number => {
  let u = BigInt.asUintN(64, v)
  let size = 1
  while (u >= 0x80n) {
    u >>= 7n
    size++
  }
  return size
}

/**
 * Writes a non-negative safe integer as an unsigned varint at `pos`; returns the position after it.
 *
 * @internal
 */
export const writeUint = (buf: Uint8Array, pos: number, n: number): number => {
  if (n > 0xffffffff) return writeWide(buf, pos, n)
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80
    n >>>= 7
  }
  buf[pos++] = n
  return pos
}

/**
 * A safe integer from 2^32 up (a timestamp in microseconds, an id). `>>>` takes its operand modulo
 * 2^32: its low 28 bits are four continuation bytes, and the rest (at most 25 bits) one 32-bit
 * integer, split without a division per byte (35-40 % less time than shifting two 32-bit halves).
 */
const writeWide = (buf: Uint8Array, pos: number, n: number): number => {
  const lo = n >>> 0
  buf[pos++] = (lo & 0x7f) | 0x80
  buf[pos++] = ((lo >>> 7) & 0x7f) | 0x80
  buf[pos++] = ((lo >>> 14) & 0x7f) | 0x80
  buf[pos++] = ((lo >>> 21) & 0x7f) | 0x80
  let rest = (lo >>> 28) + ((n - lo) / 0x1_0000_0000) * 16
  while (rest >= 0x80) {
    buf[pos++] = (rest & 0x7f) | 0x80
    rest >>>= 7
  }
  buf[pos++] = rest
  return pos
}

/**
 * The bytes of an int64 varint of `v` (1 to 10): a safe integer without a `BigInt` (a negative one takes
 * 10, as its two's complement), any other value as its `BigInt`.
 *
 * @internal
 */
export const int64Size = (v: number | bigint): number =>
  typeof v === "number" && Number.isSafeInteger(v) ? (v >= 0 ? uintSize(v) : 10) : bigintSize(BigInt(v))

/** Writes a 64-bit varint at `pos` (a negative value as its two's complement, ten bytes); where it ends. @internal */
export const writeBigint = (buf: Uint8Array, pos: number, v: bigint): number => {
  let u = BigInt.asUintN(64, v)
  while (u >= 0x80n) {
    buf[pos++] = Number(u & 0x7fn) | 0x80
    u >>= 7n
  }
  buf[pos++] = Number(u)
  return pos
}

/**
 * Writes a negative safe integer as a 64-bit two's complement varint (ten bytes, in 32-bit halves, no
 * `BigInt`) at `pos`; returns the position after it.
 *
 * @internal
 */
export const writeNegative = (buf: Uint8Array, pos: number, v: number): number => {
  // the magnitude's halves exactly (`>>> 0` is modulo 2^32, the rest an exact division: no
  // floating-point `%` or `Math.floor`), then their two's complement
  const abs = -v
  const absLow = abs >>> 0
  let low = (~absLow + 1) >>> 0
  let high = (~((abs - absLow) / 0x1_0000_0000) + (low === 0 ? 1 : 0)) >>> 0
  // 63 bits in 9 bytes of 7, then the sign bit alone
  for (let i = 0; i < 9; i++) {
    buf[pos++] = (low & 0x7f) | 0x80
    low = ((low >>> 7) | (high << 25)) >>> 0
    high >>>= 7
  }
  buf[pos++] = low & 0x01
  return pos
}

/**
 * Writes `v` as an int64 varint at `pos` ({@link int64Size} bytes): a safe integer without a `BigInt`,
 * any other value through its `BigInt`; returns the position after it.
 *
 * @internal
 */
export const writeInt64 = (buf: Uint8Array, pos: number, v: number | bigint): number => {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) return writeBigint(buf, pos, BigInt(v))
  return v >= 0 ? writeUint(buf, pos, v) : writeNegative(buf, pos, v)
}
