/**
 * One call of an append (cf. Go's `appendresult.go`): send, await the response (with a watchdog),
 * and on a failure do what the append's verdict decides (`verdict.ts` `decide`, pure), until the call
 * ends in a `Step` the writer core acts on: the rows committed (survivors of row errors included,
 * the rejected rows routed), a reconnect after the core's `recovery` wait, or a repair of the table
 * by the core's repair engine (`core/repairs.ts`). Within the call stay only what goes again on the
 * same call: the in-band re-sends on the same connection (the `retry` budget, fresh for each call),
 * row errors, and a buffered stream's restamp and abandon (ADR 0032). An append started on no fiber
 * (`appendNow.ts`, ADR 0063) sends its first attempt itself and comes here (`resume`) only when its
 * answer is not a commit.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import type { FailedRow } from "../../../BigQuery/BigQueryFailure.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import * as Budget from "../../core/budget.ts"
import { hotSpan } from "../../core/hotSpan.ts"
import { toSchedule } from "../../core/retrySchedule.ts"
import type { DeadlineKeeper } from "../../wire/deadlineKeeper.ts"
import { name as codeName } from "../../wire/grpcStatus.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import * as AppendRequest from "../transport/appendRequest.ts"
import { type Connection, type StreamFailure, streamFailure, type Waiter } from "../transport/connection.ts"
import type { AppendAnswer } from "../transport/rowErrors.ts"
import { splitByRowErrors } from "../transport/rowErrors.ts"
import type { Destination } from "./destination.ts"
import * as Verdict from "./verdict.ts"
import type { Phase, Problem, Step } from "./verdict.ts"

/**
 * A batch handed to an append: its rows as one `ProtoRows` body, framed in place in a batch
 * buffer (`Split.seal`; survivors of row errors are re-framed with `AppendRequest.encodeRows`), with
 * `AppendRequest.headroom` free bytes before it; their count and their own bytes.
 *
 * @internal
 */
export interface Batch {
  readonly body: Uint8Array
  readonly count: number
  readonly bytes: number
  readonly descriptor: Uint8Array
  readonly schema: TableSchema.TableSchema
}

/** A batch that keeps its append's progress, made by its first call (the backend's requests). @internal */
export interface Tracked extends Batch {
  progress: Progress | undefined
}

/**
 * An append at an explicit offset on a buffered stream (the exactly-once mode, reference 2.6).
 *
 * - `offset`: where the batch goes: its stamp, the end of the appends before it if they all land whole.
 * - `probe`: the first append on a restored stream: a stream that cannot be adopted is abandoned.
 * - `abandon`: creates a fresh stream and points the destination's connection slot at it (the old
 *   one is left open, never finalized); the batch then goes at offset 0.
 * - `after`: the final end of the append before it (it waits for that append to settle): where the
 *   batch goes when the service answers its stamp `OFFSET_OUT_OF_RANGE` (rows before it were
 *   rejected, or it overtook its predecessor).
 *
 * @internal
 */
export interface AtOffset {
  readonly offset: number
  readonly probe: boolean
  readonly abandon: Effect.Effect<void, BigQueryError>
  readonly after: Effect.Effect<number, BigQueryError>
}

const sumBytes = (rows: ReadonlyArray<Uint8Array>): number => {
  let n = 0
  for (let i = 0; i < rows.length; i++) n += rows[i]!.length
  return n
}

/**
 * One batch's progress through its calls: made at its first call, kept by the request between calls
 * (its owner reads the counts to judge a step; only its call's fiber writes the rest).
 *
 * @internal
 */
