/**
 * What happens when an append fails: the whole decision of the Storage Write backend, for its three
 * methods (at-least-once and CDC on a table's `_default` stream, exactly-once on BUFFERED streams at
 * explicit offsets), as pure functions (cf. Go's `retry.go`). `pendingAppend.ts` runs the attempts and
 * does what {@link decide} says; `backend.ts` hands the core what {@link reconnect}, {@link repair}
 * and {@link written} say.
 *
 * **The decision, in order**
 *
 * 1. An attempt's failure is described as an {@link AppendFailure}: where it came from (an answer, a
 *    broken stream, no answer at all), its gRPC and StorageError codes, its row errors.
 * 2. On a buffered stream, the exactly-once table comes first ({@link classifyAtOffset}, reference
 *    2.6, by the append's {@link Phase}): an offset that exists is the batch's own landed attempt, a
 *    restored stream that cannot be adopted is abandoned, an offset out of range is restamped at its
 *    predecessor's end (then reconnected), the rest of its cases are terminal.
 * 3. Otherwise, and for what the buffered table leaves to it, the at-least-once table
 *    ({@link classify}, reference 2.4): transient codes re-send in band, a stale or broken stream
 *    reconnects, a missing table or a schema lacking the rows' fields is repaired, row errors route
 *    their rows and re-send the survivors, the rest is terminal.
 * 4. {@link decide} turns both into what the call does: re-send in band (on the call's own `retry`
 *    budget; once it is spent, reconnect), reconnect, repair, route rows, take the batch as landed,
 *    abandon, restamp, or fail with the error this file builds.
 * 5. A call ends in a {@link Step}; the owner turns it into the core's verdict: `done` is written
 *    (its routed rows handed to the failure handler), `reconnect` is a retry on the core's `recovery`
 *    budget, `repair` waits for the core's repair engine (table creation on `recovery`, a schema
 *    change on `propagation`, the fixed schema wait).
 *
 * Every budget's `Schedule` is given the failure as its input: the `BigQueryError` the write ends
 * with if the schedule stops there (what `RetryPolicy.fromSchedule` promises a caller's schedule).
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import {
  BigQueryError,
  RequestRejected,
  RetriesExhausted,
  SchemaMismatch,
  TableNotFound
} from "../../../BigQuery/BigQueryError.ts"
import type { BigQueryFailure, FailedRow } from "../../../BigQuery/BigQueryFailure.ts"
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import type { RetryPolicy } from "../../../Sink/RetryPolicy.ts"
import { Fenced } from "../../checkpoint/fenced.ts"
import type { Accounted, Verdict as CoreVerdict } from "../../core/backend.ts"
import { Code, name as codeName } from "../../wire/grpcStatus.ts"
import { isTransient, StorageCode } from "../transport/classify.ts"
import type { RowError } from "../transport/rowErrors.ts"

// -- 1. What went wrong -------------------------------------------------------------------------

/**
 * What went wrong with one append.
 *
 * - `origin`: `"response"` for an `AppendRowsResponse` carrying `error` (the connection is fine),
 *   `"stream"` when the call itself failed (the connection is gone), `"watchdog"` when no response
 *   came within the response timeout (no status at all).
 * - `code`: the gRPC status code, `undefined` when there is none.
 * - `storageCode`: the `StorageError` code found in the status details, if any.
 * - `rowErrors`: how many `row_errors` the response carried.
 *
 * @internal
 */
export interface AppendFailure {
  readonly origin: "response" | "stream" | "watchdog"
  readonly code: number | undefined
  readonly storageCode: number | undefined
  readonly rowErrors: number
}

/** A failed attempt: its failure, the service's message, the original cause, the row errors. @internal */
export interface Problem {
  readonly failure: AppendFailure
  readonly detail: string
  readonly cause: unknown
  readonly rowErrors: ReadonlyArray<RowError>
}

// -- 2. The at-least-once table (reference 2.4) ------------------------------------------------

/** The sink settings the verdict depends on. @internal */
export interface Context {
  readonly schemaUpdatesEnabled: boolean
  readonly createDisposition: CreateDisposition
}

