/**
 * A periodic progress log for long runs, switched on around a program.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as internal from "../internal/core/progressLog.ts"

/**
 * Logs the progress of every sink and writer built inside `self`, every `interval`: one INFO line
 * per writer with the records written and their rate since the last line, the records in flight,
 * retries, routed failures and skipped records. Off unless asked for; the `Writer`'s `summary` reads
 * the same counters at any time.
 *
 * **Example** (A line every 30 seconds)
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { BigtableSink, type RowMutationEntry, type TableDestination } from "effect-gcp-sinks/Bigtable"
 * import { ProgressLog } from "effect-gcp-sinks/Sink"
 * declare const entries: Stream.Stream<RowMutationEntry.RowMutationEntry>
 * declare const table: TableDestination.TableDestination
 * const run = entries.pipe(
 *   Stream.run(BigtableSink.make({ table, serializer: (e: RowMutationEntry.RowMutationEntry) => e })),
 *   ProgressLog.every("30 seconds")
 * )
 * // logs: BigtableSink: 120000 records written (4000/s), 1000 in flight, 0 retries, 0 failed, 0 skipped
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const every: {
  (interval: Duration.Input): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, interval: Duration.Input): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, interval: Duration.Input): Effect.Effect<A, E, R> =>
    Effect.provideService(self, internal.Interval, Duration.fromInputUnsafe(interval))
)