export interface Progress {
  body: Uint8Array
  count: number
  bytes: number
  retries: number
  schemaPushed: boolean
  readonly failed: Array<FailedRow>
  /** Calls that ended in `reconnect` (the core's `recovery` attempts), and in each repair. */
  reconnects: number
  creations: number
  schemaWaits: number
  /** Buffered streams: the offset the batch goes at, the phase, and the offset the last ack echoed. */
  offset: number | undefined
  phase: Phase
  echoed: number | undefined
  /** Buffered streams: moved to its predecessor's end once already (a second `OUT_OF_RANGE` reconnects). */
  restamped: boolean
  /**
   * Buffered streams: the final end of the append before this batch on the stream it now goes to
   * (`AtOffset.after`, until an abandon moves it to a fresh stream, where nothing precedes it: 0).
   */
  after: Effect.Effect<number, BigQueryError>
  /**
   * Buffered streams: an attempt at the current offset ended without an answer (a broken stream, the
   * watchdog), so the service may still take it there: the batch must not move to another offset.
   */
  unanswered: boolean
}

/** The progress of a batch before its first call. @internal */
export const start = (batch: Batch, atOffset: AtOffset | undefined): Progress => ({
  body: batch.body,
  count: batch.count,
  bytes: batch.bytes,
  retries: 0,
  schemaPushed: false,
  failed: [],
  reconnects: 0,
  creations: 0,
  schemaWaits: 0,
  offset: atOffset?.offset,
  phase: atOffset?.probe === true ? "probe" : "append",
  echoed: undefined,
  restamped: false,
  unanswered: false,
  after: atOffset?.after ?? Effect.succeed(0)
})

/** The progress of `batch`'s append: made by its first call (a buffered stream's from its stamp). @internal */
export const progressFor = (batch: Tracked, atOffset: AtOffset | undefined): Progress =>
  batch.progress ??= start(batch, atOffset)

/**
 * What an append's answer is completed with once its response deadline passes (told by identity).
 *
 * @internal
 */
export const noResponse: StreamFailure = streamFailure(undefined, "no response within responseTimeout", undefined)
const noAnswer: Result.Result<AppendAnswer, StreamFailure> = Result.fail(noResponse)

/**
 * Writes `body` on `connection` and hands `answer` its answer once: the response, the stream's
 * failure, or {@link noResponse} once `limit` has passed. The writer's deadline keeper answers for
 * it, so an append waits with no timer or fiber of its own (a race against a sleep forked two fibers
 * per append, ADR 0050). Returns what stops the wait (the deadline cleared, a later answer ignored).
 * An append on a fiber ({@link run}) and one started on no fiber (`appendNow.ts`) both send this way.
 *
 * @internal
 */
export const sendWithin = (
  deadlines: DeadlineKeeper,
  limit: Duration.Duration,
  connection: Connection,
  body: Uint8Array,
  offset: number | undefined,
  answer: Waiter
): () => void => {
  let over = false
  // armed first: a connection broken already answers before `appendNow` returns
  const clear = deadlines.arm(limit, () => once(noAnswer))
  const once: Waiter = (result) => {
    if (over) return
    over = true
    clear()
    answer(result)
  }
  connection.appendNow(body, offset, once)
  return () => {
    over = true
    clear()
  }
}

/**
 * One attempt sent and answered: the connection it went on, whether it was written (an append on a
 * connection broken already is failed without being written), and its answer.
 *
 * @internal
 */
export interface Sent {
  readonly connection: Connection
  readonly written: boolean
  readonly answer: Result.Result<AppendAnswer, StreamFailure>
}

/**
 * Sends the batch (what is left of it) on `connection` and awaits the answer, at most
 * `responseTimeout`; `onSent` runs once it is written.
 */
const send = (
  responseTimeout: Duration.Duration,
  destination: Destination,
  connection: Connection,
  state: Progress,
  onSent: (() => void) | undefined
): Effect.Effect<Sent> =>
  Effect.callback<Sent>((resume) => {
    const written = !connection.isBroken()
    const stop = sendWithin(
      destination.deadlines,
      responseTimeout,
      connection,
      state.body,
      state.offset,
      (answer) => resume(Effect.succeed({ connection, written, answer }))
    )
    if (written) onSent?.()
    return Effect.sync(stop)
  })

