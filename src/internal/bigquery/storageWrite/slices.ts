/**
 * The slices of one `prepare` call: each destination's rows are framed by a builder, which places
 * every row in the batch it will feed and closes its rows as slices where that batch fills (sealing
 * it) or where a slice reaches its cut. A builder is sized by its destination's last run and starts
 * past its open batch's projected rows (`projection.ts`), so the owner copies each row once; when its
 * first row does not fit that batch, its slice starts the next one instead (the owner sends the open
 * batch first).
 *
 * @internal
 */
import { type BigQueryFailure, failedRow } from "../../../BigQuery/BigQueryFailure.ts"
import type * as TableDestination from "../../../BigQuery/TableDestination.ts"
import type { Slice } from "../../core/backend.ts"
import { bodyIn, maxRowBytes } from "../transport/appendRequest.ts"
import * as Projection from "./projection.ts"
import * as Split from "./split.ts"

/**
 * One destination's rows of a slice: framed as a `ProtoRows` body in `buffer` (given back to the
 * slice pool once the owner copied them), all encoded under `fingerprint`.
 *
 * @internal
 */
export interface Rows {
  readonly destination: TableDestination.TableDestination
  readonly key: string
  readonly fingerprint: unknown
  readonly body: Uint8Array
  readonly buffer: Buffer
  readonly count: number
  readonly bytes: number
  /** The slice's permit bytes less its frames (negative only for one row over the in-flight bound). */
  readonly slack: number
  /** Its rows complete a batch: the owner sends the batch once they are in. */
  readonly sealsBatch: boolean
  /** Its first row does not fit the batch before it: the owner sends that batch first. */
  readonly startsBatch: boolean
  /** Its stamp in its destination's projection (`Projection.offer`). */
  readonly seals: number
}

/** The rows of one destination being framed. @internal */
export interface Builder {
  readonly destination: TableDestination.TableDestination
  readonly key: string
  readonly fingerprint: unknown
  readonly batch: Split.Batch
  /** Its destination's projection, made when its first slice is emitted (skipped rows leave none). */
  projection: Projection.Projection | undefined
  /** Frames this builder may take before the batch it feeds is full. */
  room: number
  /** Its next slice starts a batch: its first row did not fit the room the projection left. */
  starts: boolean
}

/** What the builders of every `prepare` call share: the batch limit, the slice pool and hints. @internal */
export interface Shared {
  readonly maxAppendRequestBytes: number
  /** Buffers of slices the owner has copied, for the next ones (one thread: no fiber waits on it). */
  readonly pool: Split.Pool
  /**
   * The frame bytes each destination took in the last run that had rows for it: the buffer the
   * next run's first slice starts with (a run's last slice may be a small tail, cut where a batch
   * filled, while the next run brings as many rows as this one). Both maps hold destinations the
   * writer has open or opening: eviction forgets them (`Prepare.forget`).
   */
  readonly sizeHints: Map<string, number>
  readonly projections: Map<string, Projection.Projection>
}

/** What one `prepare` call's builders write to. @internal */
export interface Run {
  /** Where a slice is cut: `min(maxAppendRequestBytes, maxInFlightBytes)` of frames. */
  readonly cut: number
  /** The in-flight bound: a slice's permit is its frames, clamped to it. */
  readonly maxBytes: number
  readonly builders: Map<string, Builder>
  /** The builder of the last record's destination; none after a cut (the next record looks it up). */
  builder: Builder | undefined
  /** The frame bytes emitted in this run, by destination: the next run's size hints. */
  readonly runFrames: Map<string, number>
  readonly out: { slices: Array<Slice<Rows>>; routed: Array<BigQueryFailure>; skipped: Array<string> }
}

/** Past this many bytes, a slice is expected to fill its buffer: it takes a full-size pooled one. */
const largeSlice = 16 * 1024

/**
 * The batch a builder frames into. A destination whose last run was large starts on a full-size pooled
 * buffer, its rows after a gap the size of its open batch's (projected) rows: the owner copies those
 * into the gap rather than this slice's rows after them (`Split.join`), so each row is copied once.
 */
const batchOf = (pool: Split.Pool, hint: number, projected: number): Split.Batch =>
  hint >= largeSlice ? Split.sized(pool, pool.capacity, projected) : Split.sized(pool, hint)

