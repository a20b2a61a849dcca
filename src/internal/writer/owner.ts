/**
 * The writer core's owner fiber: the only reader and writer of the core's state (outstanding units
 * and bytes, requests in flight, barriers, the failure latch) and of the backend's (batches,
 * destinations), which the backend's owner-side steps touch from this fiber only. It takes one
 * command at a time and runs the matching step, then settles the barriers that can be.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Schedule from "effect/Schedule"
import type { FailedElement } from "../../Sink/FailedElement.ts"
import type { FailureRouter } from "../failureRouting.ts"
import type { Permit } from "../flowControl.ts"
import type { SummaryCounters } from "../summaryCounters.ts"
import type { Accounted, Backend, Budget, Core, CoreMetrics, Slice, Verdict } from "./backend.ts"
import { delayAfter } from "./budget.ts"
import * as stall from "./stall.ts"

/** The commands of the owner. @internal */
export type Command<S, I, B, O, Ev, F, E> =
  | {
    readonly _tag: "Admit"
    readonly slice: Slice<S> | undefined
    readonly routed: ReadonlyArray<F>
    readonly skipped: ReadonlyArray<string>
  }
  | { readonly _tag: "SendAll" }
  | { readonly _tag: "Tick" }
  | { readonly _tag: "Completed"; readonly batch: B; readonly outcome: O }
  | { readonly _tag: "Retry"; readonly items: ReadonlyArray<I> }
  | { readonly _tag: "Event"; readonly event: Ev }
  | { readonly _tag: "Flush"; readonly done: Deferred.Deferred<void, E> }

/** The core's mutable state; read and written on the owner fiber (the finalizers read it after it stopped). @internal */
export interface State<E> {
  outstanding: number
  outstandingBytes: number
  requests: number
  /** Admission is waiting for permits held by open batches: cut them once no request is in flight. */
  admissionWaiting: boolean
  /** `Admit` commands offered by callers (counted before they reach the owner). */
  offered: number
  /** `Admit` commands the owner has taken. */
  taken: number
  /** `taken` when the last barrier succeeded: closing after success flushes when `offered` is past it. */
  flushedUpTo: number
  readonly barriers: Array<Deferred.Deferred<void, E>>
  failure: Cause.Cause<E> | undefined
  /** Gauge moves of this writer, taken back when it closes. */
  readonly gauges: Map<Metric.Gauge<number>, number>
  readonly stall: stall.StallState
}

/** Whether anything was offered for admission since the last successful barrier. @internal */
export const unflushed = <E>(st: State<E>): boolean => st.offered > st.flushedUpTo

/** @internal */
export const makeState = <E>(): State<E> => ({
  outstanding: 0,
  outstandingBytes: 0,
  requests: 0,
  admissionWaiting: false,
  offered: 0,
  taken: 0,
  flushedUpTo: 0,
  barriers: [],
  failure: undefined,
  gauges: new Map(),
  stall: stall.makeState()
})

/** What the owner is built from (by `writer.make`). @internal */
export interface OwnerContext<S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R> {
  readonly state: State<E>
  readonly commands: Queue.Queue<Command<S, I, B, O, Ev, F, E>>
  readonly fibers: FiberSet.FiberSet<unknown, unknown>
  readonly failed: Deferred.Deferred<never, E>
  readonly router: FailureRouter<F, E, R>
  readonly counters: SummaryCounters
  readonly metrics: CoreMetrics
  readonly release: (permit: Permit) => Effect.Effect<void>
  readonly schedules: Readonly<Record<Budget, Schedule.Schedule<Duration.Duration, unknown>>>
  /** The context of the handler (and of the backend's owner-side steps). */
  readonly context: Context.Context<R>
  /** Set once the backend is built (the backend's factory receives the core first). */
  backend: Backend<never, S, I, B, O, Ev, F, E, R> | undefined
  /** At most this many requests in flight (`Infinity`: no bound); the others wait in `queued`, in order. */
  readonly maxRequests: number
  readonly queued: Array<B>
  /** The backend's `call`, run on a fiber of its own. */
  readonly call: (batch: B) => Effect.Effect<O>
}

