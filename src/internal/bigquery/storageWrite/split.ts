/**
 * Batch buffers (reference 2.4 step 7, DESIGN 10): rows are framed straight into the `ProtoRows` body
 * of the batch being filled, so a batch costs its bytes once and no object per row. A batch is closed
 * when a row would take its `ProtoRows` over `maxAppendRequestBytes`; there is no row-count bound. A
 * row alone larger than the limit (but within the 9 MiB row cap) forms its own batch.
 *
 * **Details**
 *
 * - A row is framed as tag `0x0a`, its length as a varint, its bytes. A serializer encoding in place
 *   writes the bytes before their length is known: the length gets as many bytes as the previous
 *   row's length took, and the row is moved only when its own length needs a different number.
 * - The row that does not fit is found once it is framed: it is moved to the next batch (one copy per
 *   batch), and the batch without it is sealed.
 * - Full-size buffers come from a small {@link Pool} fed by completed appends, so a steady stream
 *   reuses the same few buffers instead of leaving one per batch to the garbage collector.
 * - A slice expected to complete a batch that already holds rows is framed after a gap as large as
 *   those rows ({@link sized}'s `lead`): the owner copies the batch's rows into the gap ({@link join}),
 *   not the slice's rows after them, so a row of a large write is copied once, not twice.
 *
 * The batches and the pool belong to the writer fiber.
 *
 * @internal
 */
import { varintSize, WireWriter } from "../encoding/wireWriter.ts"
import { bodyIn, headroom, maxRowBytes, rowFrameLength } from "../transport/appendRequest.ts"

/** Reusable full-size batch buffers. @internal */
export interface Pool {
  /** The size of a full batch buffer: headroom, the request limit and room for the row that overflows. */
  readonly capacity: number
  readonly free: Array<Buffer>
  readonly max: number
}

/** Room past the limit for the row that overflows a batch, before the buffer has to grow. */
const overflowRoom = 16 * 1024

/** The first buffer of a destination: small, since most destinations may stay small. */
const initialCapacity = 4096

/** @internal */
export const makePool = (maxAppendRequestBytes: number, max: number): Pool => ({
  capacity: headroom + maxAppendRequestBytes + overflowRoom,
  free: [],
  max
})

/** Hands a buffer of a completed append back for reuse (full-size ones only). @internal */
export const recycle = (pool: Pool, buffer: Buffer): void => {
  if (buffer.length === pool.capacity && pool.free.length < pool.max) pool.free.push(buffer)
}

/** The rows of one destination being framed. @internal */
export interface Batch {
  /** `buf[start, pos)` is the `ProtoRows` body so far. */
  writer: WireWriter
  /** Where the body starts: the headroom, or further when the buffer keeps room before the rows. */
  start: number
  /** Rows framed. */
  count: number
  /** Sum of the rows' own lengths: what `bytesWritten` counts. */
  bytes: number
  /** Bytes the next row's length is given before it is known. */
  lengthGuess: number
}

/** A closed batch: its `ProtoRows` body and the buffer holding it (for {@link recycle}). @internal */
export interface Sealed {
  readonly body: Uint8Array
  readonly buffer: Buffer
  readonly count: number
  readonly bytes: number
  /** The body's length: what the request limit and the in-flight bytes are counted in. */
  readonly frameBytes: number
}

/** A batch writer over `buffer`, at `pos` (the body starts after the headroom), growing up to the pool's size. */
const writerOver = (pool: Pool, buffer: Buffer, pos = headroom): WireWriter => {
  const w = WireWriter.over(buffer)
  w.growLimit = pool.capacity
  w.pos = pos
  return w
}

/** The smallest buffer of a slice expected to be small (from Node's shared pool: no allocation of its own). */
const smallCapacity = 1024

/**
 * A buffer for a batch expected to take `capacity` bytes: full size (pooled) when that is over half,
 * else at least `minimum`.
 */
const writerOf = (pool: Pool, capacity: number, minimum = initialCapacity): WireWriter => {
  const full = 2 * capacity >= pool.capacity
  const buffer = (full ? pool.free.pop() : undefined) ??
    Buffer.allocUnsafe(full ? pool.capacity : Math.max(minimum, capacity))
  return writerOver(pool, buffer)
}

const noBytes = Buffer.alloc(0)

/**
 * A writer that holds no buffer yet: a destination's open batch between two slices, which usually
 * takes the next slice's own buffer ({@link adopt}); its first write allocates what it needs.
 *
 * @internal
 */
export const unallocated = (pool: Pool): WireWriter => writerOver(pool, noBytes)

/** @internal */
export const empty = (pool: Pool): Batch => ({
  writer: writerOf(pool, initialCapacity),
  start: headroom,
  count: 0,
  bytes: 0,
  lengthGuess: 1
})