/** A builder for `destination`'s rows, sized by its last run and its open batch. @internal */
export const start = (
  c: Run,
  env: Shared,
  destination: TableDestination.TableDestination,
  key: string,
  fingerprint: unknown
): Builder => {
  const projection = env.projections.get(key)
  const projected = projection?.frames ?? 0
  const builder = {
    destination,
    key,
    fingerprint,
    batch: batchOf(env.pool, env.sizeHints.get(key) ?? 0, projected),
    projection,
    room: Math.max(0, env.maxAppendRequestBytes - projected),
    starts: false
  }
  c.builders.set(key, builder)
  return builder
}

/** Offers `body` (`count` rows of `bytes` bytes framed in `buffer`) as a slice of `b`'s destination. */
const emit = (
  c: Run,
  env: Shared,
  b: Builder,
  rows: { readonly body: Uint8Array; readonly buffer: Buffer; readonly count: number; readonly bytes: number },
  sealsBatch: boolean
): void => {
  const frames = rows.body.length
  const permitBytes = Math.min(frames, c.maxBytes)
  c.runFrames.set(b.key, (c.runFrames.get(b.key) ?? 0) + frames)
  let projection = b.projection
  if (projection === undefined) {
    projection = env.projections.get(b.key) ?? Projection.make()
    env.projections.set(b.key, projection)
    b.projection = projection
  }
  const startsBatch = b.starts
  b.starts = false
  const seals = Projection.offer(projection, frames, sealsBatch, startsBatch)
  c.out.slices.push({
    payload: {
      destination: b.destination,
      key: b.key,
      fingerprint: b.fingerprint,
      body: rows.body,
      buffer: rows.buffer,
      count: rows.count,
      bytes: rows.bytes,
      slack: permitBytes - frames,
      sealsBatch,
      startsBatch,
      seals
    },
    units: rows.count,
    bytes: rows.bytes,
    permitBytes
  })
}

/** Closes a builder's rows as a slice (nothing when it has none), sealing its batch or not. @internal */
export const finish = (c: Run, env: Shared, b: Builder, sealsBatch = false): void => {
  const batch = b.batch
  if (batch.count === 0) return
  const w = batch.writer
  emit(c, env, b, {
    body: bodyIn(w.buf, w.pos, batch.start),
    buffer: w.buf,
    count: batch.count,
    bytes: batch.bytes
  }, sealsBatch)
}

/**
 * Takes the row of `length` bytes just framed at `at` into `b`'s batch, or routes it when it is over
 * the row limit. True when `b`'s slice reached the cut and was closed: its destination's next rows
 * start a new builder.
 *
 * @internal
 */
export const place = (c: Run, env: Shared, b: Builder, at: number, length: number): boolean => {
  const batch = b.batch
  if (Split.isOversize(length)) {
    const payload = Split.rowCopy(batch, length)
    Split.cancelRow(batch, at)
    c.out.routed.push(failedRow({
      destination: b.key,
      payload,
      message: `row of ${length} bytes exceeds the ${maxRowBytes}-byte row limit; not sent`
    }))
    return false
  }
  if (batch.count === 0 && Split.frameBytes(batch) > b.room && b.room < env.maxAppendRequestBytes) {
    // the first row does not fit what the open batch will hold: it starts the next batch, the owner
    // sending the open one first (else the row would be sealed alone when the second one came)
    b.starts = true
    b.room = env.maxAppendRequestBytes
    Split.restart(batch)
  }
  // the row that would take the batch it feeds over the limit starts the next one (`at` is read only
  // when the batch holds rows: not after a restart)
  const full = Split.admit(env.pool, batch, at, length, b.room, false)
  if (full !== undefined) {
    emit(c, env, b, full, true)
    b.room = env.maxAppendRequestBytes
    return false
  }
  const frames = Split.frameBytes(batch)
  if (frames < c.cut) return false
  // a slice that fills its batch exactly seals it: left open, the next builder would have no room and
  // its first row would go out as an append of its own
  finish(c, env, b, frames >= b.room)
  start(c, env, b.destination, b.key, b.fingerprint)
  c.builder = undefined
  return true
}