/** What a response tells of the stream: a schema the service pushed, the offset it echoed. */
const noted = (state: Progress, response: AppendAnswer): void => {
  if (response.updatedSchema !== undefined) state.schemaPushed = true
  state.echoed = response.offset
}

/**
 * What an attempt's answer says: `undefined` once the batch is committed, else what went wrong. A
 * connection whose call failed is retired; one that gave no answer within `responseTimeout` is
 * aborted.
 */
const assess = Effect.fnUntraced(function*(
  responseTimeout: Duration.Duration,
  destination: Destination,
  sent: Sent,
  state: Progress
): Effect.fn.Return<Problem | undefined> {
  const { answer, connection, written } = sent
  if (answer._tag === "Failure" && answer.failure === noResponse) {
    yield* destination.slot.abort(connection, "no response within responseTimeout")
    // the request is on the wire until the cancellation has ended the call (a turn later), and
    // a reconnect's wait frees its place in `maxInFlightRequests`; a call that never ends is
    // given up after a second watchdog period (the channel is abandoned already)
    yield* Effect.timeoutOption(connection.ended, responseTimeout)
    return {
      failure: { origin: "watchdog", code: undefined, storageCode: undefined, rowErrors: 0 },
      detail: `no response within ${Duration.format(responseTimeout)}`,
      cause: undefined,
      rowErrors: []
    }
  }
  if (answer._tag === "Failure") {
    const f = answer.failure
    yield* destination.slot.retire(connection)
    // failed with its stream (or by another append's watchdog): on the wire until the call ended
    if (written) yield* Effect.timeoutOption(connection.ended, responseTimeout)
    return {
      failure: { origin: "stream", code: f.code, storageCode: f.storageCode, rowErrors: 0 },
      detail: f.message,
      cause: f.cause,
      rowErrors: []
    }
  }
  const response = answer.success
  noted(state, response)
  if (response.ok) return undefined
  return {
    failure: {
      origin: "response",
      code: response.code,
      storageCode: response.storageCode,
      rowErrors: response.rowErrors.length
    },
    detail: response.message,
    cause: response,
    rowErrors: response.rowErrors
  } satisfies Problem
})

const done = (key: string, state: Progress): Step => ({
  _tag: "done",
  outcome: {
    key,
    offset: state.offset ?? 0,
    written: state.count,
    bytes: state.bytes,
    retries: state.retries,
    failed: state.failed,
    schemaPushed: state.schemaPushed
  }
})

/** The restored stream abandoned for a fresh one: the batch goes again, at its offset 0. */
const abandon = (atOffset: AtOffset, call: Call): Effect.Effect<void, BigQueryError> => {
  const { state } = call
  return Effect.andThen(call.destination.slot.retire(call.connection), atOffset.abandon).pipe(
    Effect.tap(() =>
      Effect.sync(() => {
        state.offset = 0
        state.phase = "append"
        // offsets are the fresh stream's from now on: nothing is before the batch there (the
        // probe's `after` was the abandoned stream's)
        state.after = Effect.succeed(0)
        // what went unanswered went to the abandoned stream
        state.unanswered = false
        state.retries++
      })
    )
  )
}

/** A failed attempt of a call: its progress, where it went, and what went wrong. */
interface Call {
  readonly state: Progress
  readonly destination: Destination
  readonly connection: Connection
  readonly problem: Problem
}

/**
 * Moves a batch on a buffered stream to where the append before it ended (`state.after`, waited
 * for), or fails where the verdict says it must not move (`Verdict.moveTo`).
 */
const toPredecessorEnd = (call: Call, what: string): Effect.Effect<void, BigQueryError> => {
  const { destination, problem, state } = call
  return Effect.flatMap(state.after, (end) => {
    const to = Verdict.moveTo(destination.key, problem, {
      from: state.offset ?? 0,
      end,
      unanswered: state.unanswered,
      what
    })
    if (typeof to !== "number") return Effect.fail(to)
    return Effect.sync(() => void (state.offset = to))
  })
}