/**
 * - `retry`: transient in-band error; send the whole batch again on the same connection
 *   (first-level budget, then the recovery budget).
 * - `reconnect`: the connection is gone or stale; rebuild it and re-append (recovery budget).
 * - `createTable`: missing table under `CREATE_IF_NEEDED`; create it, rebuild, re-append.
 * - `updateSchema`: extra fields with updates enabled; reconcile the table, re-append on the
 *   schema-wait budget.
 * - `routeRows`: row-level errors; route the failing rows, re-append the survivors.
 * - `fail`: terminal, with `kind` telling which error to raise.
 *
 * @internal
 */
export type AppendVerdict =
  | { readonly _tag: "retry" }
  | { readonly _tag: "reconnect" }
  | { readonly _tag: "createTable" }
  | { readonly _tag: "updateSchema" }
  | { readonly _tag: "routeRows" }
  | { readonly _tag: "fail"; readonly kind: "tableNotFound" | "schemaMismatch" | "rejected" }

const verdict = <T extends AppendVerdict["_tag"]>(_tag: T) => ({ _tag }) as Extract<AppendVerdict, { _tag: T }>
const failWith = (kind: "tableNotFound" | "schemaMismatch" | "rejected"): AppendVerdict => ({ _tag: "fail", kind })

const staleStorageCodes: ReadonlySet<number> = new Set([
  StorageCode.STREAM_FINALIZED,
  StorageCode.STREAM_NOT_FOUND,
  StorageCode.INVALID_STREAM_STATE
])

/**
 * The verdict, checked in the order of the reference table: transient code first (so a
 * transient-coded response with row errors is retried whole), stale stream, schema mismatch,
 * row errors, missing table (never with row details), then terminal.
 *
 * @internal
 */
export const classify = (failure: AppendFailure, context: Context): AppendVerdict => {
  if (failure.origin === "watchdog") return verdict("reconnect")
  if (isTransient(failure.code)) return verdict(failure.origin === "stream" ? "reconnect" : "retry")
  if (failure.storageCode !== undefined && staleStorageCodes.has(failure.storageCode)) return verdict("reconnect")
  if (
    failure.storageCode === StorageCode.SCHEMA_MISMATCH_EXTRA_FIELDS &&
    (context.schemaUpdatesEnabled || failure.rowErrors === 0)
  ) {
    return context.schemaUpdatesEnabled ? verdict("updateSchema") : failWith("schemaMismatch")
  }
  if (failure.rowErrors > 0) return verdict("routeRows")
  if (
    failure.code === Code.NOT_FOUND || failure.code === Code.PERMISSION_DENIED ||
    failure.storageCode === StorageCode.TABLE_NOT_FOUND
  ) {
    return context.createDisposition === "CREATE_IF_NEEDED" ? verdict("createTable") : failWith("tableNotFound")
  }
  return failWith("rejected")
}

/**
 * The verdict on opening a destination (`GetWriteStream` on its `_default` stream, or
 * `CreateWriteStream`): a missing table (including the masked `PERMISSION_DENIED`) is created or
 * terminal, transient codes are retried, anything else is terminal.
 *
 * @internal
 */
export const classifyOpen = (code: number | undefined, context: Context): AppendVerdict => {
  if (code === Code.NOT_FOUND || code === Code.PERMISSION_DENIED) {
    return context.createDisposition === "CREATE_IF_NEEDED" ? verdict("createTable") : failWith("tableNotFound")
  }
  if (isTransient(code)) return verdict("retry")
  return failWith("rejected")
}

// -- 3. The exactly-once table (reference 2.6) -------------------------------------------------

/**
 * Where an append at an explicit offset stands:
 *
 * - `probe`: the first append on a restored stream, at the restored offset (and its survivors after
 *   row errors: they are still the probe, so a stream that cannot be adopted is abandoned);
 * - `append`: a batch at its offset, mid-run;
 * - `replay`: the survivors of a row-level rejection mid-run, re-appended at the rejected offset.
 *
 * @internal
 */
export type Phase = "probe" | "append" | "replay"

