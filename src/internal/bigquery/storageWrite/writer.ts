/**
 * The at-least-once BigQuery writer: the writer core (`internal/core/`) with the BigQuery backend
 * (`backend.ts`). The core opens the failure handler, runs the owner fiber, admits rows under the
 * writer-global in-flight bounds (`maxInFlightBytes`; `maxInFlightRequests` appends in flight, the
 * others waiting in order), routes failures, keeps the counters and gauges, and closes after success
 * with a barrier (release without flushing after a failure or an interruption).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { BigQueryClient, type BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import type { Writer } from "../../../Sink/Writer.ts"
import type { Limits } from "../../core/backend.ts"
import * as core from "../../core/writer.ts"
import * as deadline from "../../wire/deadline.ts"
import * as metrics from "../metrics.ts"
import type { Settings, StreamSettings } from "../options.ts"
import * as Backend from "./backend.ts"
import * as Verdict from "./verdict.ts"

/**
 * The core's in-flight bounds for BigQuery, which bounds requests and bytes, not rows: at most
 * `maxInFlightRequests` appends in flight (the others wait in order), and rows admitted but not yet
 * written (batched, queued or in flight) wait once they hold `maxInFlightBytes`, or what
 * `maxInFlightRequests` full appends carry if that is less (admission waits for the request window).
 *
 * @internal
 */
export const limitsOf = (s: StreamSettings): Limits => ({
  maxUnits: Number.MAX_SAFE_INTEGER,
  maxBytes: Math.min(s.maxInFlightBytes, s.maxInFlightRequests * s.maxAppendRequestBytes),
  maxRequests: s.maxInFlightRequests
})

/**
 * Builds the writer in the current scope: opens the failure handler now (closed with the scope),
 * flushes when the scope closes after success if anything was written since the last flush, and
 * releases everything without flushing after a failure or an interruption.
 *
 * @internal
 */
export const make = <A, E, R>(
  settings: Settings<A, E, R>
): Effect.Effect<Writer<A, BigQueryError | E>, E, BigQueryClient | R | Scope.Scope> => makeWith(settings)

/** What the exactly-once mode plugs into the backend (`exactlyOnce/mode.ts`). @internal */
export interface ExactlyOnceHooks<E> {
  readonly mode: (client: BigQueryClientService) => Backend.Mode
  readonly onOwner: (owner: Backend.OwnerView<BigQueryError | E>) => void
}

/**
 * `make` with the exactly-once mode plugged in (`exactlyOnce/mode.ts`), handing the core the backend
 * runs on and its open destinations to `onOwner` (the checkpoint's participant reaches the owner
 * through it).
 *
 * @internal
 */
export const makeWith: <A, E, R>(
  settings: Settings<A, E, R>,
  exactlyOnce?: ExactlyOnceHooks<E>
) => Effect.Effect<Writer<A, BigQueryError | E>, E, BigQueryClient | R | Scope.Scope> = Effect.fnUntraced(
  function*<A, E, R>(
    settings: Settings<A, E, R>,
    exactlyOnce?: ExactlyOnceHooks<E>
  ) {
    const client = yield* BigQueryClient
    const s = settings.stream
    return yield* core.make<Backend.StorageWriteMethod<A, E, R>>({
      handler: settings.failureHandler,
      limits: limitsOf(s),
      retry: s.retry,
      recovery: Verdict.recoveries(s.recovery),
      propagation: Verdict.schemaWait,
      metrics: {
        // one counter: with per-destination metrics it is counted once, with the attribute
        recordsSendErrors: s.perDestinationMetrics ? undefined : metrics.recordsSendErrors,
        recordsSkipped: metrics.recordsSkipped,
        destinationSendErrors: s.perDestinationMetrics ? metrics.recordsSendErrors : undefined,
        inFlightRequests: metrics.inFlightBatches,
        perDestination: s.perDestinationMetrics
      },
      backend: (bqCore) =>
        Effect.tap(
          Backend.make(settings, client, exactlyOnce?.mode(client))(bqCore),
          (built) =>
            Effect.sync(() =>
              exactlyOnce?.onOwner({ offer: bqCore.offer, failure: bqCore.failure, destinations: built.destinations })
            )
        )
    })
  },
  // the deadline of the client's unary calls (GetWriteStream, tables.*), inherited by the writer's fibers
  (effect, settings) => Effect.provideService(effect, deadline.AdminTimeout, settings.stream.adminTimeout)
)
