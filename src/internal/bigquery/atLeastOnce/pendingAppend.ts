/**
 * One in-flight append and its repair loop (cf. Go's `appendresult.go` and the Java writer's
 * repair): send, await the response (with a watchdog), classify a failure (`retry.ts`, pure) and
 * run the action the verdict names ({@link actions}) until the rows are committed, routed, or a
 * budget is spent. Every wait is a step of a budget's `Schedule` (`RetryPolicy.toSchedule`).
 * Why the in-band `retry` stays here, and what moving `recovery` and the repair guard into the
 * core must carry: ADR 0032.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, RequestRejected, RetriesExhausted, SchemaMismatch } from "../../../BigQuery/BigQueryError.ts"
import type { FailedRow } from "../../../BigQuery/BigQueryFailure.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import * as Budget from "../../core/budget.ts"
import { hotSpan } from "../../core/hotSpan.ts"
import { type AnyPolicy, type Policy, toSchedule } from "../../core/retrySchedule.ts"
import { name as codeName } from "../../wire/grpcStatus.ts"
import * as Buffered from "../exactlyOnce/classify.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import * as schemaUpdate from "../schema/update.ts"
import * as AppendRequest from "../transport/appendRequest.ts"
import { type AppendFailure, classify, type Verdict } from "../transport/classify.ts"
import type { Connection } from "../transport/connection.ts"
import { type RowError, splitByRowErrors } from "../transport/rowErrors.ts"
import { createIfMissing, createResource, type Destination, tableNotFound } from "./destination.ts"

/** The schema-wait budget: flat 30 s, 30 attempts, ±25 % (not configurable, reference 2.4). @internal */
export const schemaWait: Policy = {
  initialBackoff: Duration.seconds(30),
  maxBackoff: Duration.seconds(30),
  maxAttempts: 30
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
  readonly retries: number
  readonly failed: ReadonlyArray<FailedRow>
  readonly schemaPushed: boolean
}

const sumBytes = (rows: ReadonlyArray<Uint8Array>): number => {
  let n = 0
  for (let i = 0; i < rows.length; i++) n += rows[i]!.length
  return n
}

/** The three budgets of one batch, made at its first failure. */
interface Budgets {
  /** Re-sends on the same connection (`retry`); renewed each time it gives up and reconnects. */
  firstLevel: Budget.Budget
  /** Reconnects, table creation and what the first level gave up on (`recovery`). */
  readonly recovery: Budget.Budget
  /** Schema reconciliations ({@link schemaWait}). */
  readonly schemaWaits: Budget.Budget
}

