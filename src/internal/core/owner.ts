/**
 * The writer core's owner fiber: the only reader and writer of the core's state (outstanding units
 * and bytes, requests in flight, barriers, the failure latch) and of the method's (batches, staged
 * records, destinations), which the method's owner-side steps touch from this fiber only. It takes
 * one command at a time and runs the matching step of a seam (admission, or delivery when the
 * method has one), then settles the barriers that can be.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import { act, countUnsafe, gaugeUnsafe, startQueued } from "./actions.ts"
import type { Admission, Core, CoreError, Delivery, Method } from "./backend.ts"
import * as stall from "./stall.ts"
import type { Barrier, Command, OwnerContext, State } from "./state.ts"

/** The two seams of a built method; `delivery` is absent on a staging writer. @internal */
export interface Seams<M extends Method> {
  readonly admission: Admission<M>
  readonly delivery: Delivery<M> | undefined
}

/** The barriers whose items have all left: a prefix of the waiting ones (they come by generation). */
const readyBarriers = <E>(st: State<E>): number => {
  // the oldest generation with units outstanding (entries are kept oldest first)
  let oldest = Number.POSITIVE_INFINITY
  for (const generation of st.pending.keys()) {
    oldest = generation
    break
  }
  let ready = 0
  while (ready < st.barriers.length && (st.barriers[ready] as Barrier<E>).generation < oldest) ready++
  return ready
}

/**
 * Answers the barriers whose items have all left (written or routed): the handler's flush (once for
 * all of them), then idle destinations are forgotten. After a failure every barrier fails with it.
 */
const settleWaiting = Effect.fnUntraced(
  function*<M extends Method>(ctx: OwnerContext<M>, core: Core<M>, seams: Seams<M>) {
    const st = ctx.state
    const failure = st.failure
    if (failure !== undefined) {
      for (const b of st.barriers.splice(0, st.barriers.length)) yield* Deferred.failCause(b.done, failure)
      return
    }
    const ready = readyBarriers(st)
    if (ready === 0) return
    const exit = yield* Effect.exit(Effect.provideContext(ctx.router.flush, ctx.context))
    if (Exit.isFailure(exit)) {
      yield* core.failCause(exit.cause)
      for (const b of st.barriers.splice(0, st.barriers.length)) yield* Deferred.failCause(b.done, exit.cause)
      return
    }
    const settled = st.barriers.splice(0, ready)
    st.flushedUpTo = (settled[settled.length - 1] as Barrier<CoreError<M>>).taken
    const evictIdle = seams.admission.evictIdle
    if (evictIdle !== undefined) yield* evictIdle(ctx.clock.currentTimeMillisUnsafe())
    for (const b of settled) yield* Deferred.succeed(b.done, undefined)
  }
)

/** {@link settleWaiting} when a barrier waits; most steps have none, and cost nothing here. */
const settleBarriers = <M extends Method>(
  ctx: OwnerContext<M>,
  core: Core<M>,
  seams: Seams<M>
): Effect.Effect<void, never, M["Context"]> => {
  const settle = settleWaiting(ctx, core, seams)
  return Effect.suspend(() => ctx.state.barriers.length === 0 ? Effect.void : settle)
}

