/**
 * The committer of the exactly-once mode (reference 3.5): sends each staged envelope as one
 * marker-guarded `CheckAndMutateRow`, at most `maxInFlightRequests` at a time, one attempt each.
 *
 * **Details**
 *
 * - `predicate_matched = true`: the marker was already there, the effect was applied by an earlier
 *   delivery (a lost response, a commit re-run after a restore): counted as deduplicated.
 * - `false`: the mutations and the marker were applied now, atomically: counted as completed.
 * - Any failure (a status, a deadline: ambiguous) cancels the requests still in flight and fails
 *   the commit with `CommitFailed`, which tells the caller to restore and retry: the same envelopes
 *   are re-sent and their markers absorb those already applied. No per-record routing of an
 *   ambiguous commit, no retry here.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { BigtableClientService } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, CommitFailed } from "../../../Bigtable/BigtableError.ts"
import * as metrics from "../metrics.ts"
import type { Envelope } from "./envelope.ts"

/** @internal */
export interface CommitSettings {
  readonly maxInFlightRequests: number
  readonly requestTimeout: Duration.Duration
  readonly perDestinationMetrics: boolean
}

/** What a commit did. @internal */
export interface Committed {
  readonly completed: number
  readonly deduplicated: number
}

/** `projects/p/instances/i/tables/t` as `p.i.t` (the summary's key). @internal */
export const tableKey = (tableName: string): string => {
  const m = /^projects\/([^/]+)\/instances\/([^/]+)\/tables\/([^/]+)$/.exec(tableName)
  return m === null ? tableName : `${m[1]}.${m[2]}.${m[3]}`
}

const count = (
  counter: Metric.Counter<number>,
  tableName: string,
  perDestination: boolean
): Effect.Effect<void> =>
  perDestination
    ? Effect.andThen(
      Metric.update(counter, 1),
      Metric.update(Metric.withAttributes(counter, { destination: tableKey(tableName) }), 1)
    )
    : Metric.update(counter, 1)

/**
 * Commits `envelopes` (see the module comment).
 *
 * @internal
 */
export const commit = Effect.fn("BigtableSink.commit")(function*(
  client: Pick<BigtableClientService, "checkAndMutateRow">,
  envelopes: ReadonlyArray<Envelope>,
  settings: CommitSettings
) {
  yield* Effect.annotateCurrentSpan("requests", envelopes.length)
  let completed = 0
  let deduplicated = 0
  const send = (envelope: Envelope) =>
    client.checkAndMutateRow({ ...envelope, timeout: settings.requestTimeout }).pipe(
      Effect.flatMap((matched) => {
        if (matched) deduplicated++
        else completed++
        return count(
          matched ? metrics.requestsDeduplicated : metrics.requestsCompleted,
          envelope.tableName,
          settings.perDestinationMetrics
        )
      }),
      Effect.catch((error) =>
        Effect.andThen(
          count(metrics.requestsFailed, envelope.tableName, settings.perDestinationMetrics),
          Effect.fail(
            new BigtableError({
              reason: new CommitFailed({
                table: tableKey(envelope.tableName),
                code: error.reason._tag === "RpcFailed" ? error.reason.code : undefined,
                description: error.reason._tag === "RpcFailed" ? error.reason.description : error.message,
                requests: envelopes.length,
                completed,
                deduplicated,
                cause: error
              })
            })
          )
        )
      )
    )
  yield* Effect.forEach(envelopes, send, { concurrency: Math.max(1, settings.maxInFlightRequests), discard: true })
  return { completed, deduplicated } satisfies Committed
})