/**
 * A batch expected to take `capacity` bytes of rows: on a full-size pooled buffer when that is over half of
 * one, else on one of the headroom and those bytes (a run of a few rows, as a stream of small chunks writes:
 * a slice of Node's shared pool, where a 4 KiB buffer of its own per write was most of its allocation).
 * Its rows start `lead` bytes past the headroom: room for the rows of the batch they will join ({@link join}).
 *
 * @internal
 */
export const sized = (pool: Pool, capacity: number, lead = 0): Batch => {
  const start = headroom + lead
  const writer = writerOf(pool, start + capacity, smallCapacity)
  writer.pos = start
  return { writer, start, count: 0, bytes: 0, lengthGuess: 1 }
}

/**
 * Moves the one row an empty batch took to the start of its body: the row does not fit the batch it
 * was to join, so the gap left for that batch's rows (`sized`'s `lead`) is room for the rows after it.
 *
 * @internal
 */
export const restart = (batch: Batch): void => {
  const w = batch.writer
  if (batch.start === headroom) return
  w.buf.copy(w.buf, headroom, batch.start, w.pos)
  w.pos = headroom + (w.pos - batch.start)
  batch.start = headroom
}

/**
 * Appends already framed rows (a prepared slice's body: `count` rows of `bytes` bytes) in one copy.
 * The caller checks they fit ({@link frameBytes}).
 *
 * @internal
 */
export const appendFrames = (batch: Batch, frames: Uint8Array, count: number, bytes: number): void => {
  const w = batch.writer
  w.ensure(frames.length)
  w.buf.set(frames, w.pos)
  w.pos += frames.length
  batch.count += count
  batch.bytes += bytes
}

/**
 * Adds `count` framed rows of `bytes` bytes (`frames`, a prepared slice's body, in `buffer` at least the
 * headroom past its start) to a batch they fit, copying the fewer bytes: an empty batch continues on
 * `buffer` as it is; a batch whose rows are fewer than the slice's and fit in the free bytes before the
 * frames is copied there and continues on `buffer`; else the frames are copied after the batch's rows.
 * The buffer given up goes back to the pool.
 *
 * @internal
 */
export const join = (
  pool: Pool,
  batch: Batch,
  buffer: Buffer,
  frames: Uint8Array,
  count: number,
  bytes: number
): void => {
  const w = batch.writer
  const held = batch.count === 0 ? 0 : w.pos - batch.start
  const at = frames.byteOffset - buffer.byteOffset
  if (held === 0 || (held < frames.length && at - headroom >= held)) {
    const start = at - held
    if (held > 0) w.buf.copy(buffer, start, batch.start, w.pos)
    recycle(pool, w.buf)
    batch.writer = writerOver(pool, buffer, at + frames.length)
    batch.start = start
    batch.count += count
    batch.bytes += bytes
  } else {
    appendFrames(batch, frames, count, bytes)
    recycle(pool, buffer)
  }
}

/** Framed rows of a body that fit: where they end, how many, and their own bytes. @internal */
export interface Fit {
  end: number
  count: number
  bytes: number
}

/**
 * The rows framed in `frames[from, ...)` that fit in `room` bytes of frames (the first one even if
 * it does not, when `atLeastOne`), walking the frames in place (tag, varint length, bytes).
 *
 * @internal
 */
export const fitFrames = (frames: Uint8Array, from: number, room: number, atLeastOne: boolean, out: Fit): void => {
  let pos = from
  let count = 0
  let bytes = 0
  while (pos < frames.length) {
    let p = pos + 1 // tag 0x0a
    let length = 0
    let shift = 1
    for (;;) {
      const b = frames[p++] as number
      length += (b & 0x7f) * shift
      if (b < 0x80) break
      shift *= 128
    }
    const end = p + length
    if (end - from > room && !(atLeastOne && count === 0)) break
    pos = end
    count++
    bytes += length
  }
  out.end = pos
  out.count = count
  out.bytes = bytes
}

/** The size of the batch's `ProtoRows` body. @internal */
export const frameBytes = (batch: Batch): number => batch.writer.pos - batch.start

/**
 * Starts a row encoded in place: writes its tag and room for its length, and returns where the
 * row's frame starts (for {@link endRow} or {@link cancelRow}).
 *
 * @internal
 */
export const beginRow = (batch: Batch): number => {
  const w = batch.writer
  const at = w.pos
  w.ensure(1 + batch.lengthGuess)
  w.buf[at] = 0x0a
  w.pos = at + 1 + batch.lengthGuess
  return at
}

/** Drops what was written since `at`. @internal */
export const cancelRow = (batch: Batch, at: number): void => {
  batch.writer.pos = at
}

