/**
 * One call of an append (cf. Go's `appendresult.go`): send, await the response (with a watchdog),
 * classify a failure (`transport/classify.ts`, and `exactlyOnce/classify.ts` on a buffered stream,
 * both pure) and act on it, until the call ends in a {@link Step} the writer core acts on: the rows
 * committed (survivors of row errors included, the rejected rows routed), a reconnect after the
 * core's `recovery` wait, or a repair of the table by the core's repair engine (`core/repairs.ts`).
 * Within the call stay only the in-band re-sends on the same connection (the `retry` budget, fresh
 * for each call), row errors, and the buffered stream's restamp and abandon (ADR 0032).
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { BigQueryError, RequestRejected, SchemaMismatch } from "../../../BigQuery/BigQueryError.ts"
import type { FailedRow } from "../../../BigQuery/BigQueryFailure.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { RetryPolicy } from "../../../Sink/RetryPolicy.ts"
import { Fenced } from "../../checkpoint/fenced.ts"
import * as Budget from "../../core/budget.ts"
import { hotSpan } from "../../core/hotSpan.ts"
import { toSchedule } from "../../core/retrySchedule.ts"
import { name as codeName } from "../../wire/grpcStatus.ts"
import * as Buffered from "../exactlyOnce/classify.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import * as AppendRequest from "../transport/appendRequest.ts"
import { type AppendFailure, classify, type Verdict } from "../transport/classify.ts"
import type { Connection } from "../transport/connection.ts"
import { type RowError, splitByRowErrors } from "../transport/rowErrors.ts"
import { type Destination, tableNotFound } from "./destination.ts"

/**
 * The schema-wait budget (the core's `propagation` budget for BigQuery): flat 30 s, 30 attempts,
 * ±25 % (not configurable, reference 2.4), one attempt more than it says, as {@link recoveries}.
 *
 * @internal
 */
export const schemaWait: RetryPolicy = {
  _tag: "Backoff",
  initialBackoff: Duration.seconds(30),
  maxBackoff: Duration.seconds(30),
  maxAttempts: 31,
  multiplier: 2,
  maxDuration: undefined
}

/**
 * A batch handed to an append fiber: its rows as one `ProtoRows` body, framed in place in a batch
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

/** What an append achieved. @internal */
export interface Outcome {
  readonly key: string
  /** Where the written rows start on a buffered stream (0 on `_default`). */
  readonly offset: number
  readonly written: number
  readonly bytes: number
  /** In-band re-sends, restamps and abandons within its calls (the core counts its own waits). */
  readonly retries: number
  readonly failed: ReadonlyArray<FailedRow>
  readonly schemaPushed: boolean
}

/** What went wrong with one attempt. @internal */
export interface Problem {
  readonly failure: AppendFailure
  readonly detail: string
  readonly cause: unknown
  readonly rowErrors: ReadonlyArray<RowError>
}

/**
 * How a call ended, for the writer core to act on:
 *
 * - `done`: committed (or every row routed, or an earlier unanswered attempt found landed);
 * - `reconnect`: the connection was retired (a broken stream, the watchdog, the in-band budget
 *   spent, a restamped append out of range again): the core waits a step of `recovery`, then calls again;
 * - `repair`: the table must be created (`createTable`) or its schema reconciled (`updateSchema`):
 *   the core's repair engine repairs it once per incident and calls again.
 *
 * @internal
 */
export type Step =
  | { readonly _tag: "done"; readonly outcome: Outcome }
  | { readonly _tag: "reconnect"; readonly problem: Problem }
  | { readonly _tag: "repair"; readonly kind: "createTable" | "updateSchema"; readonly problem: Problem }

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
  phase: Buffered.Phase
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

/** What an action needs: the append, the attempt that failed and why. */
interface Env<A, E, R> {
  readonly settings: Settings<A, E, R>
  readonly destination: Destination
  readonly state: Progress
  /** The in-band budget of this call. */
  readonly firstLevel: Budget.Budget
  readonly connection: Connection
  readonly problem: Problem
}

/** After an action: append the batch (what is left of it) again in this call, or the call ends. */
type Next = "resend" | Step