/**
 * Row errors: the rows they name are routed (each a copy of its bytes), the survivors go again at
 * once; on a buffered stream where the verdict's `afterRouting` says (mid-run: where the rows before
 * them end, the batch before may have lost rows too). `done` when no row survives.
 */
const routeRows = (call: Call, buffered: boolean): Effect.Effect<Step | undefined, BigQueryError> =>
  Effect.suspend(() => {
    const { destination, problem, state } = call
    const rows = AppendRequest.rowsOf(state.body)
    const split = splitByRowErrors(destination.key, rows, problem.rowErrors, problem.cause)
    if (split === undefined) return Effect.fail(Verdict.unmatchedRowErrors(destination.key, problem, rows.length))
    // a routed row keeps a copy of its bytes, not a view into the whole batch
    for (const f of split.failed) state.failed.push(f.payload === undefined ? f : { ...f, payload: f.payload.slice() })
    state.count = split.survivors.length
    state.bytes = sumBytes(split.survivors)
    state.body = AppendRequest.encodeRows(split.survivors)
    const next = Verdict.afterRouting(state.phase)
    state.phase = next.phase
    if (state.count === 0) return Effect.succeed(done(destination.key, state))
    state.retries++
    return buffered && next.toPredecessorEnd
      ? Effect.as(toPredecessorEnd(call, "the survivors"), undefined)
      : Effect.undefined
  })

/** What the settings say to the verdict. */
const contextOf = <A, E, R>(settings: Settings<A, E, R>): Verdict.Context => ({
  schemaUpdatesEnabled: settings.schemaUpdate.allowNewFields || settings.schemaUpdate.allowFieldRelaxation,
  createDisposition: settings.createDisposition
})

/** The connection is retired and the call ends in `step` (the core calls again: after a `recovery` wait, or a repair). */
const endCall = (call: Call, step: Step): Effect.Effect<Step> =>
  Effect.as(call.destination.slot.retire(call.connection), step)

/**
 * What the call does after a failed attempt, as the verdict decides: `undefined` to send the batch
 * (what is left of it) again in this call, or the step the call ends in.
 */
const act = (
  decision: Verdict.Decision,
  call: Call,
  inBand: Budget.Budget,
  atOffset: AtOffset | undefined
): Effect.Effect<Step | undefined, BigQueryError> => {
  const { destination, problem, state } = call
  switch (decision._tag) {
    case "resend":
      // the in-band budget's input is the failure, as the error the write would end with
      return Effect.flatMap(
        inBand.nextAfter(Verdict.exhausted(destination.key, inBand.used() + 1, problem)),
        (wait) => {
          if (Option.isNone(wait)) return endCall(call, { _tag: "reconnect", problem })
          state.retries++
          return Effect.as(Effect.sleep(wait.value), undefined)
        }
      )
    case "reconnect":
      return endCall(call, { _tag: "reconnect", problem })
    case "repair":
      return endCall(call, { _tag: "repair", kind: decision.kind, problem })
    case "routeRows":
      return routeRows(call, atOffset !== undefined)
    case "landed":
      return Effect.succeed(done(destination.key, state))
    case "abandon":
      return atOffset === undefined
        ? Effect.die(new Error("an abandon on _default"))
        : Effect.as(abandon(atOffset, call), undefined)
    case "restamp":
      state.restamped = true
      state.retries++
      return Effect.as(toPredecessorEnd(call, "the rows"), undefined)
    case "fail":
      return Effect.fail(decision.error)
  }
}

/** An attempt answered OK: the batch is done, unless the verdict refuses the acknowledgement. */
const committed = (
  key: string,
  state: Progress,
  atOffset: AtOffset | undefined
): Result.Result<Step, BigQueryError> => {
  const refused = Verdict.acknowledged(key, atOffset === undefined ? undefined : state.offset, state.echoed)
  return refused === undefined ? Result.succeed(done(key, state)) : Result.fail(refused)
}