const offerTo = <C>(queue: Queue.Queue<C>, command: C): Effect.Effect<void> =>
  Effect.suspend(() => (Queue.offerUnsafe(queue, command) ? Effect.void : Effect.asVoid(Queue.offer(queue, command))))

/** Moves a gauge by `delta` and remembers it, to take it back at close. @internal */
export const gauge = <E>(
  st: State<E>,
  metric: Metric.Gauge<number> | undefined,
  delta: number
): Effect.Effect<void> => {
  if (metric === undefined || delta === 0) return Effect.void
  st.gauges.set(metric, (st.gauges.get(metric) ?? 0) + delta)
  return Metric.modify(metric, delta)
}

/** Takes back every gauge move of this writer (at close). @internal */
export const releaseGauges = <E>(st: State<E>): Effect.Effect<void> =>
  Effect.forEach(st.gauges, ([metric, total]) => Metric.modify(metric, -total), { discard: true }).pipe(
    Effect.tap(() => Effect.sync(() => st.gauges.clear()))
  )

/** Starts a request's call on a fiber of its own; its outcome comes back as `Completed`. */
const startCall = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  batch: B
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const st = ctx.state
    // the first call in flight starts the wait a stall is measured from
    if (st.requests === 0) stall.progressed(st.stall, yield* Clock.currentTimeMillis)
    st.requests++
    yield* gauge(st, ctx.metrics.inFlightRequests, 1)
    yield* FiberSet.run(
      ctx.fibers,
      Effect.flatMap(ctx.call(batch), (outcome) => offerTo(ctx.commands, { _tag: "Completed", batch, outcome }))
    )
  })

/** Builds the {@link Core} the backend's steps use. @internal */
export const makeCore = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>
): Core<I, B, Ev, F, E> => {
  const st = ctx.state
  const fork = (effect: Effect.Effect<unknown>): Effect.Effect<void> => Effect.asVoid(FiberSet.run(ctx.fibers, effect))
  const failCause = (cause: Cause.Cause<E>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (st.failure !== undefined) return Effect.void
      st.failure = cause
      return Effect.asVoid(Deferred.failCause(ctx.failed, cause))
    })
  const fail = (error: E) => failCause(Cause.fail(error))
  const offer = (event: Ev) => offerTo(ctx.commands, { _tag: "Event", event })
  const delay = (budget: Budget, attempt: number) => delayAfter(ctx.schedules[budget], attempt)
  const after = (budget: Budget, attempt: number, command: Command<S, I, B, O, Ev, F, E>, exhausted: () => E) =>
    Effect.flatMap(delay(budget, attempt), (wait) =>
      Option.isNone(wait)
        ? fail(exhausted())
        : fork(Effect.andThen(Effect.sleep(wait.value), offerTo(ctx.commands, command))))
  return {
    send: (batch) => {
      if (st.requests < ctx.maxRequests) return startCall(ctx, batch)
      ctx.queued.push(batch)
      return Effect.void
    },
    offer,
    fork,
    delay,
    after: (budget, attempt, event, exhausted) => after(budget, attempt, { _tag: "Event", event }, exhausted),
    retry: (retry) => after(retry.budget, retry.attempt, { _tag: "Retry", items: retry.items }, retry.exhausted),
    resolved: (items) => resolved(ctx, items),
    route: (failure) => route(ctx, failure, failCause),
    fail,
    failCause,
    failed: () => st.failure !== undefined,
    gauge: (metric, delta) => gauge(st, metric, delta),
    outstanding: () => st.outstanding,
    requestsInFlight: () => st.requests,
    counters: ctx.counters
  }
}

/** Items that leave the writer: outstanding counts down, permits and gauges back. One Effect per group. */
const resolved = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  items: ReadonlyArray<I>
): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (items.length === 0) return Effect.void
    const st = ctx.state
    let units = 0
    let bytes = 0
    let permitBytes = 0
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as I
      units += item.units
      bytes += item.bytes
      permitBytes += item.permitBytes
    }
    st.outstanding -= units
    st.outstandingBytes -= bytes
    return Effect.andThen(
      ctx.release({ units, bytes: permitBytes }),
      Effect.andThen(
        Effect.andThen(gauge(st, ctx.metrics.inFlightUnits, -units), gauge(st, ctx.metrics.inFlightBytes, -bytes)),
        ctx.backend === undefined ? Effect.void : ctx.backend.onResolved(items)
      )
    )
  })