/**
 * - `landed`: `OFFSET_ALREADY_EXISTS` mid-run after an earlier attempt of the batch went unanswered:
 *   that attempt landed: success. On an attempt with no unanswered one before it, the rows there are
 *   someone else's (the successor that adopted the stream; this writer is the zombie): `fenced`.
 * - `fenced`: another writer owns the stream now: the checkpoint protocol fails the writer with
 *   `CheckpointConflict`, the one error for "another writer owns this now" whichever layer notices.
 * - `abandon`: the restored stream cannot be adopted: leave it (never finalized), create a fresh
 *   stream and append from offset 0.
 * - `reappend`: `OFFSET_OUT_OF_RANGE` mid-run (rows before it were rejected, or it overtook its
 *   predecessor): re-appended at its predecessor's end, then at the same offset after a reconnect.
 * - `terminal`: the writer fails (a restart and restore is the repair), `detail` says why.
 * - `shared`: the at-least-once verdict applies (transient, watchdog, row errors, schema mismatch).
 *
 * @internal
 */
export type OffsetVerdict =
  | { readonly _tag: "landed" }
  | { readonly _tag: "abandon" }
  | { readonly _tag: "reappend" }
  | { readonly _tag: "terminal"; readonly detail: string }
  | { readonly _tag: "fenced"; readonly detail: string }
  | { readonly _tag: "shared" }

const is = (failure: AppendFailure, code: number, storageCode: number): boolean =>
  failure.storageCode === storageCode || (failure.storageCode === undefined && failure.code === code)

/** `OFFSET_ALREADY_EXISTS` (BigQuery) or a bare `ALREADY_EXISTS` (bqemulator 1.4.0 sends no StorageError). @internal */
export const offsetExists = (failure: AppendFailure): boolean =>
  is(failure, Code.ALREADY_EXISTS, StorageCode.OFFSET_ALREADY_EXISTS)

/** `OFFSET_OUT_OF_RANGE` or a bare `OUT_OF_RANGE`. @internal */
export const offsetOutOfRange = (failure: AppendFailure): boolean =>
  is(failure, Code.OUT_OF_RANGE, StorageCode.OFFSET_OUT_OF_RANGE)

/**
 * A stream that is gone or unusable: finalized, not found, invalid state, or the bare codes that
 * stand for them (`NOT_FOUND`: a buffered stream's table is proven at creation, so a missing entity
 * at append is the stream; `FAILED_PRECONDITION`: bqemulator's finalized stream).
 *
 * @internal
 */
export const staleStream = (failure: AppendFailure): boolean =>
  failure.storageCode === StorageCode.STREAM_FINALIZED || failure.storageCode === StorageCode.STREAM_NOT_FOUND ||
  failure.storageCode === StorageCode.INVALID_STREAM_STATE ||
  (failure.storageCode === undefined &&
    (failure.code === Code.NOT_FOUND || failure.code === Code.FAILED_PRECONDITION))

/**
 * The verdict on a failed append at an explicit offset, in the order of reference 2.6.
 * `unanswered`: an earlier attempt of the same batch at the same offset ended without an answer
 * (the watchdog, a broken or reset connection), so it may have landed.
 *
 * @internal
 */
export const classifyAtOffset = (failure: AppendFailure, phase: Phase, unanswered: boolean): OffsetVerdict => {
  if (failure.origin === "watchdog") return { _tag: "shared" }
  if (offsetExists(failure)) {
    if (phase === "probe") return { _tag: "abandon" }
    if (phase === "replay") {
      return { _tag: "terminal", detail: "OFFSET_ALREADY_EXISTS while replaying after a row-level rejection" }
    }
    // only a retry of an attempt that may have landed can find its own rows there
    return unanswered ? { _tag: "landed" } : {
      _tag: "fenced",
      detail: "OFFSET_ALREADY_EXISTS on an attempt with no unanswered one before it: the rows there are " +
        "another writer's, which took the stream over"
    }
  }
  if (offsetOutOfRange(failure)) {
    if (phase === "probe") return { _tag: "abandon" }
    if (phase === "replay") {
      return { _tag: "terminal", detail: "OFFSET_OUT_OF_RANGE while replaying after a row-level rejection" }
    }
    return { _tag: "reappend" }
  }
  if (staleStream(failure)) {
    return phase === "probe"
      ? { _tag: "abandon" }
      : { _tag: "terminal", detail: "the buffered stream is finalized, gone or in an invalid state" }
  }
  // a masked denial at append is never a table's propagation window (measured: it does not happen)
  if (failure.code === Code.PERMISSION_DENIED || failure.storageCode === StorageCode.TABLE_NOT_FOUND) {
    return { _tag: "terminal", detail: "the table is missing or access is denied" }
  }
  return { _tag: "shared" }
}

