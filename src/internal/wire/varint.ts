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

/** The bytes of a 64-bit varint (a negative value takes 10, as two's complement). @internal */
export const bigintSize = (v: bigint): number => {
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
  // `>>>` takes its operand modulo 2^32: above that, divide (a safe integer stays exact)
  while (n > 0xffffffff) {
    buf[pos++] = (n & 0x7f) | 0x80
    n = Math.floor(n / 128)
  }
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80
    n >>>= 7
  }
  buf[pos++] = n
  return pos
}