const countPerDestination = (
  metric: Metric.Counter<number> | undefined,
  key: string,
  amount: number
): Effect.Effect<void> =>
  metric === undefined ? Effect.void : Metric.update(Metric.withAttributes(metric, { destination: key }), amount)

/** Written items: counted per run of one destination, then given back. */
const written = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  items: ReadonlyArray<I>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (items.length === 0) return
    const m = ctx.metrics
    let units = 0
    let bytes = 0
    let runUnits = 0
    let runBytes = 0
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as I
      runUnits += item.units
      runBytes += item.bytes
      const next = items[i + 1]
      if (next === undefined || next.key !== item.key) {
        ctx.counters.add(item.key, "recordsWritten", runUnits)
        ctx.counters.add(item.key, "bytesWritten", runBytes)
        if (m.perDestination) yield* countPerDestination(m.destinationRecordsSend, item.key, runUnits)
        units += runUnits
        bytes += runBytes
        runUnits = 0
        runBytes = 0
      }
    }
    yield* resolved(ctx, items)
    if (m.recordsSend !== undefined) yield* Metric.update(m.recordsSend, units)
    if (m.bytesSend !== undefined) yield* Metric.update(m.bytesSend, bytes)
  })

/** Hands one record to the failure handler; the handler's failure is the writer's. */
const route = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  failure: F,
  failCause: (cause: Cause.Cause<E>) => Effect.Effect<void>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (ctx.state.failure !== undefined) return
    const exit = yield* Effect.exit(Effect.provideContext(ctx.router.route(failure), ctx.context))
    if (Exit.isFailure(exit)) return yield* failCause(exit.cause)
    const m = ctx.metrics
    if (m.recordsSendErrors !== undefined) yield* Metric.update(m.recordsSendErrors, 1)
    if (m.perDestination) yield* countPerDestination(m.destinationSendErrors, failure.destination, 1)
  })

/** Acts on a verdict, in the order its documentation gives. @internal */
export const act = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  core: Core<I, B, Ev, F, E>,
  backend: Backend<never, S, I, B, O, Ev, F, E, R>,
  verdict: Verdict<I, F, E>
): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    const st = ctx.state
    for (const r of verdict.routed) {
      if (st.failure !== undefined) return
      yield* resolved(ctx, [r.item])
      yield* core.route(r.failure)
    }
    if (verdict.resend.length > 0 && st.failure === undefined) yield* backend.resend(verdict.resend)
    if (verdict.repair.length > 0 && st.failure === undefined) yield* backend.repair(verdict.repair)
    if (verdict.terminal !== undefined) return yield* core.fail(verdict.terminal)
    if (st.failure !== undefined) return
    yield* written(ctx, verdict.written)
    const retry = verdict.retry
    if (retry !== undefined && retry.items.length > 0) {
      for (const item of retry.items) ctx.counters.add(item.key, "retries", 1)
      yield* core.retry(retry)
    }
  })

/**
 * Answers the barriers once nothing is outstanding: the handler's flush (once for all of them),
 * then idle destinations are forgotten. After a failure every barrier fails with it.
 */
const settleBarriers = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  core: Core<I, B, Ev, F, E>,
  backend: Backend<never, S, I, B, O, Ev, F, E, R>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const st = ctx.state
    if (st.barriers.length === 0) return
    const failure = st.failure
    if (failure !== undefined) {
      for (const done of st.barriers.splice(0, st.barriers.length)) yield* Deferred.failCause(done, failure)
      return
    }
    if (st.outstanding > 0 || backend.busy()) return
    const exit = yield* Effect.exit(Effect.provideContext(ctx.router.flush, ctx.context))
    if (Exit.isFailure(exit)) {
      yield* core.failCause(exit.cause)
      for (const done of st.barriers.splice(0, st.barriers.length)) yield* Deferred.failCause(done, exit.cause)
      return
    }
    st.flushedUpTo = st.taken
    yield* backend.evictIdle(yield* Clock.currentTimeMillis)
    for (const done of st.barriers.splice(0, st.barriers.length)) yield* Deferred.succeed(done, undefined)
  })

