/**
 * The writer core's actions, run on the owner fiber: the {@link Core} a backend's steps call
 * (send, retry, route, fail, gauges), the bookkeeping of items leaving the writer (counted, given
 * back), and acting on a backend's verdict.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type { Accounted, Budget, Core, CoreError, Delivery, Method, VerdictOf } from "./backend.ts"
import { delayAfter } from "./budget.ts"
import type { Slot } from "./noFiberCalls.ts"
import * as repairEngine from "./repairs.ts"
import * as retryWarning from "./retryWarning.ts"
import * as stall from "./stall.ts"
import { type Command, Completed, type OwnerContext, type State } from "./state.ts"

export const offerTo = <C>(queue: Queue.Queue<C>, command: C): Effect.Effect<void> =>
  Effect.suspend(() => (Queue.offerUnsafe(queue, command) ? Effect.void : Effect.asVoid(Queue.offer(queue, command))))

/**
 * Moves a gauge by `delta` and remembers it, to take it back at close; in the owner's step, on the
 * writer's context (the context its metrics are registered in). @internal
 */
export const gaugeUnsafe = <M extends Method>(
  ctx: OwnerContext<M>,
  metric: Metric.Gauge<number> | undefined,
  delta: number
): void => {
  if (metric === undefined || delta === 0) return
  const st = ctx.state
  st.gauges.set(metric, (st.gauges.get(metric) ?? 0) + delta)
  metric.modifyUnsafe(delta, ctx.context)
}

/** Adds `amount` to a counter, on the writer's context. @internal */
export const countUnsafe = <M extends Method>(
  ctx: OwnerContext<M>,
  metric: Metric.Counter<number> | undefined,
  amount: number
): void => {
  if (metric !== undefined) metric.updateUnsafe(amount, ctx.context)
}

/** Takes back every gauge move of this writer (at close). @internal */
export const releaseGauges = <E>(st: State<E>): Effect.Effect<void> =>
  Effect.forEach(st.gauges, ([metric, total]) => Metric.modify(metric, -total), { discard: true }).pipe(
    Effect.tap(() => Effect.sync(() => st.gauges.clear()))
  )

/**
 * A call started on no fiber answered: its `Completed` goes to the owner's queue, or past it when the
 * queue is full (a callback cannot wait for room).
 */
const completeUnsafe = <M extends Method>(ctx: OwnerContext<M>, command: Command<M>): void => {
  if (!Queue.offerUnsafe(ctx.commands, command)) ctx.overflow.push(command)
}

/**
 * Starts a request's call at once on no fiber, when the method can (`Delivery.start`): true when it
 * started. Its cancel is kept until it answers, for the writer's close.
 */
const startNow = <M extends Method>(
  ctx: OwnerContext<M>,
  start: NonNullable<Delivery<M>["start"]>,
  batch: M["Request"]
): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    let slot: Slot | undefined
    let answered = false
    const deliver = (outcome: M["Outcome"]): void => {
      if (answered) return
      answered = true
      if (slot !== undefined) ctx.calls.remove(slot)
      completeUnsafe(ctx, new Completed<M>(batch, outcome))
    }
    return Effect.map(start(batch, deliver), (started) => {
      if (started === undefined) return false
      if (!answered) slot = ctx.calls.add(started)
      return true
    })
  })

/**
 * Starts a request's call: at once on no fiber when the method can (`Delivery.start`), else on a
 * fiber of its own. Its outcome comes back as `Completed`, a defect of the fiber as `CallFailed` (the
 * fiber set keeps no one waiting for it: unreported, `flush` would wait forever).
 */
export const startCall = Effect.fnUntraced(function*<M extends Method>(ctx: OwnerContext<M>, batch: M["Request"]) {
  const st = ctx.state
  // the first call in flight starts the wait a stall is measured from
  if (st.requests === 0) stall.progressed(st.stall, ctx.clock.currentTimeMillisUnsafe())
  st.requests++
  gaugeUnsafe(ctx, ctx.metrics.inFlightRequests, 1)
  const start = ctx.delivery?.start
  if (start !== undefined && (yield* startNow(ctx, start, batch))) return
  yield* FiberSet.run(
    ctx.fibers,
    Effect.flatMap(Effect.exit(ctx.delivery === undefined ? Effect.never : ctx.delivery.call(batch)), (exit) =>
      offerTo(
        ctx.commands,
        Exit.isSuccess(exit)
          ? new Completed<M>(batch, exit.value)
          : { _tag: "CallFailed", cause: exit.cause }
      ))
  )
})

/** The method's hooks around a repair, read when they run (the method is built after the core). */
const repairHooks = <M extends Method>(
  ctx: OwnerContext<M>
): Pick<repairEngine.Deps<M["Item"], CoreError<M>>, "settled" | "repairRetry"> => ({
  settled: (key) => ctx.delivery?.settled === undefined ? Effect.void : ctx.delivery.settled(key),
  repairRetry: () => ctx.delivery?.repairRetry
})

