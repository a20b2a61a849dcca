/**
 * Cutting encoded rows into appends by bytes (reference 2.4 step 7): a batch is closed when the
 * next row would take its `ProtoRows` over `maxAppendRequestBytes`; there is no row-count bound.
 * A row alone larger than the limit (but within the 9 MiB row cap) forms its own batch.
 *
 * @internal
 */
import { maxRowBytes, rowFrameLength } from "./appendRequest.ts"

/** Rows accumulating for one destination; `frameBytes` is their size inside `ProtoRows`. @internal */
export interface Batch {
  rows: Array<Uint8Array>
  /** Sum of the rows' own lengths: what `bytesWritten` counts. */
  bytes: number
  /** Sum of {@link rowFrameLength}: what the request limit is checked against. */
  frameBytes: number
}

/** @internal */
export const empty = (): Batch => ({ rows: [], bytes: 0, frameBytes: 0 })

/** Whether a row of `rowLength` may join the batch without crossing `maxBytes`. @internal */
export const fits = (batch: Batch, rowLength: number, maxBytes: number): boolean =>
  batch.rows.length === 0 || batch.frameBytes + rowFrameLength(rowLength) <= maxBytes

/** Adds a row (the caller checked {@link fits}). @internal */
export const add = (batch: Batch, row: Uint8Array): void => {
  batch.rows.push(row)
  batch.bytes += row.length
  batch.frameBytes += rowFrameLength(row.length)
}

/** Whether a row is over the 9 MiB cap and must be routed without being sent. @internal */
export const isOversize = (row: Uint8Array): boolean => row.length > maxRowBytes

/**
 * Splits rows into consecutive batches, each within `maxBytes` unless it holds a single row.
 *
 * @internal
 */
export const split = (rows: ReadonlyArray<Uint8Array>, maxBytes: number): Array<Batch> => {
  const out: Array<Batch> = []
  let current = empty()
  for (const row of rows) {
    if (!fits(current, row.length, maxBytes)) {
      out.push(current)
      current = empty()
    }
    add(current, row)
  }
  if (current.rows.length > 0) out.push(current)
  return out
}
