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
  readonly responseTimeout: Duration.Duration
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

/** The requests of one table that a commit counted, applied to the metrics once at its end. */
interface Tally {
  completed: number
  deduplicated: number
  failed: number
}

const update = (counter: Metric.Counter<number>, n: number, tableName: string, perDestination: boolean) =>
  n === 0 ? Effect.void : perDestination
    ? Effect.andThen(
      Metric.update(counter, n),
      Metric.update(Metric.withAttributes(counter, { destination: tableKey(tableName) }), n)
    )
    : Metric.update(counter, n)

/** The tallies of one commit, by table. */
const tallies = (perDestination: boolean) => {
  const byTable = new Map<string, Tally>()
  return {
    of: (tableName: string): Tally => {
      let t = byTable.get(tableName)
      if (t === undefined) {
        t = { completed: 0, deduplicated: 0, failed: 0 }
        byTable.set(tableName, t)
      }
      return t
    },
    /** The requests of every table that were applied, or found applied, so far. */
    totals: (): Committed => {
      let completed = 0
      let deduplicated = 0
      for (const t of byTable.values()) {
        completed += t.completed
        deduplicated += t.deduplicated
      }
      return { completed, deduplicated }
    },
    toMetrics: Effect.suspend(() =>
      Effect.forEach(byTable, ([tableName, t]) =>
        Effect.andThen(
          update(metrics.requestsCompleted, t.completed, tableName, perDestination),
          Effect.andThen(
            update(metrics.requestsDeduplicated, t.deduplicated, tableName, perDestination),
            update(metrics.requestsFailed, t.failed, tableName, perDestination)
          )
        ), { discard: true })
    )
  }
}

const commitFailed = (envelope: Envelope, error: BigtableError, requests: number, done: Committed) =>
  new BigtableError({
    reason: new CommitFailed({
      table: tableKey(envelope.tableName),
      code: error.reason._tag === "BigtableRpcFailed" ? error.reason.code : undefined,
      description: error.reason._tag === "BigtableRpcFailed" ? error.reason.description : error.message,
      requests,
      ...done,
      cause: error
    })
  })

/**
 * Commits `envelopes` (see the module comment).
 *
 * **Details**
 *
 * At most `maxInFlightRequests` requests in flight, started in order; the first failure interrupts
 * the others. The request metrics are counted per table as the answers arrive and added to the
 * counters once when the commit ends, failed or not.
 *
 * @internal
 */
export const commit = Effect.fn("BigtableSink.commit")(function*(
  client: Pick<BigtableClientService, "checkAndMutateRow">,
  envelopes: ReadonlyArray<Envelope>,
  settings: CommitSettings
) {
  yield* Effect.annotateCurrentSpan("requests", envelopes.length)
  const counted = tallies(settings.perDestinationMetrics)
  const send = (envelope: Envelope): Effect.Effect<void, BigtableError> =>
    Effect.matchEffect(
      client.checkAndMutateRow({
        tableName: envelope.tableName,
        appProfileId: envelope.appProfileId,
        rowKey: envelope.rowKey,
        markerFamily: envelope.markerFamily,
        identity: envelope.identity,
        mutations: envelope.mutations,
        timeout: settings.responseTimeout
      }),
      {
        onSuccess: (matched) => {
          const t = counted.of(envelope.tableName)
          if (matched) t.deduplicated++
          else t.completed++
          return Effect.void
        },
        onFailure: (error) => {
          counted.of(envelope.tableName).failed++
          return Effect.fail(commitFailed(envelope, error, envelopes.length, counted.totals()))
        }
      }
    )
  yield* Effect.forEach(envelopes, send, {
    concurrency: Math.max(1, settings.maxInFlightRequests),
    discard: true
  }).pipe(Effect.ensuring(counted.toMetrics))
  return counted.totals()
})
