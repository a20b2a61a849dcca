/**
 * The per-record hot path of a BigQuery `write`, on the caller's fiber (the writer core's
 * `Backend.prepare`): resolve each record's destination, read the serializer's fingerprint, and
 * encode the row in place into a slice buffer of its destination (`slices.ts` places each row and
 * cuts the slices). Plain synchronous code; the owner then joins each slice to its destination's batch,
 * copying the smaller of the two (`split.ts`).
 *
 * **Details**
 *
 * - A slice holds the rows of one destination under one fingerprint, at most
 *   `min(maxAppendRequestBytes, maxInFlightBytes)` of frames (a row alone may be more): the permit it
 *   takes is its frames' size, clamped to the bound.
 * - Without a fingerprint, the records of one destination that follow one another are framed by one
 *   loop holding its cursor in locals (`frame`): per record, a resolver call, one comparison and the
 *   row; the destination is looked up only when it changes or a slice was cut.
 * - User code (the resolver, `fingerprint`, `serialize`, `encodeInto`) may throw. The loop runs under
 *   one `Effect.try` per stretch, not one per record; the cursor names the record and what was running
 *   when it threw, so the record is routed (an unroutable one for the resolver, a failed row of its
 *   destination for the others, half-written bytes dropped) and the loop resumes after it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import { failedRow, type UnroutableRecord } from "../../../BigQuery/BigQueryFailure.ts"
import type { RowSerializationError, RowSerializer } from "../../../BigQuery/RowSerializer.ts"
import * as TableDestination from "../../../BigQuery/TableDestination.ts"
import { unresolved } from "../../../Sink/FailedElement.ts"
import type { Limits } from "../../core/backend.ts"
import * as Slices from "./slices.ts"
import * as Split from "./split.ts"

/** What a resolver answers for a record. */
type Resolution = ReturnType<TableDestination.DestinationResolver<unknown>>

/** The user code running when a record's handling threw. @internal */
export type Stage = "destinationResolver" | "fingerprint" | "serialize" | "encodeInto"

/** What `prepare` reads: the sink's resolver and serializer, and what its builders share. @internal */
export interface Env<A> extends Slices.Shared {
  readonly resolve: TableDestination.DestinationResolver<A>
  readonly serializer: RowSerializer<A>
}

/**
 * Drops what the caller's side keeps for a destination the writer no longer holds (evicted, or
 * failed to open), so a resolver over ever new tables keeps these maps bounded. @internal
 */
export const forget = <A>(env: Env<A>, key: string): void => {
  env.sizeHints.delete(key)
  env.projections.delete(key)
}