type Action = <A, E, R>(env: Env<A, E, R>) => Effect.Effect<Next, BigQueryError>

const resendAgain: Effect.Effect<Next> = Effect.succeed("resend")

/** Retires the connection: the call ends, and the core reconnects after its `recovery` wait. */
const reconnect: Action = (env) =>
  Effect.as(env.destination.slot.retire(env.connection), { _tag: "reconnect", problem: env.problem } as const)

/** Re-sends on the same connection on the call's in-band budget; once it gives up, reconnects. */
const resend: Action = (env) =>
  Effect.flatMap(env.firstLevel.next, (wait) => {
    if (Option.isNone(wait)) return reconnect(env)
    env.state.retries++
    return Effect.as(Effect.sleep(wait.value), "resend" as const)
  })

/** The table must be repaired: the connection is retired (the call after the repair opens a new one). */
const repair = (kind: "createTable" | "updateSchema"): Action => (env) =>
  Effect.as(env.destination.slot.retire(env.connection), { _tag: "repair", kind, problem: env.problem } as const)

const rejected = <A, E, R>(env: Env<A, E, R>, detail: string): BigQueryError =>
  new BigQueryError({
    reason: new RequestRejected({
      method: "AppendRows",
      destination: env.destination.key,
      code: codeName(env.problem.failure.code),
      detail,
      cause: env.problem.cause
    })
  })

/** Row errors: route the rows they name (each a copy of its bytes) and re-send the survivors. */
const routeRows: Action = (env) =>
  Effect.suspend(() => {
    const { problem, state } = env
    const rows = AppendRequest.rowsOf(state.body)
    const split = splitByRowErrors(env.destination.key, rows, problem.rowErrors, problem.cause)
    if (split === undefined) {
      return Effect.fail(
        rejected(env, `row errors name no row of the batch of ${rows.length} rows: ${problem.detail}`)
      )
    }
    // a routed row keeps a copy of its bytes, not a view into the whole batch
    for (const f of split.failed) state.failed.push(f.payload === undefined ? f : { ...f, payload: f.payload.slice() })
    state.count = split.survivors.length
    state.bytes = sumBytes(split.survivors)
    state.body = AppendRequest.encodeRows(split.survivors)
    // on a buffered stream the survivors go again at the rejected offset (nothing landed there)
    state.phase = "replay"
    if (state.count === 0) return Effect.succeed(done(env.destination.key, state))
    state.retries++
    return resendAgain
  })

/** A terminal verdict: the error of its kind. */
const fail = (kind: Extract<Verdict, { _tag: "fail" }>["kind"]): Action => (env) => {
  const { detail, cause } = env.problem
  switch (kind) {
    case "tableNotFound":
      return Effect.fail(tableNotFound(env.destination.key, env.settings.createDisposition, detail, cause))
    case "schemaMismatch":
      return Effect.fail(
        new BigQueryError({
          reason: new SchemaMismatch({
            destination: env.destination.key,
            detail: `rows have fields the table lacks (${detail}); enable schemaUpdate: ` +
              "{ allowNewFields: true } or add the columns to the table",
            cause
          })
        })
      )
    case "rejected":
      return Effect.fail(rejected(env, detail))
  }
}

/**
 * The verdict -> action table (reference 2.4): re-send in band, reconnect, have the table repaired
 * (created, or its schema reconciled), route rows and re-send the survivors, or fail.
 *
 * @internal
 */
export const actionOf = (verdict: Verdict): Action => {
  switch (verdict._tag) {
    case "retry":
      return resend
    case "reconnect":
      return reconnect
    case "createTable":
      return repair("createTable")
    case "updateSchema":
      return repair("updateSchema")
    case "routeRows":
      return routeRows
    case "fail":
      return fail(verdict.kind)
  }
}

/**
 * Sends the batch (what is left of it) on `connection` and awaits the answer, at most
 * `responseTimeout` (then the connection is aborted): `undefined` once it is committed, else what
 * went wrong. A connection whose call failed is retired.
 */