/** An admitted command taken: its slice goes to the admission seam, its routed records to the handler. */
const onAdmit = <M extends Method>(
  ctx: OwnerContext<M>,
  core: Core<M>,
  seams: Seams<M>,
  command: Extract<Command<M>, { readonly _tag: "Admit" }>
): Effect.Effect<void, M["Error"], M["Context"]> => {
  const st = ctx.state
  st.taken++
  const skipped = command.skipped
  for (let i = 0; i < skipped.length; i++) ctx.counters.add(skipped[i] as string, "recordsSkipped", 1)
  if (skipped.length > 0) countUnsafe(ctx, ctx.metrics.recordsSkipped, skipped.length)
  const slice = command.slice
  let admitted: Effect.Effect<void, M["Error"], M["Context"]> = Effect.void
  if (slice !== undefined) {
    ctx.unstage(slice.bytes)
    st.outstanding += slice.units
    st.pending.set(st.generation, (st.pending.get(st.generation) ?? 0) + slice.units)
    gaugeUnsafe(ctx, ctx.metrics.inFlightUnits, slice.units)
    gaugeUnsafe(ctx, ctx.metrics.inFlightBytes, slice.bytes)
    admitted = seams.admission.admit(slice.payload, ctx.clock.currentTimeMillisUnsafe(), st.generation)
  }
  // the common case: a slice and nothing routed
  if (command.routed.length === 0 && command.routedPermit === undefined && command.routedDone === undefined) {
    return admitted
  }
  return Effect.andThen(admitted, afterAdmit(ctx, core, command))
}

/** What an admitted command carries besides its slice: routed records, their permit, the write's wait. */
const afterAdmit = Effect.fnUntraced(
  function*<M extends Method>(
    ctx: OwnerContext<M>,
    core: Core<M>,
    command: Extract<Command<M>, { readonly _tag: "Admit" }>
  ) {
    const st = ctx.state
    for (const failed of command.routed) yield* core.route(failed)
    if (command.routedPermit !== undefined) ctx.releaseUnsafe(command.routedPermit)
    const done = command.routedDone
    if (done !== undefined) {
      yield* st.failure === undefined ? Deferred.succeed(done, undefined) : Deferred.failCause(done, st.failure)
    }
  }
)

/**
 * A finished request: its verdict acted on. Once the last request in flight is booked while
 * admission waits, the open batches are sent: they hold the permits admission waits for.
 */
const onCompleted = Effect.fnUntraced(
  function*<M extends Method>(
    ctx: OwnerContext<M>,
    core: Core<M>,
    seams: Seams<M>,
    delivery: Delivery<M>,
    batch: M["Request"],
    outcome: M["Outcome"]
  ) {
    const st = ctx.state
    st.requests--
    gaugeUnsafe(ctx, ctx.metrics.inFlightRequests, -1)
    stall.progressed(st.stall, ctx.clock.currentTimeMillisUnsafe())
    const verdict = yield* delivery.judge(batch, outcome)
    // a request that will go again keeps its place in the request window meanwhile (see `Verdict.reserve`)
    if (verdict.reserve === true) ctx.reserved.add(batch)
    // requests waiting for the request window take the place just freed, in order
    yield* startQueued(ctx)
    yield* act(ctx, core, delivery, verdict)
    if (!st.admissionWaiting || st.requests > 0 || st.failure !== undefined) return
    st.admissionWaiting = false
    yield* cutAll(seams)
  }
)

/** How often the tick forgets idle destinations, besides every successful barrier. @internal */
export const evictionInterval = Duration.minutes(1)

/** Idle destinations are forgotten on the tick too, so a stream that never flushes does not keep them. */
const evictDue = (
  st: { lastEvictionAt: number },
  evictIdle: ((now: number) => Effect.Effect<void>) | undefined,
  now: number
): Effect.Effect<void> => {
  if (evictIdle === undefined || now - st.lastEvictionAt < Duration.toMillis(evictionInterval)) return Effect.void
  st.lastEvictionAt = now
  return evictIdle(now)
}

/** Cuts every open batch of the admission seam (none when it keeps none). */
const cutAll = <M extends Method>(
  seams: Seams<M>
): Effect.Effect<void, M["Error"], M["Context"]> => seams.admission.cutAll ?? Effect.void

/** The tick: the stall check (of a delivery), the admission's timed cuts, and idle eviction. */
const onTick = <M extends Method>(
  ctx: OwnerContext<M>,
  seams: Seams<M>,
  now: number
): Effect.Effect<void, M["Error"], M["Context"]> => {
  const st = ctx.state
  const { admission, delivery } = seams
  const stalled = delivery === undefined ? Effect.void : stall.check(st.stall, now, st.requests, delivery)
  const tick = admission.tick === undefined ? Effect.void : admission.tick(now)
  return Effect.andThen(Effect.andThen(stalled, tick), evictDue(st, admission.evictIdle, now))
}