interface Cursor<A> extends Slices.Run {
  readonly rows: ReadonlyArray<A>
  i: number
  stage: Stage
  lastResolution: TableDestination.TableDestination | undefined
  /** The resolved destination of record `i` while its fingerprint is read (a throw is routed there). */
  fingerprintKey: string
  /** Where the row being encoded in place began when user code threw (for `threw` to drop it), else -1. */
  rowAt: number
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
 * The builder of record `c.i`'s destination, or `undefined` when the record was routed. The user
 * code (resolver, fingerprint) runs before the cursor changes: a throw leaves the cursor as the last
 * record left it, so the next record is matched against a builder and resolution that agree.
 */
const builderOf = <A>(
  c: Cursor<A>,
  env: Env<A>,
  resolved: Resolution
): Slices.Builder | undefined => {
  const last = c.lastResolution
  let resolution: TableDestination.TableDestination
  // the last row's destination again (the common case) was checked then: `instanceof` walks the
  // destination's prototype chain, a third of this function's time on a static table
  if (resolved === last && last !== undefined) resolution = last
  else if (TableDestination.isUnroutable(resolved)) {
    c.out.routed.push(unroutable(resolved.payload, resolved.reason, undefined))
    return undefined
  } else resolution = resolved
  let b = c.builder
  const moved = b === undefined || resolution !== last
  const key = moved || b === undefined ? resolution.toString() : b.key
  if (moved) b = c.builders.get(key)
  const serializer = env.serializer
  let fingerprint: unknown = undefined
  let stale = false
  if (serializer.fingerprint !== undefined) {
    c.stage = "fingerprint"
    c.fingerprintKey = key
    fingerprint = serializer.fingerprint(resolution)
    stale = b !== undefined && fingerprint !== b.fingerprint && !Equal.equals(fingerprint, b.fingerprint)
  }
  c.lastResolution = resolution
  if (stale && b !== undefined) {
    Slices.finish(c, env, b)
    b = undefined
  }
  if (b === undefined) b = Slices.start(c, env, resolution, key, fingerprint)
  c.builder = b
  return b
}

/** A row the serializer skipped (`null`) or refused (its failure). */
const unwritten = <A>(c: Cursor<A>, b: Slices.Builder, result: RowSerializationError | null): void => {
  if (result === null) c.out.skipped.push(b.key)
  else c.out.routed.push(failedRow({ destination: b.key, message: result.message, cause: result }))
}

/** What {@link touch} counted: kept, so the compiler cannot drop the loads it makes. */
let touched = 0

/**
 * Reads the type of each record from `from` on, which loads its object header. The loads of this
 * tight loop do not depend on one another, so the processor keeps many of their cache misses in
 * flight at once, and the loop below finds the headers in cache. Without it, a record whose header
 * was not in cache (records made long before they are written, as a buffered stream hands them
 * over) stalled the loop on its first access, one miss after another: with 16,384 pre-encoded rows
 * cycled through the sink, a fifth of the main thread's samples sat on that one load, and this pass
 * took ~10% off the CPU per row. On records still in cache it costs a load a record.
 */
const touch = <A>(rows: ReadonlyArray<A>, from: number): void => {
  let objects = 0
  for (let i = from; i < rows.length; i++) if (typeof rows[i] === "object") objects++
  touched += objects
}

/** What {@link frame} returns when it read no other destination. */
const none: unique symbol = Symbol("none")

/**
 * Frames records from `c.i` (already resolved to `b`'s destination, `last`) up to `end`, while they
 * resolve to the same destination: without a fingerprint, the run of one destination's records, with
 * the cursor in locals (written back when user code throws). Stops at `end`; after a row that cut `b`'s
 * slice (`c.i` is then past it, and the next record is looked up again); or before a record of another
 * destination: then `c.i` is that record and its resolution is returned, for {@link run} to go on with.
 */
const frame = <A>(
  c: Cursor<A>,
  env: Env<A>,
  b: Slices.Builder,
  last: TableDestination.TableDestination,
  end: number
): Resolution | typeof none => {
  const { rows } = c
  const { resolve, serializer } = env
  const batch = b.batch
  let next: Resolution | typeof none = none
  let i = c.i
  let stage: Stage = "destinationResolver"
  let begun = -1 // the frame of a row begun in place, not yet ended: what a throw leaves to cancel
  try {
    for (; i < end; i++) {
      const record = rows[i] as A
      if (i !== c.i) {
        stage = "destinationResolver"
        next = resolve(record)
        if (next !== last) break
      }
      let length: number, at: number
      if (serializer.encodeInto !== undefined) {
        stage = "encodeInto"
        at = begun = Split.beginRow(batch)
        // called as a method: a serializer may be a class instance
        const result = serializer.encodeInto(batch.writer, record, b.destination)
        begun = -1
        if (result !== undefined) {
          Split.cancelRow(batch, at)
          unwritten(c, b, result)
          continue
        }
        length = Split.endRow(batch, at)
      } else {
        stage = "serialize"
        const row = serializer.serialize(record, b.destination)
        if (!(row instanceof Uint8Array)) {
          unwritten(c, b, row)
          continue
        }
        length = row.length
        at = Split.appendRow(batch, row)
      }
      if (Slices.place(c, env, b, at, length)) {
        i++
        break
      }
    }
  } catch (cause) {
    // rethrown to `prepare`'s `Effect.try`: `threw` routes the record by the cursor written back here
    c.stage = stage
    c.rowAt = begun
    throw cause
  } finally {
    c.i = i
  }
  return next === last ? none : next
}

/** Runs the loop from record `c.i` to the end. May throw (user code): see {@link threw}. */
const run = <A>(c: Cursor<A>, env: Env<A>): void => {
  const rows = c.rows
  touch(rows, c.i)
  const resolve = env.resolve
  // without a fingerprint, a record of the last record's destination keeps its builder: nothing to
  // look up, and `frame` goes on through the run of such records; with one, each record is looked up
  const keeps = env.serializer.fingerprint === undefined
  let next: Resolution | typeof none = none
  while (c.i < rows.length) {
    c.stage = "destinationResolver"
    const resolved: Resolution = next === none
      ? resolve(rows[c.i] as A)
      : next
    next = none
    const b: Slices.Builder | undefined = keeps && resolved === c.lastResolution && c.builder !== undefined
      ? c.builder
      : builderOf(c, env, resolved)
    const last = c.lastResolution
    if (b === undefined || last === undefined) c.i++
    else next = frame(c, env, b, last, keeps ? rows.length : c.i + 1)
  }
}

/** User code handling record `c.i` threw `cause`: the record is routed and the loop moves past it. */
const threw = <A>(c: Cursor<A>, cause: unknown): void => {
  const message = `the ${c.stage} threw: ${describe(cause)}`
  const b = c.builder
  if (c.stage === "fingerprint") c.out.routed.push(failedRow({ destination: c.fingerprintKey, message, cause }))
  else if (c.stage === "destinationResolver" || b === undefined) {
    c.out.routed.push(unroutable(undefined, message, cause))
  } else {
    if (c.rowAt >= 0) Split.cancelRow(b.batch, c.rowAt)
    c.out.routed.push(failedRow({ destination: b.key, message, cause }))
  }
  c.rowAt = -1
  c.i++
}

/**
 * Prepares a run of records into slices (one destination and fingerprint each), routed failures
 * and skipped records, with one `Effect.try` per stretch of records between two throws.
 *
 * @internal
 */
export const prepare = Effect.fnUntraced(function*<A>(env: Env<A>, records: ReadonlyArray<A>, limits: Limits) {
  const c: Cursor<A> = {
    rows: records,
    cut: Math.min(env.maxAppendRequestBytes, limits.maxBytes),
    maxBytes: limits.maxBytes,
    i: 0,
    stage: "destinationResolver",
    builder: undefined,
    lastResolution: undefined,
    fingerprintKey: "",
    rowAt: -1,
    builders: new Map(),
    runFrames: new Map(),
    out: { slices: [], routed: [], skipped: [] }
  }
  const stretch = Effect.result(Effect.try({ try: () => run(c, env), catch: (cause) => ({ thrown: cause }) }))
  for (;;) {
    const result = yield* stretch
    if (result._tag === "Success") break
    threw(c, result.failure.thrown)
  }
  for (const b of c.builders.values()) Slices.finish(c, env, b)
  for (const [key, frames] of c.runFrames) env.sizeHints.set(key, frames)
  return c.out
})