// -- 4. What the call does next ----------------------------------------------------------------

/**
 * What a call does after a failed attempt:
 *
 * - `resend`: again on the same connection after the next wait of the call's `retry` budget (fresh
 *   for each call); once that budget is spent, `reconnect`.
 * - `reconnect`: the connection is retired and the call ends; the core calls again after a wait of
 *   its `recovery` budget.
 * - `repair`: the connection is retired and the call ends; the core's repair engine creates the
 *   table or reconciles its schema once per incident, then calls again.
 * - `routeRows`: the rows the errors name are routed, the survivors sent again at once.
 * - `landed`: a buffered batch's earlier, unanswered attempt landed: done.
 * - `abandon`: the restored stream is left for a fresh one; the batch goes again at its offset 0.
 * - `restamp`: the buffered batch moves to where the append before it ended, and goes again at once.
 * - `fail`: the writer fails with `error`.
 *
 * @internal
 */
export type Decision =
  | { readonly _tag: "resend" }
  | { readonly _tag: "reconnect" }
  | { readonly _tag: "repair"; readonly kind: "createTable" | "updateSchema" }
  | { readonly _tag: "routeRows" }
  | { readonly _tag: "landed" }
  | { readonly _tag: "abandon" }
  | { readonly _tag: "restamp" }
  | { readonly _tag: "fail"; readonly error: BigQueryError }

/**
 * What the decision knows of the append besides its failure: its destination, the settings, and
 * on a buffered stream where it stands (its phase and offset, whether an earlier attempt of it went
 * unanswered, whether it was restamped already).
 *
 * @internal
 */
export interface Facts {
  readonly key: string
  readonly context: Context
  readonly buffered?: {
    readonly phase: Phase
    readonly offset: number
    readonly unanswered: boolean
    readonly restamped: boolean
  } | undefined
}

const fail = (error: BigQueryError): Decision => ({ _tag: "fail", error })

/** The exactly-once table's decision, or `undefined` where it leaves the append to the at-least-once one. */
const atOffset = (problem: Problem, facts: Facts): Decision | undefined => {
  const b = facts.buffered
  if (b === undefined) return undefined
  const v = classifyAtOffset(problem.failure, b.phase, b.unanswered)
  switch (v._tag) {
    case "landed":
    case "abandon":
      return { _tag: v._tag }
    case "reappend":
      // the first time, the predecessor's final end says where the rows go (behind rejected rows, or
      // where they were when it overtook its predecessor): at once; a second time, after a reconnect
      return b.restamped ? { _tag: "reconnect" } : { _tag: "restamp" }
    case "terminal":
      return fail(rejected(facts.key, problem, `${v.detail} (offset ${b.offset}): ${problem.detail}`))
    case "fenced": {
      // the cause marks it: the checkpoint protocol turns it into `CheckpointConflict`
      const detail = `${v.detail} (offset ${b.offset}): ${problem.detail}`
      return fail(rejected(facts.key, problem, detail, new Fenced({ detail: `${facts.key}: ${detail}` })))
    }
    case "shared":
      return undefined
  }
}

/**
 * The decision on a failed attempt: the exactly-once table first on a buffered stream, then the
 * at-least-once table.
 *
 * @internal
 */
export const decide = (problem: Problem, facts: Facts): Decision => {
  const buffered = atOffset(problem, facts)
  if (buffered !== undefined) return buffered
  const v = classify(problem.failure, facts.context)
  switch (v._tag) {
    case "retry":
      return { _tag: "resend" }
    case "reconnect":
    case "routeRows":
      return { _tag: v._tag }
    case "createTable":
    case "updateSchema":
      return { _tag: "repair", kind: v._tag }
    case "fail":
      return fail(failureOf(v.kind, facts, problem))
  }
}