/** A command of the delivery seam, run only when the method has one (a staging core never sends them). */
const delivered = <M extends Method>(
  delivery: Delivery<M> | undefined,
  step: (delivery: Delivery<M>) => Effect.Effect<void, M["Error"], M["Context"]> | undefined
): Effect.Effect<void, M["Error"], M["Context"]> => {
  const effect = delivery === undefined ? undefined : step(delivery)
  return effect === undefined ? Effect.die(new Error("a delivery command without a delivery seam")) : effect
}

const handle = <M extends Method>(
  ctx: OwnerContext<M>,
  core: Core<M>,
  seams: Seams<M>,
  command: Command<M>
): Effect.Effect<void, M["Error"], M["Context"]> => {
  const st = ctx.state
  if (command._tag === "Tick") st.tickPending = false
  if (st.failure !== undefined) {
    return command._tag === "Flush" ? Effect.asVoid(Deferred.failCause(command.done, st.failure)) : Effect.void
  }
  const { delivery } = seams
  switch (command._tag) {
    case "Admit":
      if (st.tickerAsleep) st.tickerWake.openUnsafe()
      return onAdmit(ctx, core, seams, command)
    case "SendAll":
      // While requests are in flight their answers free permits, and cutting now would only send
      // small batches; with none in flight, the open batches hold them.
      if (st.requests > 0) {
        st.admissionWaiting = true
        return Effect.void
      }
      return cutAll(seams)
    case "Tick":
      return onTick(ctx, seams, ctx.clock.currentTimeMillisUnsafe())
    case "Completed":
      return delivered(delivery, (d) => onCompleted(ctx, core, seams, d, command.batch, command.outcome))
    case "CallFailed":
      return core.failCause(command.cause)
    case "Retry":
      return delivered(delivery, (d) => d.resend?.(command.items))
    case "Step":
      return command.step
    case "Flush":
      // it covers what was admitted before it: later admissions are the next generation's
      return Effect.andThen(
        cutAll(seams),
        Effect.sync(() => {
          st.barriers.push({ done: command.done, generation: st.generation, taken: st.taken })
          st.generation++
        })
      )
  }
}

/**
 * The owner loop. Runs until interrupted; a fatal error or defect of a step (settling the barriers
 * included) is latched (published through `failed`) and the loop keeps failing barriers. However
 * the loop itself ends, its cause is latched too, so no write or flush waits for a stopped owner.
 *
 * @internal
 */
export const run = <M extends Method>(
  ctx: OwnerContext<M>,
  core: Core<M>,
  seams: Seams<M>
): Effect.Effect<never, never, M["Context"]> => {
  const settle = settleBarriers(ctx, core, seams)
  const step = (command: Command<M>) =>
    handle(ctx, core, seams, command).pipe(
      Effect.catchCause((cause) => core.failCause(cause)),
      Effect.andThen(settle),
      // the latch is set by now: settling again only fails the barriers left waiting
      Effect.catchCause((cause) => Effect.andThen(core.failCause(cause), settle))
    )
  // answers that found the queue full first: they are only there while it holds commands, so the
  // owner never waits on an empty queue with one aside
  const next = Effect.suspend(() => {
    const overflowed = ctx.overflow.shift()
    return overflowed === undefined ? Queue.take(ctx.commands) : Effect.succeed(overflowed)
  })
  // no yield after each command: the run loop's operation budget keeps the owner fair, and a yield a
  // command cost a scheduler round (three a Bigtable call, a fiber run each)
  return Effect.forever(Effect.flatMap(next, step), { disableYield: true }).pipe(
    Effect.onExit((exit) => (Exit.isFailure(exit) ? core.failCause(exit.cause) : Effect.void))
  )
}