/** Writes the length of the row begun at `at` (moving it when the guess was wrong); returns it. @internal */
export const endRow = (batch: Batch, at: number): number => {
  const w = batch.writer
  const start = at + 1 + batch.lengthGuess
  const length = w.pos - start
  const size = varintSize(length)
  if (size !== batch.lengthGuess) {
    w.ensure(size - batch.lengthGuess)
    w.buf.copyWithin(at + 1 + size, start, w.pos)
    w.pos += size - batch.lengthGuess
    batch.lengthGuess = size
  }
  const end = w.pos
  w.pos = at + 1
  w.uint32(length)
  w.pos = end
  return length
}

/** Frames an already encoded row; returns where its frame starts. @internal */
export const appendRow = (batch: Batch, row: Uint8Array): number => {
  const w = batch.writer
  const at = w.pos
  const length = row.length
  // one bounds check for the whole frame (a length takes at most 5 bytes), locals for the rest: the
  // writer's own `uint32` checks again and writes through its fields, a third of this function's time
  if (at + 6 + length > w.capacity) w.ensure(rowFrameLength(length))
  const buf = w.buf
  let pos = at
  buf[pos++] = 0x0a
  let v = length
  while (v > 127) {
    buf[pos++] = (v & 127) | 128
    v >>>= 7
  }
  buf[pos++] = v
  buf.set(row, pos)
  w.pos = pos + length
  return at
}

/** A copy of the last `length` bytes written: the row just framed (for routing it). @internal */
export const rowCopy = (batch: Batch, length: number): Uint8Array => {
  const end = batch.writer.pos
  const out = new Uint8Array(length)
  out.set(batch.writer.buf.subarray(end - length, end))
  return out
}

/** Whether a row's length is over the 9 MiB cap: it is routed, never sent. @internal */
export const isOversize = (length: number): boolean => length > maxRowBytes

/**
 * Takes the row of `length` bytes framed at `at` into the batch. When it takes the body over
 * `maxBytes` and is not alone, the batch is sealed without it and returned, and the row moves to a
 * fresh buffer that the batch continues with. `fit: false` keeps the sealed rows in their buffer
 * however large it is (a slice whose rows are copied out and its buffer given back at once).
 *
 * @internal
 */
export const admit = (
  pool: Pool,
  batch: Batch,
  at: number,
  length: number,
  maxBytes: number,
  fit = true
): Sealed | undefined => {
  const w = batch.writer
  if (batch.count === 0 || w.pos - batch.start <= maxBytes) {
    batch.count++
    batch.bytes += length
    return undefined
  }
  const frame = w.pos - at
  const next = writerOf(pool, Math.max(w.buf.length, headroom + frame))
  next.ensure(frame)
  w.buf.copy(next.buf, headroom, at, w.pos)
  next.pos = headroom + frame
  w.pos = at
  const sealed = seal(batch, undefined, fit)
  batch.writer = next
  batch.count = 1
  batch.bytes = length
  return sealed
}

/**
 * Closes the batch (which must hold rows) and starts it again on a fresh buffer; a buffer much
 * larger than its rows (a flush of a few rows) gives them up in a copy of their size, unless `fit`
 * is false.
 *
 * @internal
 */
export const seal = (batch: Batch, pool?: Pool, fit = true): Sealed => {
  let buffer = batch.writer.buf
  const frames = batch.writer.pos - batch.start
  let start = batch.start
  if (fit && buffer.length > 2 * (headroom + frames) + initialCapacity) {
    const fitted = Buffer.allocUnsafeSlow(headroom + frames)
    buffer.copy(fitted, headroom, start, start + frames)
    buffer = fitted
    start = headroom
  }
  const sealed: Sealed = {
    body: bodyIn(buffer, start + frames, start),
    buffer,
    count: batch.count,
    bytes: batch.bytes,
    frameBytes: frames
  }
  batch.start = headroom
  if (pool !== undefined) batch.writer = writerOf(pool, headroom + frames)
  batch.count = 0
  batch.bytes = 0
  return sealed
}

/**
 * Splits encoded rows into consecutive sealed batches, each within `maxBytes` unless it holds a
 * single row (what the writer does row by row).
 *
 * @internal
 */
export const split = (rows: ReadonlyArray<Uint8Array>, maxBytes: number, pool: Pool): Array<Sealed> => {
  const out: Array<Sealed> = []
  const batch = empty(pool)
  for (const row of rows) {
    const at = appendRow(batch, row)
    const full = admit(pool, batch, at, row.length, maxBytes)
    if (full !== undefined) out.push(full)
  }
  if (batch.count > 0) out.push(seal(batch, pool))
  return out
}
