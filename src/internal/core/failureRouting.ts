/**
 * Drives a `FailureHandler` through its lifecycle for one writer: open when the writer is created,
 * handle each routed record (counting the drop), flush at barriers, close with the writer's scope.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { FailedElement } from "../../Sink/FailedElement.ts"
import type { FailureHandler } from "../../Sink/FailureHandler.ts"
import type { SummaryCounters } from "./summaryCounters.ts"

/** @internal */
export interface FailureRouter<F, E, R> {
  /** Hands one terminally failed record to the handler; on success it is counted as failed and dropped. */
  readonly route: (failure: F) => Effect.Effect<void, E, R>
  /** The handler's flush: call after the writer's own work drained. */
  readonly flush: Effect.Effect<void, E, R>
}

/**
 * Opens the handler now and registers its `close` on the scope (it runs on success, failure and
 * interruption alike).
 *
 * @internal
 */
export const make = Effect.fnUntraced(function*<F extends FailedElement, E, R>(
  handler: FailureHandler<F, E, R>,
  counters: SummaryCounters
) {
  yield* Effect.acquireRelease(handler.open, () => handler.close)
  const router: FailureRouter<F, E, R> = {
    route: (failure) =>
      handler.handle(failure).pipe(
        Effect.tap(() => Effect.sync(() => counters.add(failure.destination, "recordsFailed", 1)))
      ),
    flush: handler.flush
  }
  return router
})