/**
 * After the rows a row error names were routed: the survivors' phase, and whether they move to where
 * the append before them ended (mid-run the batch before may have lost rows too, and a service may
 * report row errors before it checks the offset). A probe's survivors are still the probe.
 *
 * @internal
 */
export const afterRouting = (phase: Phase): { readonly phase: Phase; readonly toPredecessorEnd: boolean } =>
  phase === "append" ? { phase: "replay", toPredecessorEnd: true } : { phase, toPredecessorEnd: false }

/**
 * Where a buffered batch goes when it must move from `from` to its predecessor's end `end`: there,
 * unless an attempt at `from` got no answer: the service may still apply it there, over another
 * batch's rows: terminal, and the restore from the last checkpoint is the repair (rows past it were
 * never flushed). `what` names the rows in the message.
 *
 * @internal
 */
export const moveTo = (
  key: string,
  problem: Problem,
  move: { readonly from: number; readonly end: number; readonly unanswered: boolean; readonly what: string }
): number | BigQueryError =>
  move.end === move.from || !move.unanswered ? move.end : rejected(
    key,
    problem,
    `${move.what} at offset ${move.from} belong at ${move.end}, but its attempt at ${move.from} got no answer and ` +
      "may still be applied there: restore from the last checkpoint"
  )

/**
 * An answered attempt: `undefined` (committed), unless a buffered append was acknowledged at an
 * offset other than the one it was sent at.
 *
 * @internal
 */
export const acknowledged = (key: string, offset: number | undefined, echoed: number | undefined) =>
  offset === undefined || echoed === undefined || echoed === offset ? undefined : new BigQueryError({
    reason: new RequestRejected({
      method: "AppendRows",
      destination: key,
      code: "OK",
      detail: `the append at offset ${offset} was acknowledged at offset ${echoed}`,
      cause: undefined
    })
  })

/** Row errors that name no row of the batch: terminal (nothing to route, nothing to re-send). @internal */
export const unmatchedRowErrors = (key: string, problem: Problem, rows: number): BigQueryError =>
  rejected(key, problem, `row errors name no row of the batch of ${rows} rows: ${problem.detail}`)

// -- 5. How a call ended, and what the core does with it ----------------------------------------

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

/** The core's verdict on a request of the Storage Write backend. @internal */
export type BigQueryVerdict<E> = CoreVerdict<Accounted, BigQueryFailure, BigQueryError | E>

/** A verdict with nothing in it, to build on. @internal */
export const noVerdict: CoreVerdict<Accounted, BigQueryFailure, never> = {
  written: [],
  routed: [],
  resend: [],
  repair: [],
  retry: undefined,
  terminal: undefined
}

/**
 * A `done` call: its rows written, the rejected ones routed; the routed rows take the rest of the
 * request's units and bytes (its permit went with the survivors).
 *
 * @internal
 */
export const written = (request: Accounted, o: Outcome): BigQueryVerdict<never> => ({
  ...noVerdict,
  written: [{
    key: request.key,
    units: o.written,
    bytes: o.bytes,
    permitBytes: request.permitBytes,
    generation: request.generation
  }],
  routed: o.failed.map((failure, i) => ({
    item: {
      key: request.key,
      units: 1,
      bytes: i === 0 ? request.bytes - o.bytes : 0,
      permitBytes: 0,
      generation: request.generation
    },
    failure
  }))
})

/**
 * A `reconnect`: the request goes again after the `recovery` budget's wait for its `attempt`-th
 * reconnect; it keeps its place in the request window meanwhile (its successors on a buffered
 * stream may wait in their calls for its end).
 *
 * @internal
 */
export const reconnect = (request: Accounted, attempt: number, problem: Problem): BigQueryVerdict<never> => ({
  ...noVerdict,
  reserve: true,
  retry: {
    items: [request],
    attempt,
    budget: "recovery",
    exhausted: () => exhausted(request.key, attempt, problem)
  }
})

