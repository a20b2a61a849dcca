/**
 * A minimal decoder of `MutateRowsResponse` wire bytes (google/bigtable/v2/bigtable.proto): the
 * `entries` (1) with their `index` (1) and `google.rpc.Status` (2: `code` 1, `message` 2). Every
 * other field (`rate_limit_info`, status `details`, fields added later) is skipped by wire type.
 *
 * @internal
 */
import type { EntryStatus } from "../../Bigtable/BigtableClient.ts"

/** The status of every applied entry (shared: OK carries no message). @internal */
export const ok: EntryStatus = { code: 0, message: "" }

const decoder = new TextDecoder("utf-8", { fatal: false })

/** A cursor over one message; `end` bounds the current (sub)message. */
class In {
  readonly buf: Uint8Array
  pos: number
  constructor(buf: Uint8Array, pos: number) {
    this.buf = buf
    this.pos = pos
  }
  byte(end: number): number {
    if (this.pos >= end) throw new RangeError("truncated MutateRowsResponse")
    return this.buf[this.pos++] ?? 0
  }
  /** A varint as a number; values above 2^53 lose precision (only indexes and codes are read). */
  varint(end: number): number {
    let result = 0
    let scale = 1
    for (let i = 0; i < 10; i++) {
      const b = this.byte(end)
      result += (b & 0x7f) * scale
      if (b < 0x80) return result
      scale *= 128
    }
    throw new RangeError("malformed varint in MutateRowsResponse")
  }
  /** The end offset of a length-delimited field whose length is next. */
  sub(end: number): number {
    const length = this.varint(end)
    const to = this.pos + length
    if (to > end) throw new RangeError("truncated MutateRowsResponse")
    return to
  }
  skip(wire: number, end: number): void {
    switch (wire) {
      case 0:
        this.varint(end)
        return
      case 1:
        this.pos += 8
        break
      case 2:
        this.pos = this.sub(end)
        return
      case 5:
        this.pos += 4
        break
      default:
        throw new RangeError(`unsupported wire type ${wire} in MutateRowsResponse`)
    }
    if (this.pos > end) throw new RangeError("truncated MutateRowsResponse")
  }
}

const readStatus = (input: In, end: number): EntryStatus => {
  let code = 0
  let message = ""
  while (input.pos < end) {
    const key = input.varint(end)
    const field = Math.floor(key / 8)
    const wire = key & 7
    if (field === 1 && wire === 0) code = input.varint(end) | 0
    else if (field === 2 && wire === 2) {
      const to = input.sub(end)
      message = decoder.decode(input.buf.subarray(input.pos, to))
      input.pos = to
    } else input.skip(wire, end)
  }
  return code === 0 && message === "" ? ok : { code, message }
}

/**
 * Reads one `MutateRowsResponse` into `statuses` (by entry index); indexes outside the request are
 * ignored. Throws a `RangeError` on bytes that are not a well-formed message.
 *
 * @internal
 */
export const readResponse = (bytes: Uint8Array, statuses: Array<EntryStatus | undefined>): void => {
  const input = new In(bytes, 0)
  const end = bytes.length
  while (input.pos < end) {
    const key = input.varint(end)
    if (key === 0x0a) { // entries = 1, length-delimited
      const entryEnd = input.sub(end)
      let index = 0
      let status = ok
      while (input.pos < entryEnd) {
        const k = input.varint(entryEnd)
        if (k === 0x08) index = input.varint(entryEnd) // index = 1, varint
        else if (k === 0x12) { // status = 2, length-delimited
          const statusEnd = input.sub(entryEnd)
          status = readStatus(input, statusEnd)
          input.pos = statusEnd
        } else input.skip(k & 7, entryEnd)
      }
      if (Number.isInteger(index) && index >= 0 && index < statuses.length) statuses[index] = status
    } else input.skip(key & 7, end)
  }
}