const attempt = (
  responseTimeout: Duration.Duration,
  destination: Destination,
  connection: Connection,
  state: Progress
): Effect.Effect<Problem | undefined> =>
  Effect.gen(function*() {
    // an append on a connection broken already is failed without being written
    const written = !connection.isBroken()
    const pending = yield* connection.append(state.body, state.offset)
    const answer = yield* Deferred.await(pending).pipe(Effect.result, Effect.timeoutOption(responseTimeout))
    if (Option.isNone(answer)) {
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
    if (answer.value._tag === "Failure") {
      const f = answer.value.failure
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
    const response = answer.value.success
    if (response.updatedSchema !== undefined) state.schemaPushed = true
    state.echoed = response.offset
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

/**
 * `policy.maxAttempts` recoveries after a first attempt (so an exhausted budget reports
 * `maxAttempts + 1` attempts): a policy of one more attempt. A caller's own `Schedule`
 * (`RetryPolicy.fromSchedule`) is its own count, taken as it is. BigQuery's `recovery` budget, as
 * the writer core runs it.
 *
 * @internal
 */
export const recoveries = (policy: RetryPolicy): RetryPolicy =>
  policy._tag === "FromSchedule" ? policy : { ...policy, maxAttempts: policy.maxAttempts + 1 }

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

/**
 * Moves a batch on a buffered stream to where the append before it ended (`state.after`, waited
 * for). If the batch must move but an attempt at its current offset got no answer, the service may
 * still apply that attempt there, over another batch's rows: terminal, and the restore from the last
 * checkpoint is the repair (rows past it were never flushed). `what` names the rows in the message.
 */
const toPredecessorEnd = (
  state: Progress,
  key: string,
  problem: Problem,
  what: string
): Effect.Effect<void, BigQueryError> =>
  Effect.flatMap(state.after, (end) => {
    const from = state.offset ?? 0
    if (end === from) return Effect.void
    if (state.unanswered) {
      return Effect.fail(
        new BigQueryError({
          reason: new RequestRejected({
            method: "AppendRows",
            destination: key,
            code: codeName(problem.failure.code),
            detail: `${what} at offset ${from} belong at ${end}, but its attempt at ${from} got no answer and ` +
              "may still be applied there: restore from the last checkpoint",
            cause: problem.cause
          })
        })
      )
    }
    return Effect.sync(() => void (state.offset = end))
  })

/** The restored stream abandoned for a fresh one: the batch goes again, at its offset 0. */
const abandon = (atOffset: AtOffset, failed: Failed): Effect.Effect<Next, BigQueryError> => {
  const { state } = failed
  return Effect.andThen(failed.destination.slot.retire(failed.connection), atOffset.abandon).pipe(
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
    ),
    Effect.as("resend" as const)
  )
}

/** A failed attempt of a buffered append: its progress, where it went, and what went wrong. */
interface Failed {
  readonly state: Progress
  readonly destination: Destination
  readonly connection: Connection
  readonly problem: Problem
}

/**
 * The exactly-once verdicts that differ from the at-least-once table (reference 2.6): an offset that
 * already exists mid-run after an unanswered attempt is the batch landed; a restored stream that
 * cannot be adopted is abandoned for a fresh one (the batch goes at 0); an offset out of range
 * mid-run is re-appended at the end of the append before it once that one settled, and if that
 * happens again, at the same offset after a reconnect (the core's `recovery` wait); the rest is terminal.
 */
const atOffsetAction = (
  verdict: Exclude<Buffered.Verdict, { readonly _tag: "shared" }>,
  atOffset: AtOffset,
  failed: Failed
): Effect.Effect<Next, BigQueryError> => {
  const { connection, destination, problem, state } = failed
  switch (verdict._tag) {
    case "landed":
      return Effect.succeed(done(destination.key, state))
    case "abandon":
      return abandon(atOffset, failed)
    case "reappend":
      // the first time, the predecessor's final end says where the rows go: behind rejected rows
      // (lower) or where they were (it overtook its predecessor); no reconnect, no wait
      if (!state.restamped) {
        state.restamped = true
        state.retries++
        return Effect.as(toPredecessorEnd(state, destination.key, problem, "the rows"), "resend" as const)
      }
      return Effect.as(destination.slot.retire(connection), { _tag: "reconnect", problem } as const)
    case "terminal":
    case "fenced": {
      const detail = `${verdict.detail} (offset ${state.offset}): ${problem.detail}`
      return Effect.fail(
        new BigQueryError({
          reason: new RequestRejected({
            method: "AppendRows",
            destination: destination.key,
            code: codeName(problem.failure.code),
            detail,
            // another writer owns the stream: the checkpoint protocol makes this `CheckpointConflict`
            cause: verdict._tag === "fenced"
              ? new Fenced({ detail: `${destination.key}: ${detail}` })
              : problem.cause
          })
        })
      )
    }
  }
}

/** A buffered append acknowledged at an offset other than the one it was sent at. */
const echoedElsewhere = (key: string, state: Progress): BigQueryError =>
  new BigQueryError({
    reason: new RequestRejected({
      method: "AppendRows",
      destination: key,
      code: "OK",
      detail: `the append at offset ${state.offset} was acknowledged at offset ${state.echoed}`,
      cause: undefined
    })
  })

/** What the at-least-once classifier needs to know of the settings. */
const classifyContext = <A, E, R>(settings: Settings<A, E, R>) => ({
  schemaUpdatesEnabled: settings.schemaUpdate.allowNewFields || settings.schemaUpdate.allowFieldRelaxation,
  createDisposition: settings.createDisposition
})

/** An attempt answered OK: the batch is done, unless a buffered append was acknowledged elsewhere. */
const committed = (key: string, state: Progress, atOffset: AtOffset | undefined): Effect.Effect<Step, BigQueryError> =>
  atOffset !== undefined && state.echoed !== undefined && state.echoed !== state.offset
    ? Effect.fail(echoedElsewhere(key, state))
    : Effect.succeed(done(key, state))

/**
 * One call of a batch's append (what is left of it, as `progress` says): attempts until it is
 * committed, or the call ends in a step the writer core acts on (`reconnect`, `repair`), or a
 * terminal error. A failed attempt is classified and its verdict's action run ({@link actionOf});
 * in-band transient errors are re-sent on the same connection on the call's own `retry` budget.
 *
 * @internal
 */
export const run = <A, E, R>(
  settings: Settings<A, E, R>,
  destination: Destination,
  batch: Batch,
  progress: Progress,
  atOffset?: AtOffset
): Effect.Effect<Step, BigQueryError> =>
  Effect.gen(function*() {
    const context = classifyContext(settings)
    const state = progress
    let firstLevel: Budget.Budget | undefined
    for (;;) {
      const connection = yield* destination.slot.acquire(batch.descriptor)
      state.echoed = undefined
      const problem = yield* attempt(settings.stream.responseTimeout, destination, connection, state)
      if (problem === undefined) return yield* committed(destination.key, state, atOffset)
      yield* metrics.countError(codeName(problem.failure.code))
      // whether an earlier attempt may have landed: read before this attempt counts
      const earlierUnanswered = state.unanswered
      if (problem.failure.origin !== "response") state.unanswered = true
      const buffered = atOffset === undefined
        ? undefined
        : Buffered.classifyAppend(problem.failure, state.phase, earlierUnanswered)
      if (atOffset !== undefined && buffered !== undefined && buffered._tag !== "shared") {
        const next = yield* atOffsetAction(buffered, atOffset, { state, destination, connection, problem })
        if (next !== "resend") return next
        continue
      }
      firstLevel ??= yield* Budget.make(toSchedule(settings.stream.retry))
      const action = actionOf(classify(problem.failure, context))
      const replaying = state.phase === "replay"
      const next = yield* action({ settings, destination, state, firstLevel, connection, problem })
      if (atOffset !== undefined && !replaying && state.phase === "replay") {
        // the survivors of a rejection go where the rows before them end: this batch's stamp is high
        // when the batch before it lost rows too (and a service may report row errors before the offset)
        yield* toPredecessorEnd(state, destination.key, problem, "the survivors")
      }
      if (next !== "resend") return next
    }
  }).pipe(
    hotSpan("BigQuerySink.append", { "bigquery.destination": destination.key, "bigquery.rows": batch.count })
  )
