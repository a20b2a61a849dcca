/**
 * A growable byte buffer with the protobuf wire primitives the compiled row encoder needs:
 * varints (32-bit fast path, 64-bit from two 32-bit halves, safe integers by wire/varint.ts),
 * little-endian doubles, UTF-8 strings and length-delimited sub-messages whose length is back-filled.
 *
 * One writer belongs to one encoder and is reused row after row, so encoding allocates nothing but
 * the bytes handed out by {@link WireWriter.take}.
 *
 * @internal
 */
import { Buffer } from "node:buffer"
import { uint32Size, writeNegative, writeUint } from "../../wire/varint.ts"

const two32 = 4_294_967_296
const slabSize = 65_536
const slabLimit = 4096
const emptySlab = Buffer.alloc(0)

/** @internal */
export class WireWriter {
  buf: Buffer
  view: DataView
  pos = 0
  /** Growth stops doubling at this size when the bytes needed fit in it (a batch buffer's full size). */
  growLimit = Infinity
  private slab: Buffer = emptySlab
  private slabPos = slabSize

  /**
   * `buf.length`, kept as a number: a typed array's length is checked against its buffer on every
   * read (resizable buffers), and `ensure` reads it for every value written.
   */
  capacity: number

  constructor(initialCapacity = 1024, buffer?: Buffer) {
    this.buf = buffer ?? Buffer.allocUnsafe(initialCapacity)
    this.capacity = this.buf.length
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength)
  }

  /** A writer over an existing buffer (a recycled batch buffer), from position 0. */
  static over(buffer: Buffer): WireWriter {
    return new WireWriter(0, buffer)
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.pos + n
    if (need <= this.capacity) return
    let size = Math.max(this.buf.length * 2, 64)
    while (size < need) size *= 2
    if (size > this.growLimit && need <= this.growLimit) size = this.growLimit
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
    this.capacity = size
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength)
  }

  /**
   * A copy of the bytes from `start` to the current position. Copies of up to 4 KiB are views into
   * a 64 KiB slab shared by many rows (as Node's own buffer pool does): a view is much cheaper than
   * a typed array with its own backing store. A slab is freed once no row on it is referenced.
   */
  take(start: number): Uint8Array {
    const n = this.pos - start
    if (n > slabLimit) {
      const out = Buffer.allocUnsafeSlow(n)
      this.buf.copy(out, 0, start, this.pos)
      return out
    }
    if (this.slabPos + n > slabSize) {
      this.slab = Buffer.allocUnsafeSlow(slabSize)
      this.slabPos = 0
    }
    const at = this.slabPos
    this.buf.copy(this.slab, at, start, this.pos)
    this.slabPos = (at + n + 7) & ~7
    return this.slab.subarray(at, at + n)
  }

  /** One byte: a key of field numbers 1 to 15, or a varint below 128. */
  byte(value: number): void {
    if (this.pos >= this.capacity) this.ensure(1)
    this.buf[this.pos++] = value
  }

  /** An unsigned varint of at most 32 bits (tags, lengths, non-negative int32). */
  uint32(value: number): void {
    this.ensure(5)
    const buf = this.buf
    let pos = this.pos
    let v = value >>> 0
    while (v > 127) {
      buf[pos++] = (v & 127) | 128
      v >>>= 7
    }
    buf[pos++] = v
    this.pos = pos
  }

  /** A 64-bit varint given as its low and high unsigned 32-bit halves. */
  varint64(lo: number, hi: number): void {
    this.ensure(10)
    const buf = this.buf
    let pos = this.pos
    let l = lo >>> 0
    let h = hi >>> 0
    while (h > 0 || l > 127) {
      buf[pos++] = (l & 127) | 128
      l = ((l >>> 7) | (h << 25)) >>> 0
      h >>>= 7
    }
    buf[pos++] = l
    this.pos = pos
  }

  /** A signed int32 as proto `int32` writes it: negative values sign-extended to 10 bytes. */
  int32(value: number): void {
    if (value >= 0) this.uint32(value)
    else this.varint64(value >>> 0, 0xffffffff)
  }

  /** A safe integer as a two's complement int64 varint. */
  int64Number(value: number): void {
    if (this.pos + 10 > this.capacity) this.ensure(10)
    this.pos = value >= 0 ? writeUint(this.buf, this.pos, value) : writeNegative(this.buf, this.pos, value)
  }

  /** `mag` times `factor` plus `extra` (all non-negative, exact), negated when `negative`. */
  scaledInt64(mag: number, factor: number, extra: number, negative: boolean): void {
    const magLo = mag % two32
    const magHi = Math.floor(mag / two32)
    const low = magLo * factor + extra
    const lo = low % two32
    const hi = magHi * factor + Math.floor(low / two32)
    if (negative) this.negated(lo, hi)
    else this.varint64(lo, hi)
  }

  /** The two's complement of a non-negative 64-bit magnitude. */
  negated(lo: number, hi: number): void {
    const nlo = (~lo + 1) >>> 0
    const nhi = (~hi + (nlo === 0 ? 1 : 0)) >>> 0
    this.varint64(nlo, nhi)
  }

  /** A bigint in [-2^63, 2^63) as a two's complement int64 varint. */
  int64BigInt(value: bigint): void {
    const u = BigInt.asUintN(64, value)
    this.varint64(Number(u & 0xffffffffn), Number(u >> 32n))
  }

  double(value: number): void {
    this.ensure(8)
    this.view.setFloat64(this.pos, value, true)
    this.pos += 8
  }

  bool(value: boolean): void {
    this.ensure(1)
    this.buf[this.pos++] = value ? 1 : 0
  }

  bytes(value: Uint8Array): void {
    this.uint32(value.length)
    this.ensure(value.length)
    this.buf.set(value, this.pos)
    this.pos += value.length
  }

  /**
   * A length-prefixed UTF-8 string. Returns the index of a lone surrogate (which has no UTF-8
   * form) without writing anything, or -1 when written.
   *
   * At most 42 UTF-16 units are at most 126 UTF-8 bytes: a one-byte length prefix, written after
   * the bytes. Node's native UTF-8 writer is about twice as fast as a JavaScript loop on such
   * strings, but writes a lone surrogate as U+FFFD: a string whose byte count differs from its
   * length (not all ASCII) is checked, and nothing is kept when it is not well-formed.
   */
  string(s: string): number {
    const n = s.length
    if (n > 42) return this.longString(s)
    const start = this.pos
    if (start + 1 + 3 * n > this.capacity) this.ensure(1 + 3 * n)
    const written = utf8Write(this.buf, s, start + 1, 3 * n)
    if (written !== n) {
      const bytes = utf8Length(s)
      if (bytes < 0) return -bytes - 1
    }
    this.buf[start] = written
    this.pos = start + 1 + written
    return -1
  }

  /** A string of more than 42 units: its UTF-8 length first, as a varint. */
  private longString(s: string): number {
    const bytes = utf8Length(s)
    if (bytes < 0) return -bytes - 1
    this.uint32(bytes)
    this.ensure(bytes)
    this.pos += utf8Write(this.buf, s, this.pos, bytes)
    return -1
  }

  /** Starts a length-delimited value; pass the result to {@link WireWriter.endDelimited}. */
  beginDelimited(): number {
    this.ensure(1)
    return this.pos++
  }

  /** Back-fills the length of the value begun at `at`, widening its prefix when needed. */
  endDelimited(at: number): void {
    const length = this.pos - at - 1
    if (length < 128) {
      this.buf[at] = length
      return
    }
    const size = varintSize(length)
    this.ensure(size - 1)
    this.buf.copyWithin(at + size, at + 1, this.pos)
    this.pos += size - 1
    const end = this.pos
    this.pos = at
    this.uint32(length)
    this.pos = end
  }
}

