/**
 * The per-record hot path of a BigQuery `write`: resolve each record's destination, check the
 * serializer's fingerprint, and encode the row straight into its destination's batch buffer. Plain
 * synchronous code over a {@link Cursor}: it runs until the writer must do something effectful (open
 * a destination, refresh its schema, send a full batch) or the records are done, and says which.
 *
 * **Details**
 *
 * User code (the resolver, `fingerprint`, `serialize`, `encodeInto`) may throw. The loop runs under
 * one `Effect.try` per stretch, not one per record; the cursor names the record and what was running
 * when it threw ({@link threw}), so the writer routes that record (an unroutable one for the
 * resolver, a failed row of its destination for the others, half-written bytes dropped) and resumes
 * after it.
 *
 * @internal
 */
import * as Equal from "effect/Equal"
import { type BigQueryFailure, failedRow, type UnroutableRecord } from "../../BigQuery/BigQueryFailure.ts"
import type { RowSerializer } from "../../BigQuery/RowSerializer.ts"
import * as TableDestination from "../../BigQuery/TableDestination.ts"
import { unresolved } from "../../Sink/FailedElement.ts"
import { maxRowBytes } from "./appendRequest.ts"
import type { Destination } from "./destination.ts"
import * as Split from "./split.ts"

/** What the writer must do before the loop goes on. @internal */
export type Need =
  /** Every record is done. */
  | "done"
  /** Open `cursor.pending`, then resume at the same record. */
  | "open"
  /** Send `cursor.destination`'s batch and re-read its schema, then resume at the same record. */
  | "refresh"
  /** Send `cursor.sealed` (a full batch of `cursor.sealedFor`), then resume at the next record. */
  | "send"

/** The user code running when a record's handling threw. @internal */
export type Stage = "destinationResolver" | "fingerprint" | "serialize" | "encodeInto"

/**
 * Where the loop stands in a run of records. Written by {@link run} and by the writer between two
 * stretches (on its own fiber); failures to route collect in `routed`.
 *
 * @internal
 */
export interface Cursor<A> {
  readonly rows: ReadonlyArray<A>
  readonly now: number
  /** The record being handled. */
  i: number
  stage: Stage
  /** The destination of the current record (and of the run of records resolved to the same object). */
  destination: Destination | undefined
  lastResolution: unknown
  /** The record `i` is resolved (to `destination`) and checked: resuming skips both. */
  resolvedAt: number
  checkedAt: number
  /** A resolved destination not open yet. */
  pending: TableDestination.TableDestination | undefined
  /** Where the row being encoded begins in its batch (-1 when none). */
  rowAt: number
  sealed: Split.Sealed | undefined
  sealedFor: Destination | undefined
  skipped: number
  readonly routed: Array<BigQueryFailure>
}

/** @internal */
export const cursor = <A>(rows: ReadonlyArray<A>, now: number): Cursor<A> => ({
  rows,
  now,
  i: 0,
  stage: "destinationResolver",
  destination: undefined,
  lastResolution: undefined,
  resolvedAt: -1,
  checkedAt: -1,
  pending: undefined,
  rowAt: -1,
  sealed: undefined,
  sealedFor: undefined,
  skipped: 0,
  routed: []
})

/** What the loop reads: the writer's settings and state. @internal */
export interface Env<A> {
  readonly resolve: TableDestination.DestinationResolver<A>
  readonly serializer: RowSerializer<A>
  readonly destinations: ReadonlyMap<string, Destination>
  readonly pool: Split.Pool
  readonly maxBytes: number
  /** Counts a record the serializer skipped. */
  readonly skip: (d: Destination) => void
}

const skip = <A>(c: Cursor<A>, env: Env<A>, d: Destination): void => {
  c.skipped++
  env.skip(d)
}

/** The destination of record `c.i`; `"routed"` when it is unroutable, `"open"` when its destination must be opened first. */
const resolveRecord = <A>(c: Cursor<A>, env: Env<A>, record: A): Destination | "routed" | "open" => {
  if (c.resolvedAt === c.i && c.destination !== undefined) return c.destination
  c.stage = "destinationResolver"
  const resolution = env.resolve(record)
  if (TableDestination.isUnroutable(resolution)) {
    c.routed.push(unroutable(resolution.payload, resolution.reason, undefined))
    return "routed"
  }
  if (c.destination === undefined || resolution !== c.lastResolution) {
    const known = env.destinations.get(resolution.toString())
    if (known === undefined) {
      c.pending = resolution
      return "open"
    }
    c.destination = known
    c.lastResolution = resolution
    known.lastUsedMillis = c.now
  }
  c.resolvedAt = c.i
  return c.destination
}

