/**
 * The writer's owner fiber: the only reader and writer of the state in `ownerState` (the per-table
 * batches, the in-flight bookkeeping, the isolation and repair queues, the counters and the
 * barriers). It takes one command at a time from `commands` and runs the matching step
 * (`admission`, `completion`, `dispatch`, `repair`), then settles the barriers that can be. Every
 * other fiber (callers of `write`, MutateRows calls, timers, table repairs) talks to it through
 * `commands`.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Queue from "effect/Queue"
import { evictIdle, onAdmit, onSendAll, onTick } from "./admission.ts"
import { onCompleted } from "./completion.ts"
import { cutAll, onResend } from "./dispatch.ts"
import * as metrics from "./metrics.ts"
import * as ownerState from "./ownerState.ts"
import type { Command, OwnerContext, State, WriterError } from "./ownerState.ts"
import { onEnsured, onRepairDue } from "./repair.ts"

export type { Command, OwnerContext, WriterError } from "./ownerState.ts"

/**
 * Answers the barriers once nothing is outstanding: the handler's flush, then idle tables are
 * forgotten. After a failure every barrier fails with it.
 */
const settleBarriers = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void, never, R> =>
  Effect.gen(function*() {
    if (st.barriers.length === 0) return
    const failure = st.failure
    if (failure !== undefined) {
      for (const done of st.barriers.splice(0, st.barriers.length)) yield* Deferred.failCause(done, failure)
      return
    }
    if (st.outstanding > 0 || (st.repair !== undefined && st.repair.parked.length > 0)) return
    const exit = yield* Effect.exit(st.handler.flush)
    if (Exit.isFailure(exit)) {
      yield* ownerState.failCause(st, exit.cause)
      for (const done of st.barriers.splice(0, st.barriers.length)) yield* Deferred.failCause(done, exit.cause)
      return
    }
    yield* evictIdle(st)
    for (const done of st.barriers.splice(0, st.barriers.length)) yield* Deferred.succeed(done, undefined)
  })

const handle = <A, EH, R>(st: State<A, EH, R>, command: Command<WriterError<EH>>): Effect.Effect<
  void,
  WriterError<EH>,
  R
> => {
  const failure = st.failure
  if (failure !== undefined) {
    return command._tag === "Flush" ? Deferred.failCause(command.done, failure).pipe(Effect.asVoid) : Effect.void
  }
  switch (command._tag) {
    case "Admit":
      return onAdmit(st, command)
    case "SendAll":
      return onSendAll(st)
    case "Tick":
      return onTick(st)
    case "Completed":
      return onCompleted(st, command.items, command.statuses)
    case "Resend":
      return onResend(st, command.items)
    case "Ensured":
      return onEnsured(st, command.results)
    case "RepairDue":
      return onRepairDue(st)
    case "Flush":
      return Effect.andThen(cutAll(st), Effect.sync(() => void st.barriers.push(command.done)))
  }
}

/**
 * The owner loop. Runs until interrupted; a fatal error is published through `failed` and the
 * loop keeps failing barriers. It alone writes the summary counters.
 *
 * @internal
 */
export const run = <A, EH, R>(ctx: OwnerContext<A, EH, R>): Effect.Effect<never, never, R> =>
  Effect.gen(function*() {
    const st = ownerState.make(ctx)

    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        Metric.modify(metrics.inFlightEntries, -st.outstanding),
        Effect.andThen(
          Metric.modify(metrics.inFlightBytes, -st.outstandingBytes),
          Metric.modify(metrics.parkedEntries, -st.parked)
        )
      )
    )

    return yield* Effect.forever(
      Queue.take(ctx.commands).pipe(
        Effect.flatMap((command) =>
          handle(st, command).pipe(Effect.catchCause((cause) => ownerState.failCause(st, cause)))
        ),
        Effect.andThen(settleBarriers(st))
      )
    )
  }).pipe(Effect.scoped)