/**
 * A `repair`: the request waits for the core's repair engine to run `run` (once per incident for
 * its destination, whose epoch it `observed` when it was sent), then goes again: a table creation
 * on the `recovery` budget, a schema change on `propagation` (the schema wait), `attempt` counting
 * this kind of repair for the request.
 *
 * @internal
 */
export const repair = (
  request: Accounted,
  observed: number,
  kind: "createTable" | "updateSchema",
  attempt: number,
  problem: Problem,
  run: Effect.Effect<void, BigQueryError>
): BigQueryVerdict<never> => ({
  ...noVerdict,
  reserve: true,
  repair: [{
    key: request.key,
    item: request,
    observed,
    repair: run,
    attempt,
    budget: kind === "createTable" ? "recovery" : "propagation",
    exhausted: () =>
      kind === "createTable"
        ? exhausted(request.key, attempt, problem)
        : schemaStillRefused(request.key, attempt, problem)
  }]
})

// -- 6. The budgets -----------------------------------------------------------------------------

/**
 * The schema-wait budget (the core's `propagation` budget): flat 30 s, 30 attempts, ±25 % (not
 * configurable, reference 2.4), one attempt more than it says, as {@link recoveries}.
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
 * `policy.maxAttempts` recoveries after a first attempt (so an exhausted budget reports
 * `maxAttempts + 1` attempts): a policy of one more attempt. A caller's own `Schedule`
 * (`RetryPolicy.fromSchedule`) is its own count, taken as it is. The core's `recovery` budget.
 *
 * @internal
 */
export const recoveries = (policy: RetryPolicy): RetryPolicy =>
  policy._tag === "FromSchedule" ? policy : { ...policy, maxAttempts: policy.maxAttempts + 1 }

// -- 7. The errors ------------------------------------------------------------------------------

/**
 * The failure of a transient append as its budgets see it: the error the write ends with after
 * `attempts` attempts (the input of every budget's schedule, and the writer's failure once one is spent).
 *
 * @internal
 */
export const exhausted = (key: string, attempts: number, problem: Problem): BigQueryError =>
  new BigQueryError({
    reason: new RetriesExhausted({
      method: "AppendRows",
      destination: key,
      attempts,
      code: codeName(problem.failure.code),
      detail: problem.detail,
      cause: problem.cause
    })
  })

const schemaStillRefused = (key: string, attempt: number, problem: Problem): BigQueryError =>
  new BigQueryError({
    reason: new SchemaMismatch({
      destination: key,
      detail: `the table still refuses the rows after ${attempt - 1} schema waits: ${problem.detail}`,
      cause: problem.cause
    })
  })

const rejected = (key: string, problem: Problem, detail: string, cause: unknown = problem.cause): BigQueryError =>
  new BigQueryError({
    reason: new RequestRejected({
      method: "AppendRows",
      destination: key,
      code: codeName(problem.failure.code),
      detail,
      cause
    })
  })

/**
 * The terminal error of a missing table (or a denial masking one) under `CREATE_NEVER`, on
 * opening a destination or on appending to it.
 *
 * @internal
 */
export const tableNotFound = (
  key: string,
  createDisposition: CreateDisposition,
  message: string,
  cause: unknown
): BigQueryError =>
  new BigQueryError({
    reason: new TableNotFound({
      destination: key,
      createDisposition,
      detail: `table ${key} does not exist (or access is denied) and createDisposition is ` +
        `${createDisposition}: ${message}`,
      cause
    })
  })

/** The error of a terminal verdict of the at-least-once table. */
const failureOf = (
  kind: Extract<AppendVerdict, { _tag: "fail" }>["kind"],
  facts: Facts,
  problem: Problem
): BigQueryError => {
  const { cause, detail } = problem
  switch (kind) {
    case "tableNotFound":
      return tableNotFound(facts.key, facts.context.createDisposition, detail, cause)
    case "schemaMismatch":
      return new BigQueryError({
        reason: new SchemaMismatch({
          destination: facts.key,
          detail: `rows have fields the table lacks (${detail}); enable schemaUpdate: ` +
            "{ allowNewFields: true } or add the columns to the table",
          cause
        })
      })
    case "rejected":
      return rejected(facts.key, problem, detail)
  }
}
