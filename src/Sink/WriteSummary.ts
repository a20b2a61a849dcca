/**
 * What a finished write reports: records written, skipped and failed, bytes and retries.
 *
 * @since 0.1.0
 */
import type * as Record from "effect/Record"

/**
 * The counters of one destination table, or of a whole write.
 *
 * - `recordsWritten`: acknowledged by the service.
 * - `bytesWritten`: serialized bytes of the written records.
 * - `recordsSkipped`: the serializer returned `null`; written nowhere, never a failure.
 * - `recordsFailed`: routed to the failure handler, which dropped them.
 * - `retries`: requests or entries sent again after a transient failure.
 *
 * @category models
 * @since 0.1.0
 */
export interface Counters {
  readonly recordsWritten: number
  readonly bytesWritten: number
  readonly recordsSkipped: number
  readonly recordsFailed: number
  readonly retries: number
}

/**
 * What `Stream.run(sink)` returns, and what `writer.summary` reads at any time: the totals, and
 * the same counters per destination (`p.d.t`, `p.i.t`, or `"unresolved"`).
 *
 * **Example** (Reading a summary)
 * ```ts
 * import { WriteSummary } from "effect-gcp-sinks/Sink"
 * const summary = WriteSummary.combine(WriteSummary.empty, WriteSummary.empty)
 * summary.recordsWritten
 * // => 0
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface WriteSummary extends Counters {
  readonly destinations: Record.ReadonlyRecord<string, Counters>
}

const zero: Counters = { recordsWritten: 0, bytesWritten: 0, recordsSkipped: 0, recordsFailed: 0, retries: 0 }

const add = (a: Counters, b: Counters): Counters => ({
  recordsWritten: a.recordsWritten + b.recordsWritten,
  bytesWritten: a.bytesWritten + b.bytesWritten,
  recordsSkipped: a.recordsSkipped + b.recordsSkipped,
  recordsFailed: a.recordsFailed + b.recordsFailed,
  retries: a.retries + b.retries
})

/**
 * Builds a summary from per-destination counters; the totals are their sums.
 *
 * **Example** (Two tables)
 * ```ts
 * import { WriteSummary } from "effect-gcp-sinks/Sink"
 * const row = { recordsWritten: 2, bytesWritten: 20, recordsSkipped: 0, recordsFailed: 0, retries: 0 }
 * WriteSummary.fromDestinations({ "p.d.a": row, "p.d.b": row }).recordsWritten
 * // => 4
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
const fromDestinations = (destinations: Record.ReadonlyRecord<string, Counters>): WriteSummary => {
  let totals = zero
  const copy: { [destination: string]: Counters } = {}
  for (const [destination, counters] of Object.entries(destinations)) {
    totals = add(totals, counters)
    copy[destination] = { ...counters }
  }
  return { ...totals, destinations: copy }
}

/**
 * Adds two summaries, destination by destination; useful to total several writers.
 *
 * **Example** (Totalling two writers)
 * ```ts
 * import { WriteSummary } from "effect-gcp-sinks/Sink"
 * WriteSummary.combine(WriteSummary.empty, WriteSummary.empty).retries
 * // => 0
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
const combine = (self: WriteSummary, that: WriteSummary): WriteSummary => {
  const merged: { [destination: string]: Counters } = { ...self.destinations }
  for (const [destination, counters] of Object.entries(that.destinations)) {
    merged[destination] = add(merged[destination] ?? zero, counters)
  }
  return fromDestinations(merged)
}

/**
 * Constructors and combinators of {@link WriteSummary}.
 *
 * **Example** (The empty summary)
 * ```ts
 * import { WriteSummary } from "effect-gcp-sinks/Sink"
 * WriteSummary.empty.recordsFailed
 * // => 0
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const WriteSummary: {
  /** A summary of nothing written. */
  readonly empty: WriteSummary
  /** The counters of one destination with nothing written. */
  readonly zero: Counters
  readonly fromDestinations: typeof fromDestinations
  readonly combine: typeof combine
} = {
  empty: { ...zero, destinations: {} },
  zero,
  fromDestinations,
  combine
}
