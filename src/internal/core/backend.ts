/**
 * The contract between the writer core (`internal/core/`) and a write method, as two seams
 * (ADR 0032): **admission** (records in, staged or batched) and **delivery** (one attempt out, its
 * outcome judged). The core owns what every writer does alike; a method plugs in only what differs.
 *
 * **What the core owns**
 *
 * - the command queue and the owner loop (one fiber owns every mutable structure; others send commands);
 * - admission: records are prepared on the caller's fiber, cut into {@link Slice}s, and each slice
 *   takes a writer-global in-flight permit (units and bytes, `flowControl.ts`) before it is offered
 *   to the owner; waiting for a permit is the backpressure;
 * - the terminal-failure latch: the first fatal cause is kept, every later `write`/`flush` fails with it;
 * - barriers: `flush` cuts every open batch, waits until every item admitted before it has left
 *   (written or routed: what a source that never pauses writes after it is not waited for, each item
 *   carrying the barrier generation it was admitted in), flushes the failure handler once, then
 *   forgets idle destinations; the checkpoint protocol (`checkpoint/protocol.ts`) drains through
 *   this barrier before it prepares and commits (no write runs during a checkpoint);
 * - failure routing through the `FailureHandler` lifecycle (`failureRouting.ts`): `recordsFailed` is
 *   counted once the handler succeeded (dropped the record), as `WriteSummary` documents;
 * - summary counters (read without queueing) and in-flight gauges moved by deltas, returned to 0 at close;
 * - timers: the tick (batch delay, stall warning, idle-destination eviction once a minute) and
 *   eviction at every successful barrier;
 * - with a delivery seam, the one completion path: a request's attempt runs on its own fiber and its
 *   outcome comes back to the owner as a command, where {@link Delivery.judge} turns it into a
 *   {@link Verdict} the core acts on (count, route, retry on the `Schedule` of a `RetryPolicy`,
 *   repair, fail);
 * - close: after success, a final barrier if anything was admitted since the last one (the handler
 *   is flushed once, not twice); after failure or interruption, release without flushing.
 *
 * **What a method supplies**
 *
 * - {@link Admission}, always: `prepare` (caller fiber: resolve, serialize and measure a run of
 *   records into slices, routed failures and skipped records; user code never runs on the owner),
 *   then on the owner `admit` (a slice joins its batches, or is staged), `cutAll` and `tick` (open
 *   batches cut into requests handed to {@link Core.send}).
 * - {@link Delivery}, for a method that sends from the owner: `call` (one attempt, on its own fiber,
 *   never failing), `judge` (owner: the verdict on its outcome), and the follow-ups a verdict may ask
 *   for (`resend`, `repair`); steps of its own run on the owner through {@link Core.offer}.
 *
 * A method that only stages (Bigtable exactly-once, file loads: their records leave at the
 * checkpoint, through the checkpoint's committer) supplies admission alone and builds with
 * `writer.makeStaging`; it sees an {@link AdmissionCore}, which has nothing to send.
 *
 * The types below are stable: a change is noted at the top of `README.md` in this folder.
 *
 * @internal
 */
