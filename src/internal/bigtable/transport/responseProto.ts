/**
 * A minimal decoder of `MutateRowsResponse` wire bytes (google/bigtable/v2/bigtable.proto): the
 * `entries` (1) with their `index` (1) and `google.rpc.Status` (2: `code` 1, `message` 2). Every
 * other field (`rate_limit_info`, status `details`, fields added later) is skipped by wire type.
 *
 * **Details**
 *
 * A hand loop over the shared reader rather than a `protoReader.ts` field table: a response
 * answers every request, and the loop writes each status straight into `statuses` (the shared
 * `ok` for applied entries) without an object per entry or an array of entries.
 *
 * @internal
 */
import type { EntryStatus } from "../../../Bigtable/BigtableClient.ts"
import { ProtoReader } from "../../wire/protoReader.ts"

/** The status of every applied entry (shared: OK carries no message). @internal */
export const ok: EntryStatus = { code: 0, message: "" }

const readStatus = (r: ProtoReader, end: number): EntryStatus => {
  let code = 0
  let message = ""
  while (r.pos < end) {
    const key = r.key(end)
    if (key === 0x08) code = r.int32(end) // code = 1, varint
    else if (key === 0x12) message = r.string(end) // message = 2, length-delimited
    else r.skip(key & 7, end)
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
  const r = new ProtoReader(bytes, "MutateRowsResponse")
  const end = bytes.length
  while (r.pos < end) {
    const key = r.key(end)
    if (key === 0x0a) { // entries = 1, length-delimited
      const entryEnd = r.delimited(end)
      let index = 0
      let status = ok
      while (r.pos < entryEnd) {
        const k = r.key(entryEnd)
        if (k === 0x08) index = r.int64(entryEnd) // index = 1, varint
        else if (k === 0x12) { // status = 2, length-delimited
          const statusEnd = r.delimited(entryEnd)
          status = readStatus(r, statusEnd)
          r.pos = statusEnd
        } else r.skip(k & 7, entryEnd)
      }
      if (Number.isInteger(index) && index >= 0 && index < statuses.length) statuses[index] = status
    } else r.skip(key & 7, end)
  }
}