/**
 * `Buffer#utf8Write`: what `Buffer#write` calls after parsing its optional arguments. Called
 * directly, with the room checked inline, the benchmark row's three string columns took 66 ns a
 * row instead of 108 in a micro-benchmark (the `STRING` encoder on flat strings). Undocumented, but
 * on `Buffer.prototype` in every Node release (protobufjs calls it too).
 */
interface Utf8Writer {
  utf8Write(s: string, offset: number, length: number): number
}

const utf8Write = (buf: Buffer, s: string, offset: number, length: number): number =>
  (buf as Buffer & Utf8Writer).utf8Write(s, offset, length)

/** The bytes of an unsigned varint of a value below 2^32. @internal */
export const varintSize = uint32Size

/**
 * The UTF-8 length of a string, or `-(index + 1)` of its first lone surrogate.
 *
 * @internal
 */
export const utf8Length = (s: string): number => {
  let bytes = 0
  const n = s.length
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if ((c & 0xf800) !== 0xd800) bytes += 3
    else {
      const d = i + 1 < n ? s.charCodeAt(i + 1) : 0
      if (c > 0xdbff || (d & 0xfc00) !== 0xdc00) return -(i + 1)
      bytes += 4
      i++
    }
  }
  return bytes
}

/** The key of a field: `(number << 3) | wireType`. @internal */
export const tag = (fieldNumber: number, wireType: 0 | 1 | 2 | 5): number => ((fieldNumber << 3) | wireType) >>> 0
