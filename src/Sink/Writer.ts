/**
 * The scoped writer every sink is built on.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { WriteSummary } from "./WriteSummary.ts"

/**
 * A scoped writer of records of type `A`, with failures of type `E`; `P` is the source position of
 * the exactly-once checkpoint (`never` for at-least-once writers).
 *
 * **Details**
 *
 * - `write(records)`: admits records; it may wait for in-flight capacity (backpressure), never
 *   buffers without bound. Returning does not mean written.
 * - `flush`: a barrier; returns when every earlier record is acknowledged or routed to the
 *   failure handler, then flushes the handler.
 * - `checkpoint(position)`: the exactly-once barrier (drain, save the prepare record, commit).
 * - `summary`: the counters so far.
 *
 * Closing the writer's scope after success flushes; after failure or interruption it releases
 * resources without committing.
 *
 * **Example** (Explicit flushes)
 * ```ts
 * import { Effect } from "effect"
 * import type { Writer } from "effect-gcp-sinks/Sink"
 * declare const writer: Writer<{ id: string }, Error>
 * const program = Effect.gen(function*() {
 *   yield* writer.write([{ id: "a" }, { id: "b" }])
 *   yield* writer.flush
 *   return yield* writer.summary
 * })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Writer<in A, out E, in P = never> {
  readonly write: (records: Iterable<A>) => Effect.Effect<void, E>
  readonly flush: Effect.Effect<void, E>
  readonly checkpoint: (position: P) => Effect.Effect<void, E>
  readonly summary: Effect.Effect<WriteSummary>
}
