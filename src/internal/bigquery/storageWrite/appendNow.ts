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
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import type * as Tracer from "effect/Tracer"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import type { Connection, StreamFailure, Waiter } from "../transport/connection.ts"
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
 * fiber's `Effect.exit` of `PendingAppend.run` would give it. The connection is checked and the
 * batch written in one synchronous step (the owner cannot yield in between); the span is made after.
 *
 * @internal
 */
export const start = <A, E, R>(
  env: Env<A, E, R>,
  request: Started,
  deliver: (outcome: Exit.Exit<Step, BigQueryError>) => void
): Effect.Effect<(() => void) | undefined> =>
  Effect.withFiber((fiber) => {
    const { batch, d } = request
    const connection = d.onFibers === 0 ? d.slot.ready(batch.descriptor) : undefined
    if (connection === undefined) return Effect.undefined
    const append = new InFlight(env, request, connection, fiber.context, deliver)
    const attributes = { "bigquery.destination": d.key, "bigquery.rows": batch.count }
    return Effect.map(Effect.makeSpan("BigQuerySink.append", { attributes }), (span) => append.attach(span))
  })

type Outcome = Exit.Exit<Step, BigQueryError>

/**
 * One append started at once, from its write to its outcome. An answer that comes before its span
 * is made waits for it (the span is the parent of the rest of the call). A commit ends the call in
 * the callback; any other answer goes on through `PendingAppend.resume`, on a fiber of the writer's
 * scope, with the owner's context (its scheduler, its services) under this append's span.
 */
class InFlight<A, E, R> {
  private span: Tracer.Span | undefined = undefined
  private early: Answer | undefined = undefined
  private over = false
  private fiber: Fiber.Fiber<Step, BigQueryError> | undefined = undefined
  private readonly env: Env<A, E, R>
  private readonly request: Started
  private readonly connection: Connection
  private readonly context: Context.Context<never>
  private readonly deliver: (outcome: Outcome) => void
  private readonly clock: Clock.Clock
  private readonly startedAt: bigint
  private readonly written: boolean
  private readonly stop: () => void

  constructor(
    env: Env<A, E, R>,
    request: Started,
    connection: Connection,
    context: Context.Context<never>,
    deliver: (outcome: Outcome) => void
  ) {
    this.env = env
    this.request = request
    this.connection = connection
    this.context = context
    this.deliver = deliver
    this.clock = Context.get(context, Clock.Clock)
    this.startedAt = this.clock.currentTimeNanosUnsafe()
    const { d, progress } = request
    this.written = !connection.isBroken()
    progress.echoed = undefined
    const limit = env.settings.stream.responseTimeout
    this.stop = PendingAppend.sendWithin(d.deadlines, limit, connection, progress.body, undefined, this.answer)
  }

  /** The answer, once (the deadline keeper's, past `responseTimeout`). */
  private readonly answer: Waiter = (result) => {
    if (this.over) return
    if (this.span === undefined) this.early = result
    else this.judge(result, this.span)
  }

  /** The span made: an answer that came first is judged now. Returns the call's cancel. */
  attach(span: Tracer.Span): () => void {
    this.span = span
    if (this.early !== undefined) this.judge(this.early, span)
    return this.cancel
  }

  private judge(result: Answer, span: Tracer.Span): void {
    const { batch, d, progress } = this.request
    const committed = committedNow(d.key, progress, result)
    if (committed !== undefined) return this.end(committed)
    const sent = { connection: this.connection, written: this.written, answer: result }
    const rest = PendingAppend.resume(this.env.settings, d, batch, progress, sent)
    this.fiber = this.env.fork(
      Effect.provideContext(Effect.withParentSpan(rest, span, { captureStackTrace: false }), this.context)
    )
    this.fiber.addObserver((exit) => this.end(exit))
  }

  /** The call's end, as `trackDuration` and the span end it on a fiber; delivered however they end. */
  private end(outcome: Outcome): void {
    if (this.over) return
    this.over = true
    try {
      this.close(outcome)
    } finally {
      this.deliver(outcome)
    }
  }

  private close(outcome: Exit.Exit<unknown, unknown>): void {
    const now = this.clock.currentTimeNanosUnsafe()
    metrics.appendLatency.updateUnsafe(Duration.nanos(now - this.startedAt), this.context)
    this.span?.end(now, outcome)
  }

  /** The writer closed first: nothing is delivered; the span ends interrupted, as a fiber's would. */
  private readonly cancel = (): void => {
    if (this.over) return
    this.over = true
    this.stop()
    this.fiber?.interruptUnsafe()
    this.close(Exit.interrupt())
  }
}

type Answer = Result.Result<AppendAnswer, StreamFailure>

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