import type * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import type { FailedElement } from "../../Sink/FailedElement.ts"
import type { FailureHandler } from "../../Sink/FailureHandler.ts"
import type { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { RepairRetry, Repairs } from "./repairs.ts"
import type { SummaryCounters } from "./summaryCounters.ts"

/**
 * What the core accounts for one admitted unit of work until it leaves the writer (written or
 * routed): a Bigtable entry, or a BigQuery batch (or part of one). The backend keeps it; the core
 * reads these fields only.
 *
 * - `key`: the destination's string form (the summary's key, `p.i.t` / `p.d.t`).
 * - `units`: records it carries (1 for a Bigtable entry; rows for a BigQuery batch); counted as
 *   `recordsWritten` when written, and taken from the in-flight units bound.
 * - `bytes`: serialized bytes; `bytesWritten` when written, and the in-flight bytes gauge.
 * - `permitBytes`: what it took of the in-flight bytes permit (its `bytes` clamped to the bound by
 *   the slice that admitted it); given back when it leaves.
 * - `generation`: the barrier generation its records were admitted in (the `generation` handed to
 *   `Admission.admit`; an item carries records of one generation): a barrier waits only for the
 *   items of its generation and earlier. The core counts units by generation from admission to
 *   leaving, so an item's units must all be of its generation.
 *
 * @internal
 */
export interface Accounted {
  readonly key: string
  readonly units: number
  readonly bytes: number
  readonly permitBytes: number
  readonly generation: number
}

/**
 * The types a write method plugs into the core, bundled and read by name (`M["Item"]`), as Effect's
 * `Rpc` carries one type and reads `Rpc.Success<R>`. A method declares its own, e.g.
 * `interface BigtableMethod<A, EH, R> extends Method { readonly Record: A; ... }`, and every seam and
 * core type takes it whole: `Admission<M>`, `Delivery<M>`, `Core<M>`, `WriterOptions<M>`.
 *
 * - `Record`: what the caller writes.
 * - `Slice`: the payload of an admission {@link Slice}, prepared on the caller's fiber.
 * - `Item`: an {@link Accounted} unit of work, counted until it is written or routed.
 * - `Request`: what one call sends (a batch); `Outcome`: what the call came back with. A staging
 *   method sends nothing: `never` for both.
 * - `Failure`: a record routed to the failure handler.
 * - `Error`: the method's own errors (what its steps and verdicts fail the writer with).
 * - `HandlerError`: what the failure handler fails with; building the writer fails with it too.
 * - `Context`: what the handler and the method's owner-side steps need.
 *
 * @internal
 */
export interface Method {
  readonly Record: unknown
  readonly Slice: unknown
  readonly Item: Accounted
  readonly Request: unknown
  readonly Outcome: unknown
  readonly Failure: FailedElement
  readonly Error: unknown
  readonly HandlerError: unknown
  readonly Context: unknown
}

/**
 * What a writer on the core fails with: its method's errors and its failure handler's (a method's
 * `Error` usually names the handler's already).
 *
 * @internal
 */
export type CoreError<M extends Method> = M["Error"] | M["HandlerError"]

/**
 * One admission step, prepared on the caller fiber: the backend's payload and the permit it takes.
 * `units` and `permitBytes` must be what the payload's {@link Accounted} items sum to (so releasing
 * them all gives the permit back exactly); `bytes` is their real size (gauge).
 *
 * @internal
 */
export class Slice<S> {
  readonly payload: S
  readonly units: number
  readonly bytes: number
  readonly permitBytes: number
  constructor(payload: S, units: number, bytes: number, permitBytes: number) {
    this.payload = payload
    this.units = units
    this.bytes = bytes
    this.permitBytes = permitBytes
  }
}

/**
 * A prepared run of records: the slices to admit (in order), the records routed before admission
 * (unroutable, serializer failure, oversize), and the destinations of skipped records (one entry
 * per record the serializer skipped).
 *
 * @internal
 */
export interface Prepared<S, F> {
  readonly slices: ReadonlyArray<Slice<S>>
  readonly routed: ReadonlyArray<F>
  readonly skipped: ReadonlyArray<string>
}

/**
 * The writer-global in-flight bounds, handed to `prepare` so a slice never exceeds them.
 *
 * - `maxUnits` / `maxBytes`: what admitted and not yet written or routed items may hold; admission
 *   waits for room (the backpressure).
 * - `maxRequests`: at most this many requests (calls) in flight; further `Core.send`s wait in order
 *   and start as answers come back (BigQuery's `maxInFlightRequests`). Absent: no bound.
 *
 * @internal
 */
export interface Limits {
  readonly maxUnits: number
  readonly maxBytes: number
  readonly maxRequests?: number | undefined
}

/** A record that failed terminally, with the item that carried it (its permit is given back). @internal */
export interface Routed<I, F> {
  readonly item: I
  readonly failure: F
}

/** Items to re-send after a wait of the named budget's `Schedule`. @internal */
export interface Retry<I, E> {
  readonly items: ReadonlyArray<I>
  /** The attempt that just failed (1-based): the wait is the schedule's `attempt`-th delay; 0: re-sent at once. */
  readonly attempt: number
  /** `retry` (transient failures) or `recovery` (reconnects, repairs). */
  readonly budget: Budget
  /**
   * What failed, as the writer's failure when the schedule has no further attempt: also the
   * schedule's input at each step (what `RetryPolicy.fromSchedule` promises a caller's schedule).
   */
  readonly exhausted: () => E
}

/**
 * The budgets of a writer, each a `RetryPolicy` run through its `Schedule`: `retry` (transient
 * failures), `recovery` (reconnects, repairs), and `propagation` (a request that met the same
 * trouble after its destination's repair, waiting for the repair to become visible: BigQuery's
 * schema wait; the `recovery` policy unless a method sets its own).
 *
 * @internal
 */
export type Budget = "retry" | "recovery" | "propagation"

/**
 * Waits before attempt `attempt + 1` of `budget` (its `Schedule`), then runs `step` on the owner;
 * `exhausted` is what failed: the schedule's input, and the writer's failure when the schedule
 * allows no further attempt.
 *
 * @internal
 */
export type After<E> = (
  budget: Budget,
  attempt: number,
  step: Effect.Effect<void, E>,
  exhausted: () => E
) => Effect.Effect<void>

/**
 * A request that met trouble a repair of its destination fixes (a missing table, missing families,
 * a schema lacking the rows' fields): the core's repair engine (`repairs.ts`) holds it while the
 * destination is repaired, once per incident, then re-sends it through {@link Delivery.resend}.
 *
 * @internal
 */
export interface Trouble<I, E> {
  /** The destination's key: a repair runs once per key and incident. */
  readonly key: string
  readonly item: I
  /** The destination's epoch (`Core.repairs.epoch`) when the request was sent. */
  readonly observed: number
  /** The repair, run unless one ended since `observed` (its own waits and retries inside). */
  readonly repair: Effect.Effect<void, E>
  /**
   * The request's own count of repairs it waited for: the first goes again at once, the `n`-th
   * after the `n`-th wait of `budget`; past its schedule, `exhausted` fails the writer.
   */
  readonly attempt: number
  readonly budget: Budget
  /** What failed, as the writer's failure once the budget is spent; the schedule's input too. */
  readonly exhausted: () => E
}

/**
 * What the core does with one outcome, in this order: `routed` (given back, handed to the handler),
 * `resend` (re-sent now, e.g. Bigtable's isolation pass), `repair` (held by the core's repair engine),
 * then `terminal` (the writer fails; the rest is dropped with it), then `written` (counted, given
 * back) and `retry` (counted as retries, re-sent after the budget's wait). Every item of the batch
 * appears at most once, and exactly once unless `terminal` is set (after a failure the rest no
 * longer matters: the writer releases without committing).
 *
 * @internal
 */
export interface Verdict<I, F, E> {
  readonly written: ReadonlyArray<I>
  readonly routed: ReadonlyArray<Routed<I, F>>
  readonly resend: ReadonlyArray<I>
  readonly repair: ReadonlyArray<Trouble<I, E>>
  readonly retry: Retry<I, E> | undefined
  readonly terminal: E | undefined
  /**
   * The request judged goes again as it is (a `retry` or `repair` of it, re-sent with `Core.send` of
   * the same request) and keeps its place in `Limits.maxRequests` until then: requests sent after it
   * may wait in their calls for it (a buffered stream's link), and must not take the place it needs.
   */
  readonly reserve?: boolean | undefined
}

/**
 * The backend's metrics the core moves. Counters are added to; gauges are moved by deltas (so two
 * writers add up) and the core takes its share back when the writer closes.
 *
 * @internal
 */
export interface CoreMetrics {
  /** Records written (acknowledged), by count. */
  readonly recordsSend?: Metric.Counter<number> | undefined
  /** Bytes of the written records. */
  readonly bytesSend?: Metric.Counter<number> | undefined
  /** Records routed to the failure handler. */
  readonly recordsSendErrors?: Metric.Counter<number> | undefined
  /** Records the serializer skipped. */
  readonly recordsSkipped?: Metric.Counter<number> | undefined
  /** Per-destination written records (with a `destination` attribute, when `perDestination`). */
  readonly destinationRecordsSend?: Metric.Counter<number> | undefined
  /** Per-destination routed records. */
  readonly destinationSendErrors?: Metric.Counter<number> | undefined
  /** Gauge: units admitted and not yet written or routed. */
  readonly inFlightUnits?: Metric.Gauge<number> | undefined
  /** Gauge: bytes of those units. */
  readonly inFlightBytes?: Metric.Gauge<number> | undefined
  /** Gauge: requests (RPCs) in flight. */
  readonly inFlightRequests?: Metric.Gauge<number> | undefined
  readonly perDestination: boolean
}

/**
 * What the core offers a method's admission steps. Every member runs on the owner fiber.
 *
 * @internal
 */
export interface AdmissionCore<M extends Method> {
  /** Runs `effect` on a fiber of the writer (interrupted when it closes). */
  readonly fork: (effect: Effect.Effect<unknown>) => Effect.Effect<void>
  /** Items that leave the writer without being written or routed by a verdict (given back). */
  readonly resolved: (items: ReadonlyArray<M["Item"]>) => Effect.Effect<void>
  /** Hands a record to the failure handler (counted once the handler drops it). */
  readonly route: (failure: M["Failure"]) => Effect.Effect<void>
  /** Latches the writer's failure (the first one wins). */
  readonly fail: (error: CoreError<M>) => Effect.Effect<void>
  readonly failCause: (cause: Cause.Cause<CoreError<M>>) => Effect.Effect<void>
  /** Whether the writer has failed. */
  readonly failed: () => boolean
  /**
   * Fails with the writer's failure once latched (never succeeds). A wait for an answer from the
   * owner races it: a failed owner drops the commands it is sent, so that answer may never come.
   */
  readonly failure: Effect.Effect<never, CoreError<M>>
  /** Moves a gauge by `delta`; the core takes the sum back at close. */
  readonly gauge: (metric: Metric.Gauge<number>, delta: number) => Effect.Effect<void>
  /** Units outstanding in the whole writer. */
  readonly outstanding: () => number
  /** The summary counters (written by the owner only). */
  readonly counters: SummaryCounters
}

/**
 * What the core offers a delivering method's steps: the {@link AdmissionCore}, and sending. Every
 * member runs on the owner fiber, except `offer`, which any fiber may call.
 *
 * @internal
 */
export interface Core<M extends Method> extends AdmissionCore<M> {
  /**
   * Starts `delivery.call(batch)` on a fiber of its own (or queues it while `limits.maxRequests` are
   * in flight); its outcome comes back to `judge`.
   */
  readonly send: (batch: M["Request"]) => Effect.Effect<void>
  /**
   * Runs `step` on the owner, after the commands already queued (sent from a forked fiber, e.g. a
   * repair round's result, or a question about the owner's state); its failure is the writer's.
   * Never from the owner itself: it alone takes from its bounded queue, so it would wait forever on
   * a full one.
   */
  readonly offer: (step: Effect.Effect<void, CoreError<M>>) => Effect.Effect<void>
  /**
   * Waits before attempt `attempt + 1` of `budget` (the policy's `Schedule`), then `offer(step)` on a
   * forked fiber; `exhausted` fails the writer when the schedule allows no further attempt.
   */
  readonly after: After<CoreError<M>>
  /**
   * Re-sends `retry.items` through `Delivery.resend` after the budget's wait (what a `retry` verdict
   * does); with `attempt` 0, at once, on the owner (its failure is the writer's).
   */
  readonly retry: (retry: Retry<M["Item"], CoreError<M>>) => Effect.Effect<void>
  /** Requests in flight. */
  readonly requestsInFlight: () => number
  /** The repair engine (`repairs.ts`): which destinations are under repair, their epochs, a repair with nothing waiting yet. */
  readonly repairs: Pick<Repairs<M["Item"], CoreError<M>>, "active" | "epoch" | "start">
}

/**
 * The admission seam: records in, on the caller's fiber (`prepare`) then on the owner (`admit`,
 * `cutAll`, `tick`). Its owner-side steps run with the method's `Context` (the handler's).
 *
 * @internal
 */
export interface Admission<M extends Method> {
  /** Span and log prefix, e.g. `BigtableSink` (spans `BigtableSink.write`, `BigtableSink.flush`). */
  readonly name: string
  /**
   * Whether `write` returns only once the records its `prepare` routed are with the handler (so a
   * failing handler fails that `write`, as BigQuery documents); absent or false: once offered.
   */
  readonly writeAwaitsRouted?: boolean | undefined
  /**
   * Caller fiber, before each `prepare`: a wait for the transport (requests it has not yet taken
   * for the wire), so records are not prepared ahead of what can be sent; `undefined`: go on.
   */
  readonly admissionGate?: (() => Effect.Effect<void> | undefined) | undefined
  /** Records prepared per `prepare` call: a slice is admitted while the next is prepared. */
  readonly sliceRecords: number
  /** Caller fiber: resolve, serialize, measure. Each slice within `limits`. */
  readonly prepare: (
    records: ReadonlyArray<M["Record"]>,
    limits: Limits
  ) => Effect.Effect<Prepared<M["Slice"], M["Failure"]>, M["Error"]>
  /**
   * Owner: a slice's items join their batches or are staged (it holds its permit until they leave);
   * each carries `generation` (`Accounted.generation`).
   */
  readonly admit: (
    payload: M["Slice"],
    now: number,
    generation: number
  ) => Effect.Effect<void, M["Error"], M["Context"]>
  /** Owner: sends every open batch (a barrier, or admission waiting for permits they hold). Absent: none is ever open. */
  readonly cutAll?: Effect.Effect<void, M["Error"], M["Context"]> | undefined
  /** Owner, on each tick: sends batches open longer than the batch delay. Absent: nothing is timed. */
  readonly tick?: ((now: number) => Effect.Effect<void, M["Error"], M["Context"]>) | undefined
  /**
   * Owner, at a successful barrier and once a minute on the tick: forgets destinations idle since
   * before `now - idleTimeout`. Absent: the method keeps no destination to forget.
   */
  readonly evictIdle?: ((now: number) => Effect.Effect<void>) | undefined
}

/**
 * The verdict a method's `judge` gives on its items, routed failures and errors.
 *
 * @internal
 */
export type VerdictOf<M extends Method> = Verdict<M["Item"], M["Failure"], M["Error"]>

/**
 * The delivery seam: one attempt in (a `Request`), an `Outcome` out, judged into a {@link Verdict}
 * on the method's items.
 *
 * @internal
 */
export interface Delivery<M extends Method> {
  /** Own fiber: the attempt of one request. Its failures are part of the outcome, so it never fails. */
  readonly call: (batch: M["Request"]) => Effect.Effect<M["Outcome"]>
  /**
   * Owner: the attempt of one request started at once, on no fiber of its own (a fiber a call cost
   * ~3 KB and two fiber runs): `deliver` takes its outcome, once, maybe before the effect ends.
   * Succeeds with the call's cancel (run when the writer closes first; nothing is delivered after
   * it), or `undefined` when it did not start: the core then runs `call` on a fiber. Absent: every
   * call runs on a fiber.
   */
  readonly start?:
    | ((batch: M["Request"], deliver: (outcome: M["Outcome"]) => void) => Effect.Effect<(() => void) | undefined>)
    | undefined
  /** Owner: the verdict on one request's outcome (from the method's pure classifier). */
  readonly judge: (batch: M["Request"], outcome: M["Outcome"]) => Effect.Effect<VerdictOf<M>, never, M["Context"]>
  /** The stall warning's text, once requests waited `waitedMillis` with no answer. */
  readonly stallMessage: (waitedMillis: number) => { readonly message: string; readonly destinations: string }
  /** Owner: items re-sent (after a retry wait, or at once for a `resend` verdict). Absent: `judge` asks for neither. */
  readonly resend?: ((items: ReadonlyArray<M["Item"]>) => Effect.Effect<void, M["Error"], M["Context"]>) | undefined
  /** Owner: items left the writer (written, routed or resolved): per-destination bookkeeping. */
  readonly onResolved?: ((items: ReadonlyArray<M["Item"]>) => Effect.Effect<void>) | undefined
  /** Owner: `key` was repaired: the requests the method held for it go now. Absent: it holds none. */
  readonly settled?: ((key: string) => Effect.Effect<void, M["Error"]>) | undefined
  /** How a failed repair is run again after `recovery` waits (else the writer fails). Absent: never. */
  readonly repairRetry?: RepairRetry<CoreError<M>> | undefined
}

/**
 * A delivering method, built once per writer by `WriterOptions.backend` with the {@link Core} it
 * runs on: both seams, from one state.
 *
 * @internal
 */
export type Backend<M extends Method> = Admission<M> & Delivery<M>

/**
 * What every writer on the core is built from.
 *
 * - `handler`: the failure handler (opened now, closed with the scope, flushed once per barrier).
 * - `limits`: the writer-global in-flight bounds (units, bytes) admission waits on.
 * - `metrics`: what the core counts and gauges for this method.
 * - `checkpoint(position)` of the writer built is its `flush`: the exactly-once and file-loads
 *   writers wrap it with the checkpoint protocol (`checkpoint/protocol.ts`), which drains through it.
 *
 * @internal
 */
export interface CoreOptions<M extends Method> {
  /** Its errors (`HandlerError`) fail building the writer when `open` fails. */
  readonly handler: FailureHandler<M["Failure"], M["HandlerError"], M["Context"]>
  readonly limits: Limits
  readonly metrics: CoreMetrics
}

/**
 * How a delivering method builds its writer: `writer.make<M>(options)` (in `writer.ts`) returns a
 * `Writer` in the current scope. `retry` / `recovery` / `propagation` are the budgets, run through
 * `RetryPolicy.toSchedule`; `backend` builds both seams on the core (it may open resources in the scope).
 *
 * @internal
 */
export interface WriterOptions<M extends Method> extends CoreOptions<M> {
  readonly retry: RetryPolicy
  readonly recovery: RetryPolicy
  /** The `propagation` budget's policy; absent: `recovery`'s. */
  readonly propagation?: RetryPolicy | undefined
  readonly backend: (core: Core<M>) => Effect.Effect<Backend<M>, M["HandlerError"], M["Context"] | Scope.Scope>
}

/**
 * How a staging method builds its writer: `writer.makeStaging<M>(options)`. Admission only: the
 * admitted items are staged by the method (and given back with `AdmissionCore.resolved` when
 * they become durable, or at once), and leave the writer at the checkpoint, through its committer.
 * Its `Request` and `Outcome` are `never`.
 *
 * @internal
 */
export interface StagingOptions<M extends Method> extends CoreOptions<M> {
  readonly admission: (
    core: AdmissionCore<M>
  ) => Effect.Effect<Admission<M>, M["HandlerError"], M["Context"] | Scope.Scope>
}
