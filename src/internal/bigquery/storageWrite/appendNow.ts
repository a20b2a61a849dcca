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
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import type { Connection, Waiter } from "../transport/connection.ts"
import type { AppendAnswer } from "../transport/rowErrors.ts"
import type { Destination } from "./destination.ts"
import * as PendingAppend from "./pendingAppend.ts"
import type { Step } from "./verdict.ts"

/** What {@link start} sends: a request's destination, its batch, and its progress. @internal */
export interface Started {
  readonly d: Destination
  readonly batch: PendingAppend.Batch
  readonly progress: PendingAppend.Progress
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
 * fiber's `Effect.exit` of `PendingAppend.run` would give it.
 *
 * @internal
 */
export const start = <A, E, R>(
  env: Env<A, E, R>,
  request: Started,
  deliver: (outcome: Exit.Exit<Step, BigQueryError>) => void
): Effect.Effect<(() => void) | undefined> =>
  Effect.suspend(() => {
    const { batch, d } = request
    const connection = d.onFibers === 0 ? d.slot.ready(batch.descriptor) : undefined
    if (connection === undefined) return Effect.undefined
    const attributes = { "bigquery.destination": d.key, "bigquery.rows": batch.count }
    return Effect.flatMap(Effect.makeSpan("BigQuerySink.append", { attributes }), (span) =>
      Effect.clockWith((clock) =>
        Effect.map(Effect.context<never>(), (context) => {
          const startedAt = clock.currentTimeNanosUnsafe()
          // the call's end, as `trackDuration` and the span end it on a fiber
          const end = (outcome: Exit.Exit<Step, BigQueryError>): void => {
            const now = clock.currentTimeNanosUnsafe()
            metrics.appendLatency.updateUnsafe(Duration.nanos(now - startedAt), context)
            span.end(now, outcome)
            deliver(outcome)
          }
          return send(env, request, connection, end, (effect) =>
            env.fork(Effect.withParentSpan(effect, span)))
        })
      ))
  })

/**
 * Writes the batch to `connection`, its answer awaited by a callback, at most `responseTimeout`
 * (the writer's deadline keeper answers for it then): a commit ends the call at once; any other
 * answer goes on through `PendingAppend.resume`, forked. Returns the call's cancel.
 */
const send = <A, E, R>(
  env: Env<A, E, R>,
  request: Started,
  connection: Connection,
  end: (outcome: Exit.Exit<Step, BigQueryError>) => void,
  fork: (effect: Effect.Effect<Step, BigQueryError>) => Fiber.Fiber<Step, BigQueryError>
): () => void => {
  const { batch, d, progress } = request
  let over = false
  let fiber: Fiber.Fiber<Step, BigQueryError> | undefined
  const finish = (outcome: Exit.Exit<Step, BigQueryError>): void => {
    if (over) return
    over = true
    end(outcome)
  }
  const written = !connection.isBroken()
  let answered = false
  const answer: Waiter = (result) => {
    if (answered || over) return
    answered = true
    clear()
    const committed = committedNow(d.key, progress, result)
    if (committed !== undefined) return finish(committed)
    fiber = fork(PendingAppend.resume(env.settings, d, batch, progress, { connection, written, answer: result }))
    fiber.addObserver(finish)
  }
  progress.echoed = undefined
  const clear = d.deadlines.arm(
    env.settings.stream.responseTimeout,
    () => answer(Result.fail(PendingAppend.noResponse))
  )
  connection.appendNow(progress.body, undefined, answer)
  return () => {
    over = true
    clear()
    fiber?.interruptUnsafe()
  }
}

/**
 * The outcome of an answer that commits the batch, judged as `PendingAppend` judges it; `undefined`
 * for any other answer (the loop on a fiber takes it).
 */
const committedNow = (
  key: string,
  state: PendingAppend.Progress,
  result: Result.Result<AppendAnswer, unknown>
): Exit.Exit<Step, BigQueryError> | undefined => {
  if (Result.isFailure(result) || !result.success.ok) return undefined
  const response = result.success
  if (response.updatedSchema !== undefined) state.schemaPushed = true
  state.echoed = response.offset
  const judged = PendingAppend.committed(key, state, undefined)
  return Result.isSuccess(judged) ? Exit.succeed(judged.success) : Exit.fail(judged.failure)
}
