/**
 * gRPC's length-prefixed messages (the gRPC over HTTP/2 protocol): each message on a stream is a
 * 5-byte prefix (a compressed flag, then the length as a big-endian uint32) and the message bytes.
 *
 * **Details**
 *
 * - Sending: the caller leaves {@link prefixLength} bytes free before the message in the buffer it
 *   sends and {@link writePrefix} writes them there, so a request is one buffer handed to the stream
 *   once (grpc-js copies every message into a new buffer to prepend the prefix).
 * - Receiving: {@link MessageReader} reassembles messages across the stream's DATA chunks. A message
 *   inside one chunk is handed on as a view of it (no copy); one split across chunks is gathered
 *   into a buffer of its own length.
 *
 * @internal
 */

/** The bytes of the prefix before each message. @internal */
export const prefixLength = 5

/**
 * Writes the prefix of an uncompressed message of `length` bytes at `out[at, at + 5)`.
 *
 * @internal
 */
export const writePrefix = (out: Uint8Array, at: number, length: number): void => {
  out[at] = 0
  out[at + 1] = (length >>> 24) & 0xff
  out[at + 2] = (length >>> 16) & 0xff
  out[at + 3] = (length >>> 8) & 0xff
  out[at + 4] = length & 0xff
}

/**
 * `message` framed: a view starting {@link prefixLength} bytes before it when its buffer has that
 * room free before it (`headroom`), else a copy with the prefix. The bytes before the message are
 * overwritten: a buffer is framed for one request at a time.
 *
 * @internal
 */
export const frame = (message: Uint8Array, headroom: number): Uint8Array => {
  if (headroom >= prefixLength) {
    const framed = new Uint8Array(message.buffer, message.byteOffset - prefixLength, prefixLength + message.length)
    writePrefix(framed, 0, message.length)
    return framed
  }
  const framed = new Uint8Array(prefixLength + message.length)
  writePrefix(framed, 0, message.length)
  framed.set(message, prefixLength)
  return framed
}

/** Why a stream's bytes are not a sequence of gRPC messages. @internal */
export type ReadFailure =
  | { readonly _tag: "TooLarge"; readonly length: number; readonly max: number }
  | { readonly _tag: "Compressed" }

/**
 * Reassembles the messages of one stream from its DATA chunks, in order: `onMessage` gets each
 * message as soon as its last byte arrives. A message is valid only during the `onMessage` call
 * (it may be a view of the chunk). After a failure ({@link ReadFailure}) nothing more is read.
 *
 * @internal
 */
export class MessageReader {
  private readonly prefix = new Uint8Array(prefixLength)
  private prefixFill = 0
  private body: Uint8Array | undefined
  private bodyFill = 0
  private failed: ReadFailure | undefined
  private readonly maxLength: number
  private readonly onMessage: (message: Uint8Array) => void
  constructor(maxLength: number, onMessage: (message: Uint8Array) => void) {
    this.maxLength = maxLength
    this.onMessage = onMessage
  }

  /** Reads one chunk; returns the failure when the stream is malformed (now or before). */
  push(chunk: Uint8Array): ReadFailure | undefined {
    let pos = 0
    while (this.failed === undefined && pos < chunk.length) {
      if (this.body !== undefined) {
        pos = this.fillBody(this.body, chunk, pos)
        continue
      }
      if (this.prefixFill === 0 && chunk.length - pos >= prefixLength) {
        // the common case: the prefix is whole in this chunk, and often the message too
        const length = readLength(chunk, pos)
        this.failed = this.check(chunk[pos]!, length)
        if (this.failed !== undefined) break
        pos += prefixLength
        if (chunk.length - pos >= length) {
          this.onMessage(chunk.subarray(pos, pos + length))
          pos += length
        } else {
          this.body = new Uint8Array(length)
          this.bodyFill = 0
        }
        continue
      }
      pos = this.fillPrefix(chunk, pos)
    }
    return this.failed
  }

  /** Whether a message is partly read (a stream that ends now ended in the middle of one). */
  get partial(): boolean {
    return this.prefixFill > 0 || this.body !== undefined
  }

  private check(flag: number, length: number): ReadFailure | undefined {
    if (flag !== 0) return { _tag: "Compressed" }
    if (length > this.maxLength) return { _tag: "TooLarge", length, max: this.maxLength }
    return undefined
  }

  private fillPrefix(chunk: Uint8Array, pos: number): number {
    const take = Math.min(prefixLength - this.prefixFill, chunk.length - pos)
    this.prefix.set(chunk.subarray(pos, pos + take), this.prefixFill)
    this.prefixFill += take
    if (this.prefixFill < prefixLength) return pos + take
    this.prefixFill = 0
    const length = readLength(this.prefix, 0)
    this.failed = this.check(this.prefix[0]!, length)
    if (this.failed !== undefined) return pos + take
    if (length === 0) this.onMessage(this.prefix.subarray(0, 0))
    else {
      this.body = new Uint8Array(length)
      this.bodyFill = 0
    }
    return pos + take
  }

  private fillBody(body: Uint8Array, chunk: Uint8Array, pos: number): number {
    const take = Math.min(body.length - this.bodyFill, chunk.length - pos)
    body.set(chunk.subarray(pos, pos + take), this.bodyFill)
    this.bodyFill += take
    if (this.bodyFill === body.length) {
      this.body = undefined
      this.onMessage(body)
    }
    return pos + take
  }
}

const readLength = (bytes: Uint8Array, at: number): number =>
  ((bytes[at + 1]! << 24) >>> 0) + (bytes[at + 2]! << 16) + (bytes[at + 3]! << 8) + bytes[at + 4]!