/** One batch's progress through its appends. Belongs to the batch's append fiber. */
interface State {
  body: Uint8Array
  count: number
  bytes: number
  retries: number
  schemaPushed: boolean
  readonly failed: Array<FailedRow>
  budgets: Budgets | undefined
  /** Buffered streams: the offset the batch goes at, the phase, and the offset the last ack echoed. */
  offset: number | undefined
  phase: Buffered.Phase
  echoed: number | undefined
  /** Buffered streams: moved to its predecessor's end once already (a second `OUT_OF_RANGE` waits on the budget). */
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

/** What went wrong with one attempt. */
interface Problem {
  readonly failure: AppendFailure
  readonly detail: string
  readonly cause: unknown
  readonly rowErrors: ReadonlyArray<RowError>
}

/** What an action needs: the append, the attempt that failed and why. */
interface Env<A, E, R> {
  readonly client: BigQueryClientService
  readonly settings: Settings<A, E, R>
  readonly destination: Destination
  readonly batch: Batch
  readonly state: State
  readonly budgets: Budgets
  readonly connection: Connection
  /** The repair epoch observed before the attempt (`RepairGuard`). */
  readonly epoch: number
  readonly problem: Problem
}

/** After an action: append the batch (what is left of it) again, or the batch is done. */
type Next = "resend" | "done"

type Action = <A, E, R>(env: Env<A, E, R>) => Effect.Effect<Next, BigQueryError>

const resendAgain: Effect.Effect<Next> = Effect.succeed("resend")

const exhausted = <A, E, R>(env: Env<A, E, R>): BigQueryError =>
  new BigQueryError({
    reason: new RetriesExhausted({
      method: "AppendRows",
      destination: env.destination.key,
      attempts: env.budgets.recovery.used() + 1,
      code: codeName(env.problem.failure.code),
      detail: env.problem.detail,
      cause: env.problem.cause
    })
  })

/** Retires the connection and waits the next step of the recovery budget, or fails once it is spent. */
const reconnect: Action = (env) =>
  Effect.andThen(
    env.destination.slot.retire(env.connection),
    Effect.flatMap(env.budgets.recovery.next, (wait) => {
      if (Option.isNone(wait)) return Effect.fail(exhausted(env))
      env.state.retries++
      return Effect.as(Effect.sleep(wait.value), "resend" as const)
    })
  )

/**
 * Re-sends on the same connection on the first-level budget; once it gives up, reconnects on the
 * recovery budget, and the next in-band error starts a fresh first-level budget.
 */
const resend: Action = (env) =>
  Effect.flatMap(env.budgets.firstLevel.next, (wait) => {
    if (Option.isSome(wait)) {
      env.state.retries++
      return Effect.as(Effect.sleep(wait.value), "resend" as const)
    }
    return Effect.flatMap(Budget.make(toSchedule(env.settings.stream.retry)), (fresh) => {
      env.budgets.firstLevel = fresh
      return reconnect(env)
    })
  })

/**
 * Runs `repair` once per incident (`RepairGuard`: the batches that met the same trouble skip theirs
 * and re-append after it), retires the connection and re-sends, on a step of `budget`: the first
 * repair of a batch's recovery is not waited for (`free`), later ones are.
 */
const repairThenResend = <A, E, R>(
  env: Env<A, E, R>,
  budget: Budget.Budget,
  free: boolean,
  repair: Effect.Effect<unknown, BigQueryError>,
  spent: () => BigQueryError
): Effect.Effect<Next, BigQueryError> =>
  Effect.flatMap(budget.next, (wait) => {
    if (Option.isNone(wait)) return Effect.fail(spent())
    const { connection, destination } = env
    env.state.retries++
    // retired once, after the repair or after waiting for another batch's: the resend opens a new one
    return destination.guard.repair(env.epoch, repair).pipe(
      Effect.andThen(destination.slot.retire(connection)),
      Effect.andThen(free ? resendAgain : Effect.as(Effect.sleep(wait.value), "resend" as const))
    )
  })

/** A missing table under `CREATE_IF_NEEDED`: create it (unless `tables.get` finds it), on the recovery budget. */
const createTable: Action = (env) =>
  repairThenResend(
    env,
    env.budgets.recovery,
    env.budgets.recovery.used() === 0,
    createIfMissing(env.client, env.settings, env.destination.destination, env.batch.schema),
    () => exhausted(env)
  )

/** Extra fields with schema updates enabled: reconcile the table, on the schema-wait budget. */
const updateSchema: Action = (env) => {
  const { batch, client, destination, settings } = env
  const waits = env.budgets.schemaWaits
  return repairThenResend(
    env,
    waits,
    waits.used() === 0,
    schemaUpdate.reconcile({
      rest: client.rest,
      destination: destination.destination,
      desired: batch.schema,
      options: settings.schemaUpdate,
      createDisposition: settings.createDisposition,
      createResource: createResource(settings, destination.destination, batch.schema),
      recovery: settings.stream.recovery
    }),
    () =>
      new BigQueryError({
        reason: new SchemaMismatch({
          destination: destination.key,
          detail: `the table still refuses the rows after ${waits.used()} schema waits: ${env.problem.detail}`,
          cause: env.problem.cause
        })
      })
  )
}

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
    if (state.count === 0) return Effect.succeed("done" as const)
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
 * The verdict -> action table (reference 2.4): re-send, reconnect, repair the table (create it or
 * reconcile its schema) and re-send, route rows and re-send the survivors, or fail.
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
      return createTable
    case "updateSchema":
      return updateSchema
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
  state: State
): Effect.Effect<Problem | undefined> =>
  Effect.gen(function*() {
    const pending = yield* connection.append(state.body, state.offset)
    const answer = yield* Deferred.await(pending).pipe(Effect.result, Effect.timeoutOption(responseTimeout))
    if (Option.isNone(answer)) {
      yield* destination.slot.abort(connection, "no response within responseTimeout")
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
 * (`RetryPolicy.fromSchedule`) is its own count, taken as it is.
 */
const recoveries = (policy: AnyPolicy | Policy): AnyPolicy | Policy =>
  "_tag" in policy && policy._tag === "FromSchedule" ? policy : { ...policy, maxAttempts: policy.maxAttempts + 1 }

const budgetsOf = <A, E, R>(settings: Settings<A, E, R>): Effect.Effect<Budgets> =>
  Effect.all({
    firstLevel: Budget.make(toSchedule(settings.stream.retry)),
    recovery: Budget.make(toSchedule(recoveries(settings.stream.recovery))),
    schemaWaits: Budget.make(toSchedule(recoveries(schemaWait)))
  })

const outcomeOf = (key: string, state: State): Outcome => ({
  key,
  offset: state.offset ?? 0,
  written: state.count,
  bytes: state.bytes,
  retries: state.retries,
  failed: state.failed,
  schemaPushed: state.schemaPushed
})

/**
 * Moves a batch on a buffered stream to where the append before it ended (`state.after`, waited
 * for). If the batch must move but an attempt at its current offset got no answer, the service may
 * still apply that attempt there, over another batch's rows: terminal, and the restore from the last
 * checkpoint is the repair (rows past it were never flushed). `what` names the rows in the message.
 */
const toPredecessorEnd = (
  state: State,
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
const abandon = (
  atOffset: AtOffset,
  state: State,
  destination: Destination,
  connection: Connection
): Effect.Effect<Next, BigQueryError> =>
  Effect.andThen(destination.slot.retire(connection), atOffset.abandon).pipe(
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

/**
 * The exactly-once verdicts that differ from the at-least-once table (reference 2.6): an offset that
 * already exists mid-run after an unanswered attempt is the batch landed; a restored stream that cannot be adopted is abandoned
 * for a fresh one (the batch goes at 0); an offset out of range mid-run is re-appended at the end
 * of the append before it once that one settled, and if that happens again, at the same offset after
 * a reconnect, on the recovery budget; the rest is terminal.
 */
const atOffsetAction = (
  verdict: Exclude<Buffered.Verdict, { readonly _tag: "shared" }>,
  atOffset: AtOffset,
  state: State,
  destination: Destination,
  connection: Connection,
  problem: Problem
): Effect.Effect<Next, BigQueryError> => {
  const budgets = state.budgets
  switch (verdict._tag) {
    case "landed":
      return Effect.succeed("done")
    case "abandon":
      return abandon(atOffset, state, destination, connection)
    case "reappend":
      // the first time, the predecessor's final end says where the rows go: behind rejected rows
      // (lower) or where they were (it overtook its predecessor); no reconnect, no wait
      if (!state.restamped) {
        state.restamped = true
        state.retries++
        return Effect.as(toPredecessorEnd(state, destination.key, problem, "the rows"), "resend" as const)
      }
      return Effect.andThen(
        destination.slot.retire(connection),
        Effect.flatMap(budgets === undefined ? Effect.succeedNone : budgets.recovery.next, (wait) => {
          if (Option.isNone(wait)) {
            return Effect.fail(
              new BigQueryError({
                reason: new RetriesExhausted({
                  method: "AppendRows",
                  destination: destination.key,
                  attempts: (budgets?.recovery.used() ?? 0) + 1,
                  code: codeName(problem.failure.code),
                  detail: problem.detail,
                  cause: problem.cause
                })
              })
            )
          }
          state.retries++
          return Effect.as(Effect.sleep(wait.value), "resend" as const)
        })
      )
    case "terminal":
      return Effect.fail(
        new BigQueryError({
          reason: new RequestRejected({
            method: "AppendRows",
            destination: destination.key,
            code: codeName(problem.failure.code),
            detail: `${verdict.detail} (offset ${state.offset}): ${problem.detail}`,
            cause: problem.cause
          })
        })
      )
  }
}

const initialState = (batch: Batch, atOffset: AtOffset | undefined): State => ({
  body: batch.body,
  count: batch.count,
  bytes: batch.bytes,
  retries: 0,
  schemaPushed: false,
  failed: [],
  budgets: undefined,
  offset: atOffset?.offset,
  phase: atOffset?.probe === true ? "probe" : "append",
  echoed: undefined,
  restamped: false,
  unanswered: false,
  after: atOffset?.after ?? Effect.succeed(0)
})

/** A buffered append acknowledged at an offset other than the one it was sent at. */
const echoedElsewhere = (key: string, state: State): BigQueryError =>
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

/** An attempt answered OK: the batch's outcome, unless a buffered append was acknowledged elsewhere. */
const committed = (key: string, state: State, atOffset: AtOffset | undefined): Effect.Effect<Outcome, BigQueryError> =>
  atOffset !== undefined && state.echoed !== undefined && state.echoed !== state.offset
    ? Effect.fail(echoedElsewhere(key, state))
    : Effect.succeed(outcomeOf(key, state))

/**
 * Appends `batch` to `destination` until it is committed (survivors of row errors included) or a
 * terminal error: each failed attempt is classified (`retry.ts`) and its verdict's action run
 * ({@link actionOf}), on the batch's budgets: the first level (`retry`) for in-band transient errors
 * on the same connection, the recovery budget for reconnects, table creation and what the first
 * level gave up on, and the schema-wait budget for schema updates.
 *
 * @internal
 */
export const run = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: Destination,
  batch: Batch,
  atOffset?: AtOffset
): Effect.Effect<Outcome, BigQueryError> =>
  Effect.gen(function*() {
    const context = classifyContext(settings)
    const state = initialState(batch, atOffset)
    for (;;) {
      // never sent while the destination's table is being repaired: wait, then append after it
      yield* destination.guard.settled
      const epoch = destination.guard.epoch()
      const connection = yield* destination.slot.acquire(batch.descriptor)
      state.echoed = undefined
      const problem = yield* attempt(settings.stream.responseTimeout, destination, connection, state)
      if (problem === undefined) return yield* committed(destination.key, state, atOffset)
      yield* metrics.countError(codeName(problem.failure.code))
      // whether an earlier attempt may have landed: read before this attempt counts
      const earlierUnanswered = state.unanswered
      if (problem.failure.origin !== "response") state.unanswered = true
      state.budgets ??= yield* budgetsOf(settings)
      const buffered = atOffset === undefined
        ? undefined
        : Buffered.classifyAppend(problem.failure, state.phase, earlierUnanswered)
      if (atOffset !== undefined && buffered !== undefined && buffered._tag !== "shared") {
        const next = yield* atOffsetAction(buffered, atOffset, state, destination, connection, problem)
        if (next === "done") return outcomeOf(destination.key, state)
        continue
      }
      const action = actionOf(classify(problem.failure, context))
      const replaying = state.phase === "replay"
      const next = yield* action({
        client,
        settings,
        destination,
        batch,
        state,
        budgets: state.budgets,
        connection,
        epoch,
        problem
      })
      if (atOffset !== undefined && !replaying && state.phase === "replay") {
        // the survivors of a rejection go where the rows before them end: this batch's stamp is high
        // when the batch before it lost rows too (and a service may report row errors before the offset)
        yield* toPredecessorEnd(state, destination.key, problem, "the survivors")
      }
      if (next === "done") return outcomeOf(destination.key, state)
    }
  }).pipe(
    hotSpan("BigQuerySink.append", { "bigquery.destination": destination.key, "bigquery.rows": batch.count })
  )