/** Whether `d`'s schema must be re-read before record `c.i` (the serializer's fingerprint moved, or the service pushed one). */
const staleSchema = <A>(c: Cursor<A>, env: Env<A>, d: Destination): boolean => {
  const fingerprintOf = env.serializer.fingerprint
  if (c.checkedAt === c.i || (fingerprintOf === undefined && !d.schemaPushed)) return false
  c.stage = "fingerprint"
  const fingerprint = fingerprintOf?.(d.destination)
  c.checkedAt = c.i
  return d.schemaPushed || (fingerprint !== d.fingerprint && !Equal.equals(fingerprint, d.fingerprint))
}

/**
 * Frames record `record` into `d`'s batch: the row's length, or `undefined` when it was skipped or
 * routed (its bytes dropped); `c.rowAt` is where it begins.
 */
const encode = <A>(c: Cursor<A>, env: Env<A>, d: Destination, record: A): number | undefined => {
  const batch = d.batch
  const encodeInto = env.serializer.encodeInto
  if (encodeInto !== undefined) {
    c.stage = "encodeInto"
    const at = (c.rowAt = Split.beginRow(batch))
    const result = encodeInto(batch.writer, record, d.destination)
    if (result === undefined) return Split.endRow(batch, at)
    Split.cancelRow(batch, at)
    c.rowAt = -1
    if (result === null) skip(c, env, d)
    else c.routed.push(failedRow({ destination: d.key, message: result.message, cause: result }))
    return undefined
  }
  c.stage = "serialize"
  const row = env.serializer.serialize(record, d.destination)
  if (row === null) {
    skip(c, env, d)
    return undefined
  }
  if (!(row instanceof Uint8Array)) {
    c.routed.push(failedRow({ destination: d.key, message: row.message, cause: row }))
    return undefined
  }
  c.rowAt = Split.appendRow(batch, row)
  return row.length
}

/**
 * Runs the loop from record `c.i` until the writer must act ({@link Need}). May throw (user code):
 * then {@link threw} routes the record and moves past it.
 *
 * @internal
 */
export const run = <A>(c: Cursor<A>, env: Env<A>): Need => {
  const rows = c.rows
  while (c.i < rows.length) {
    const record = rows[c.i] as A
    const d = resolveRecord(c, env, record)
    if (d === "open") return "open"
    if (d === "routed") {
      c.i++
      continue
    }
    if (staleSchema(c, env, d)) return "refresh"
    const length = encode(c, env, d, record)
    const at = c.rowAt
    c.rowAt = -1
    c.i++
    if (length === undefined) continue
    if (Split.isOversize(length)) {
      const payload = Split.rowCopy(d.batch, length)
      Split.cancelRow(d.batch, at)
      c.routed.push(failedRow({
        destination: d.key,
        payload,
        message: `row of ${length} bytes exceeds the ${maxRowBytes}-byte row limit; not sent`
      }))
      continue
    }
    const full = Split.admit(env.pool, d.batch, at, length, env.maxBytes)
    if (full !== undefined) {
      c.sealed = full
      c.sealedFor = d
      return "send"
    }
  }
  return "done"
}

const unroutable = (payload: Uint8Array | undefined, message: string, cause: unknown): UnroutableRecord => ({
  _tag: "UnroutableRecord",
  connector: "bigquery",
  destination: unresolved,
  payload,
  message,
  ...(cause === undefined ? {} : { cause })
})

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * The user code handling record `c.i` threw `cause`: the record is routed (unroutable when the
 * resolver threw, else a failed row of its destination, whatever it had written dropped) and the
 * loop moves past it.
 *
 * @internal
 */
export const threw = <A>(c: Cursor<A>, cause: unknown): void => {
  const message = `the ${c.stage} threw: ${describe(cause)}`
  const d = c.destination
  if (c.stage === "destinationResolver" || d === undefined) c.routed.push(unroutable(undefined, message, cause))
  else {
    if (c.rowAt >= 0) Split.cancelRow(d.batch, c.rowAt)
    c.routed.push(failedRow({ destination: d.key, message, cause }))
  }
  c.rowAt = -1
  c.i++
}

/**
 * A serializer's schema call threw while record `c.i`'s destination `key` was opened or its schema
 * re-read (destination.ts `SerializerThrew`): the record is routed as a failed row of `key`, and the
 * loop moves past it.
 *
 * @internal
 */
export const schemaThrew = <A>(c: Cursor<A>, key: string, stage: string, cause: unknown): void => {
  c.routed.push(failedRow({ destination: key, message: `the serializer's ${stage} threw: ${describe(cause)}`, cause }))
  c.pending = undefined
  c.rowAt = -1
  c.i++
}