/**
 * The first answer of an append on the default stream judged at once, as {@link run} judges it, when
 * it commits the batch; `undefined` for any other answer, which {@link resume} takes on a fiber (an
 * append started on no fiber, `appendNow.ts`).
 *
 * @internal
 */
export const committedAnswer = (
  key: string,
  state: Progress,
  answer: Result.Result<AppendAnswer, StreamFailure>
): Result.Result<Step, BigQueryError> | undefined => {
  if (answer._tag === "Failure" || !answer.success.ok) return undefined
  noted(state, answer.success)
  return committed(key, state, undefined)
}

/** The name of an append's span, on a fiber ({@link run}) or started on no fiber (`appendNow.ts`). @internal */
export const spanName = "BigQuerySink.append"

/** The attributes of an append's span. @internal */
export const spanAttributes = (destination: Destination, batch: Batch): Record<string, unknown> => ({
  "bigquery.destination": destination.key,
  "bigquery.rows": batch.count
})

/**
 * The attempts of one call: `first`, an attempt already sent and answered, is judged before any
 * other is sent (an append started on no fiber whose answer was not a commit).
 */
const attempts = Effect.fnUntraced(function*<A, E, R>(
  settings: Settings<A, E, R>,
  destination: Destination,
  batch: Batch,
  state: Progress,
  atOffset: AtOffset | undefined,
  first: Sent | undefined,
  onSent: (() => void) | undefined
): Effect.fn.Return<Step, BigQueryError> {
  const context = contextOf(settings)
  const timeout = settings.stream.responseTimeout
  let inBand: Budget.Budget | undefined
  let sent = first
  for (;;) {
    if (sent === undefined) {
      const connection = yield* destination.slot.acquire(batch.descriptor)
      state.echoed = undefined
      sent = yield* send(timeout, destination, connection, state, onSent)
    }
    const connection = sent.connection
    const problem = yield* assess(timeout, destination, sent, state)
    sent = undefined
    if (problem === undefined) return yield* Effect.fromResult(committed(destination.key, state, atOffset))
    yield* metrics.countError(codeName(problem.failure.code))
    // whether an earlier attempt may have landed: read before this attempt counts
    const unanswered = state.unanswered
    if (problem.failure.origin !== "response") state.unanswered = true
    const decision = Verdict.decide(problem, {
      key: destination.key,
      context,
      buffered: atOffset === undefined
        ? undefined
        : { phase: state.phase, offset: state.offset ?? 0, unanswered, restamped: state.restamped }
    })
    inBand ??= yield* Budget.make(toSchedule(settings.stream.retry))
    const step = yield* act(decision, { state, destination, connection, problem }, inBand, atOffset)
    if (step !== undefined) return step
  }
})

/**
 * One call of a batch's append (what is left of it, as `progress` says): attempts until it is
 * committed, or the call ends in a step the writer core acts on (`reconnect`, `repair`), or a
 * terminal error. A failed attempt is decided by the verdict (`Verdict.decide`) and acted on here.
 * `onSent` runs each time an attempt is written.
 *
 * @internal
 */
export const run = <A, E, R>(
  settings: Settings<A, E, R>,
  destination: Destination,
  batch: Batch,
  progress: Progress,
  atOffset: AtOffset | undefined,
  onSent?: () => void
): Effect.Effect<Step, BigQueryError> =>
  attempts(settings, destination, batch, progress, atOffset, undefined, onSent).pipe(
    hotSpan(spanName, spanAttributes(destination, batch))
  )

/**
 * The rest of a call on the default stream whose first attempt, started on no fiber
 * (`appendNow.ts`), was sent and answered with something other than a commit: that answer judged,
 * then as {@link run} (in the span the append already has).
 *
 * @internal
 */
export const resume = <A, E, R>(
  settings: Settings<A, E, R>,
  destination: Destination,
  batch: Batch,
  progress: Progress,
  first: Sent
): Effect.Effect<Step, BigQueryError> => attempts(settings, destination, batch, progress, undefined, first, undefined)