const onAdmit = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  core: Core<I, B, Ev, F, E>,
  backend: Backend<never, S, I, B, O, Ev, F, E, R>,
  command: Extract<Command<S, I, B, O, Ev, F, E>, { readonly _tag: "Admit" }>
): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    const st = ctx.state
    st.taken++
    const skipped = command.skipped
    for (let i = 0; i < skipped.length; i++) ctx.counters.add(skipped[i] as string, "recordsSkipped", 1)
    if (skipped.length > 0 && ctx.metrics.recordsSkipped !== undefined) {
      yield* Metric.update(ctx.metrics.recordsSkipped, skipped.length)
    }
    const slice = command.slice
    if (slice !== undefined) {
      st.outstanding += slice.units
      st.outstandingBytes += slice.bytes
      yield* gauge(st, ctx.metrics.inFlightUnits, slice.units)
      yield* gauge(st, ctx.metrics.inFlightBytes, slice.bytes)
      yield* backend.admit(slice.payload, yield* Clock.currentTimeMillis)
    }
    for (const failed of command.routed) yield* core.route(failed)
  })

/**
 * A finished request: its verdict acted on. Once the last request in flight is booked while
 * admission waits, the open batches are sent: they hold the permits admission waits for.
 */
const onCompleted = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  core: Core<I, B, Ev, F, E>,
  backend: Backend<never, S, I, B, O, Ev, F, E, R>,
  batch: B,
  outcome: O
): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    const st = ctx.state
    st.requests--
    yield* gauge(st, ctx.metrics.inFlightRequests, -1)
    stall.progressed(st.stall, yield* Clock.currentTimeMillis)
    // a request waiting for the request window takes the place just freed
    const next = ctx.queued.shift()
    if (next !== undefined) yield* startCall(ctx, next)
    yield* act(ctx, core, backend, yield* backend.judge(batch, outcome))
    if (!st.admissionWaiting || st.requests > 0 || st.failure !== undefined) return
    st.admissionWaiting = false
    yield* backend.cutAll
  })

const handle = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  core: Core<I, B, Ev, F, E>,
  backend: Backend<never, S, I, B, O, Ev, F, E, R>,
  command: Command<S, I, B, O, Ev, F, E>
): Effect.Effect<void, E, R> => {
  const st = ctx.state
  if (st.failure !== undefined) {
    return command._tag === "Flush" ? Effect.asVoid(Deferred.failCause(command.done, st.failure)) : Effect.void
  }
  switch (command._tag) {
    case "Admit":
      return onAdmit(ctx, core, backend, command)
    case "SendAll":
      // While requests are in flight their answers free permits, and cutting now would only send
      // small batches; with none in flight, the open batches hold them.
      if (st.requests > 0) {
        st.admissionWaiting = true
        return Effect.void
      }
      return backend.cutAll
    case "Tick":
      return Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => Effect.andThen(stall.check(st.stall, now, st.requests, backend), backend.tick(now))
      )
    case "Completed":
      return onCompleted(ctx, core, backend, command.batch, command.outcome)
    case "Retry":
      return backend.resend(command.items)
    case "Event":
      return backend.onEvent(command.event)
    case "Flush":
      return Effect.andThen(backend.cutAll, Effect.sync(() => void st.barriers.push(command.done)))
  }
}

/**
 * The owner loop. Runs until interrupted; a fatal error is latched (published through `failed`)
 * and the loop keeps failing barriers.
 *
 * @internal
 */
export const run = <S, I extends Accounted, B, O, Ev, F extends FailedElement, E, R>(
  ctx: OwnerContext<S, I, B, O, Ev, F, E, R>,
  core: Core<I, B, Ev, F, E>,
  backend: Backend<never, S, I, B, O, Ev, F, E, R>
): Effect.Effect<never, never, R> =>
  Effect.forever(
    Queue.take(ctx.commands).pipe(
      Effect.flatMap((command) =>
        handle(ctx, core, backend, command).pipe(Effect.catchCause((cause) => core.failCause(cause)))
      ),
      Effect.andThen(settleBarriers(ctx, core, backend))
    )
  )
