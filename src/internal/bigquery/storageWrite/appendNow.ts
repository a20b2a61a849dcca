/**
 * An append on the default stream started at once on the owner's fiber, with no fiber of its own
 * (`Delivery.start`), as Bigtable's `callNow.ts`: the request is written to its destination's open
 * connection and its answer comes back through a callback, so a committed append costs no fiber, no
 * `Deferred` and no Effect step between its start and its `Completed`. Any other answer (row errors,
 * a failed stream, the watchdog) is judged and acted on by the same loop as an append on a fiber
 * (`PendingAppend.resume`), on a fiber started then.
 *
 * It is taken only where it cannot change what reaches the table: on the default stream (a
 * buffered stream's appends go through the exactly-once mode), on a connection already open and
 * healthy, and with no append of the destination on a fiber (one started when no connection was
 * open, which it could overtake: appends leave in the order they start).
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import type * as Tracer from "effect/Tracer"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import * as CallNow from "../../core/callNow.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import type { Connection, StreamFailure } from "../transport/connection.ts"
import type { AppendAnswer } from "../transport/rowErrors.ts"
import type { Destination } from "./destination.ts"
import * as PendingAppend from "./pendingAppend.ts"
import type { Step } from "./verdict.ts"

/** What {@link start} sends: a request, with its destination and its append's progress. @internal */
export interface Started extends PendingAppend.Tracked {
  readonly d: Destination
}

/**
 * What {@link start} runs with: the writer's settings, and how it forks the rest of a call whose
 * answer was not a commit (into a fiber set of the writer's scope, which closes with it).
 *
 * @internal
 */
export interface Env<A, E, R> {
  readonly settings: Settings<A, E, R>
  readonly fork: (effect: Effect.Effect<Step, BigQueryError>) => Fiber.Fiber<Step, BigQueryError>
}

/**
 * Starts the append of `request` now, when its destination's connection is open and no append of
 * it runs on a fiber: succeeds with its cancel (nothing is delivered after it), else `undefined`
 * (the core then runs the append on a fiber). `deliver` takes the call's outcome once, as the
 * fiber's `Effect.exit` of `PendingAppend.run` would give it. The connection is checked and the
 * batch written in one synchronous step (the owner cannot yield in between); the span is made after
 * (`core/callNow.ts`).
 *
 * A commit ends the call in the answer's callback; any other answer goes on through
 * `PendingAppend.resume`, on a fiber of the writer's scope, with the owner's context (its scheduler,
 * its services) under this append's span. However it ends, its `appendLatency` is recorded and its
 * span ended, as `trackDuration` and `withSpan` do on a fiber.
 *
 * @internal
 */
export const start = <A, E, R>(
  env: Env<A, E, R>,
  request: Started,
  deliver: (outcome: Exit.Exit<Step, BigQueryError>) => void
): Effect.Effect<(() => void) | undefined> => {
  const { d } = request
  const progress = PendingAppend.progressFor(request, undefined)
  let connection: Connection | undefined
  let written = false
  let fiber: Fiber.Fiber<Step, BigQueryError> | undefined
  const end = (call: CallNow.CallNow<Answer>, outcome: Outcome) =>
    call.finish(outcome, (now) => {
      try {
        latency(call, now)
      } finally {
        deliver(outcome)
      }
    })
  const judge = (call: CallNow.CallNow<Answer>, result: Answer, span: Tracer.Span): void => {
    const committed = PendingAppend.committedAnswer(d.key, progress, result)
    if (committed !== undefined) {
      return end(call, Result.isSuccess(committed) ? Exit.succeed(committed.success) : Exit.fail(committed.failure))
    }
    // judged only once `begin` wrote the append on its connection
    if (connection === undefined) return end(call, Exit.die(new Error("an append judged before it was written")))
    const sent = { connection, written, answer: result }
    const rest = PendingAppend.resume(env.settings, d, request, progress, sent)
    fiber = env.fork(
      Effect.provideContext(Effect.withParentSpan(rest, span, { captureStackTrace: false }), call.context)
    )
    fiber.addObserver((exit) => end(call, exit))
  }
  const begin = (call: CallNow.CallNow<Answer>): (() => void) | undefined => {
    connection = d.onFibers === 0 ? d.slot.ready(request.descriptor) : undefined
    if (connection === undefined) {
      // declined: its append runs on a fiber ({@link onFiber}), counted until it is written
      d.onFibers++
      return undefined
    }
    written = !connection.isBroken()
    progress.echoed = undefined
    const limit = env.settings.stream.responseTimeout
    return PendingAppend.sendWithin(d.deadlines, limit, connection, progress.body, undefined, call.answer)
  }
  return CallNow.start(PendingAppend.spanName, PendingAppend.spanAttributes(d, request), judge, begin, (call, now) => {
    fiber?.interruptUnsafe()
    latency(call, now)
  })
}

type Outcome = Exit.Exit<Step, BigQueryError>

/**
 * The append of a request {@link start} declined, on its fiber: it leaves its destination's count
 * of appends on fibers once written (or once over, unwritten).
 *
 * @internal
 */
export const onFiber = <A, E, R>(settings: Settings<A, E, R>, request: Started): Effect.Effect<Step, BigQueryError> =>
  Effect.suspend(() => {
    let counted = true
    const written = () => {
      if (!counted) return
      counted = false
      request.d.onFibers--
    }
    return Effect.ensuring(
      PendingAppend.run(
        settings,
        request.d,
        request,
        PendingAppend.progressFor(request, undefined),
        undefined,
        written
      ),
      Effect.sync(written)
    )
  })

/** The append's `appendLatency` sample, as `trackDuration` takes it on a fiber. */
const latency = (call: CallNow.CallNow<Answer>, now: bigint): void =>
  metrics.appendLatency.updateUnsafe(Duration.nanos(now - call.startedAt), call.context)

type Answer = Result.Result<AppendAnswer, StreamFailure>