/** Whether the request window has a place: requests in flight and places kept by requests that go again. */
const hasRoom = <M extends Method>(
  ctx: OwnerContext<M>
): boolean => ctx.state.requests + ctx.reserved.size < ctx.maxRequests

/** Starts the requests waiting for the window, in order, while it has room. @internal */
export const startQueued = <M extends Method>(
  ctx: OwnerContext<M>
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const next = hasRoom(ctx) ? ctx.queued.shift() : undefined
    return next === undefined ? Effect.void : Effect.andThen(startCall(ctx, next), startQueued(ctx))
  })

/**
 * The core's waits: `after` runs a step once a budget's wait is over, and `retry` re-sends items
 * after one (or at once, on the owner). What failed is the schedule's input (the typed error a
 * caller's schedule is promised), and the writer's failure once the schedule stops.
 */
const waits = <M extends Method>(
  ctx: OwnerContext<M>,
  fork: (effect: Effect.Effect<unknown>) => Effect.Effect<void>,
  failCause: (cause: Cause.Cause<CoreError<M>>) => Effect.Effect<void>,
  warning: retryWarning.RetryWarningState
): Pick<Core<M>, "after" | "retry"> => {
  // a staging writer has no schedules, and no `after`/`retry` in the core it is handed
  const delay = (budget: Budget, attempt: number, failure: CoreError<M>) =>
    ctx.schedules === undefined ? Effect.succeedNone : delayAfter(ctx.schedules[budget], attempt, failure)
  const after = (budget: Budget, attempt: number, command: Command<M>, exhausted: () => CoreError<M>) =>
    Effect.suspend(() => {
      const failure = exhausted()
      return Effect.flatMap(delay(budget, attempt, failure), (wait) =>
        Option.isNone(wait)
          ? failCause(Cause.fail(failure))
          : Effect.andThen(
            retryWarning.waiting(warning, budget, wait.value, failure),
            fork(Effect.andThen(Effect.sleep(wait.value), offerTo(ctx.commands, command)))
          ))
    })
  // At once, the items go again on the owner itself: it alone takes from its bounded queue, so an
  // offer of its own to a full queue would wait forever (a repair re-sends thousands at once).
  const resendNow = (items: ReadonlyArray<M["Item"]>) =>
    Effect.suspend(() => {
      const resend = ctx.delivery?.resend
      if (resend === undefined) return Effect.die(new Error("a retry of a delivery that does not re-send"))
      return resend(items).pipe(Effect.provideContext(ctx.context), Effect.catchCause(failCause))
    })
  return {
    after: (budget, attempt, step, exhausted) => after(budget, attempt, { _tag: "Step", step }, exhausted),
    retry: (r) =>
      r.attempt === 0
        ? resendNow(r.items)
        : after(r.budget, r.attempt, { _tag: "Retry", items: r.items }, r.exhausted)
  }
}

/** Builds the {@link Core} the backend's steps use. @internal */
export const makeCore = <M extends Method>(
  ctx: OwnerContext<M>
): Core<M> => {
  const st = ctx.state
  const fork = (effect: Effect.Effect<unknown>): Effect.Effect<void> => Effect.asVoid(FiberSet.run(ctx.fibers, effect))
  const failCause = (cause: Cause.Cause<CoreError<M>>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (st.failure !== undefined) return Effect.void
      st.failure = cause
      return Effect.andThen(Deferred.failCause(ctx.failed, cause), ctx.wakeAdmission)
    })
  const fail = (error: CoreError<M>) => failCause(Cause.fail(error))
  const offer = (step: Effect.Effect<void, CoreError<M>>) => offerTo(ctx.commands, { _tag: "Step", step })
  const warning = retryWarning.makeState()
  const { after, retry } = waits(ctx, fork, failCause, warning)
  const repairs = repairEngine.make<M["Item"], CoreError<M>>({
    fork,
    offer,
    after,
    retry,
    failCause,
    ...repairHooks(ctx)
  })
  ctx.repairs = repairs
  return {
    repairs,
    send: (batch) => {
      // a request that kept its place goes at once; the others in order, within the window
      if (ctx.reserved.delete(batch) || (ctx.queued.length === 0 && hasRoom(ctx))) return startCall(ctx, batch)
      ctx.queued.push(batch)
      return Effect.void
    },
    offer,
    fork,
    after,
    retry,
    resolved: (items) => {
      retryWarning.recovered(warning)
      return resolved(ctx, items)
    },
    route: (failure) => route(ctx, failure, failCause),
    fail,
    failCause,
    failed: () => st.failure !== undefined,
    failure: Deferred.await(ctx.failed),
    gauge: (metric, delta) => Effect.sync(() => gaugeUnsafe(ctx, metric, delta)),
    outstanding: () => st.outstanding,
    requestsInFlight: () => st.requests,
    counters: ctx.counters
  }
}

/** Units leave their generation's count (the entry goes with its last unit). */
const leave = (pending: Map<number, number>, generation: number, units: number): void => {
  const left = (pending.get(generation) ?? 0) - units
  if (left > 0) pending.set(generation, left)
  else pending.delete(generation)
}

/**
 * What `items` account for, summed, and taken from their generations' counts (one pass, no
 * allocation per item: this runs per answered batch, whose items usually share one generation).
 */
const totals = (items: ReadonlyArray<Accounted>, pending: Map<number, number>) => {
  const sum = { units: 0, bytes: 0, permitBytes: 0 }
  let generation = -1
  let run = 0
  for (const item of items) {
    sum.units += item.units
    sum.bytes += item.bytes
    sum.permitBytes += item.permitBytes
    if (item.generation !== generation) {
      if (run > 0) leave(pending, generation, run)
      generation = item.generation
      run = 0
    }
    run += item.units
  }
  if (run > 0) leave(pending, generation, run)
  return sum
}

/** Items that leave the writer: outstanding counts down, permits and gauges back. One Effect per group. */
const resolved = <M extends Method>(
  ctx: OwnerContext<M>,
  items: ReadonlyArray<M["Item"]>
): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (items.length === 0) return Effect.void
    const st = ctx.state
    const { bytes, permitBytes, units } = totals(items, st.pending)
    st.outstanding -= units
    ctx.releaseUnsafe({ units, bytes: permitBytes })
    gaugeUnsafe(ctx, ctx.metrics.inFlightUnits, -units)
    gaugeUnsafe(ctx, ctx.metrics.inFlightBytes, -bytes)
    return ctx.delivery?.onResolved === undefined ? Effect.void : ctx.delivery.onResolved(items)
  })

/** Adds `amount` to a per-destination counter's series of `key`. */
const countPerDestination = <M extends Method>(
  ctx: OwnerContext<M>,
  metric: Metric.Counter<number> | undefined,
  key: string,
  amount: number
): void => {
  if (metric !== undefined) countUnsafe(ctx, Metric.withAttributes(metric, { destination: key }), amount)
}

/** Written items: counted per run of one destination, then given back. */
const written = <M extends Method>(ctx: OwnerContext<M>, items: ReadonlyArray<M["Item"]>): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (items.length === 0) return Effect.void
    const m = ctx.metrics
    let units = 0
    let bytes = 0
    let runUnits = 0
    let runBytes = 0
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as M["Item"]
      runUnits += item.units
      runBytes += item.bytes
      const next = items[i + 1]
      if (next === undefined || next.key !== item.key) {
        ctx.counters.add(item.key, "recordsWritten", runUnits)
        ctx.counters.add(item.key, "bytesWritten", runBytes)
        if (m.perDestination) countPerDestination(ctx, m.destinationRecordsSend, item.key, runUnits)
        units += runUnits
        bytes += runBytes
        runUnits = 0
        runBytes = 0
      }
    }
    countUnsafe(ctx, m.recordsSend, units)
    countUnsafe(ctx, m.bytesSend, bytes)
    return resolved(ctx, items)
  })

/** Hands one record to the failure handler; the handler's failure is the writer's. */
const route = Effect.fnUntraced(
  function*<M extends Method>(
    ctx: OwnerContext<M>,
    failure: M["Failure"],
    failCause: (cause: Cause.Cause<CoreError<M>>) => Effect.Effect<void>
  ) {
    if (ctx.state.failure !== undefined) return
    const exit = yield* Effect.exit(Effect.provideContext(ctx.router.route(failure), ctx.context))
    if (Exit.isFailure(exit)) return yield* failCause(exit.cause)
    const m = ctx.metrics
    countUnsafe(ctx, m.recordsSendErrors, 1)
    if (m.perDestination) countPerDestination(ctx, m.destinationSendErrors, failure.destination, 1)
  }
)

/** A follow-up a verdict asked for; a delivery without it gave a verdict its `judge` documents it never gives. */
const followUp = <X, E, R>(
  step: ((items: ReadonlyArray<X>) => Effect.Effect<void, E, R>) | undefined,
  items: ReadonlyArray<X>
): Effect.Effect<void, E, R> =>
  step === undefined
    ? Effect.die(new Error("a verdict asked for a follow-up its delivery does not supply"))
    : step(items)

/** Acts on a verdict, in the order its documentation gives. @internal */
export const act = Effect.fnUntraced(
  function*<M extends Method>(ctx: OwnerContext<M>, core: Core<M>, delivery: Delivery<M>, verdict: VerdictOf<M>) {
    const st = ctx.state
    for (const r of verdict.routed) {
      if (st.failure !== undefined) return
      yield* resolved(ctx, [r.item])
      yield* core.route(r.failure)
    }
    if (verdict.resend.length > 0 && st.failure === undefined) yield* followUp(delivery.resend, verdict.resend)
    if (ctx.repairs !== undefined) {
      for (const trouble of verdict.repair) {
        if (st.failure !== undefined) return
        yield* ctx.repairs.meet(trouble)
      }
    }
    if (verdict.terminal !== undefined) return yield* core.fail(verdict.terminal)
    if (st.failure !== undefined) return
    yield* written(ctx, verdict.written)
    const retry = verdict.retry
    if (retry !== undefined && retry.items.length > 0) {
      for (const item of retry.items) ctx.counters.add(item.key, "retries", 1)
      yield* core.retry(retry)
    }
  }
)
