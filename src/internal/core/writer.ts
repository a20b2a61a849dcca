/**
 * The writer core's `make` and `makeStaging`: opens the failure handler, builds the method's seams
 * on the core (admission and delivery, or admission alone for a staging method), starts the owner
 * fiber and the ticker, and admits records under the writer-global in-flight bounds.
 *
 * **Details**
 *
 * `write` prepares a run of records on the caller's fiber (the admission's `prepare`: resolve,
 * serialize, measure), then takes an in-flight permit slice by slice and offers each slice to the
 * owner. When a slice has to wait, it first asks the owner to send every open batch (`SendAll`), so
 * the permits held by batched items come back; the wait is the backpressure. The fast path (permits
 * free, queue not full) is synchronous: the run's slices that have room take their permits and are
 * offered in one step of the caller's fiber, forking, racing and yielding nothing (ADR 0051). The
 * waits for permits and for a staging place race nothing either: the writer's failure opens those
 * bounds (`wakeAdmission`), and a woken write finds the failure. Only a full command queue is waited
 * for in a race with the failure (a dead owner takes nothing).
 *
 * `flush` is a barrier command; `checkpoint` is `flush` here (the exactly-once and file-loads
 * writers wrap this writer with the checkpoint protocol of `checkpoint/protocol.ts`). Closing the
 * scope after success runs a final barrier when anything was admitted since the last one; after
 * failure or interruption it only releases.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"
import * as Scheduler from "effect/Scheduler"
import type * as Scope from "effect/Scope"
import type { FailedElement } from "../../Sink/FailedElement.ts"
import { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { Writer } from "../../Sink/Writer.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import { emptyArray } from "../sitelessArrays.ts"
import * as actions from "./actions.ts"
import type {
  Admission,
  Core,
  CoreError,
  CoreOptions,
  Method,
  Prepared,
  Slice,
  StagingOptions,
  WriterOptions
} from "./backend.ts"
import * as failureRouting from "./failureRouting.ts"
import * as flowControl from "./flowControl.ts"
import { Permit } from "./flowControl.ts"
import { hotSpan } from "./hotSpan.ts"
import { NoFiberCalls } from "./noFiberCalls.ts"
import * as owner from "./owner.ts"
import * as progressLog from "./progressLog.ts"
import * as ownerState from "./state.ts"
import * as summaryCounters from "./summaryCounters.ts"

/** Commands the owner's queue holds before `write` waits to offer. @internal */
export const commandCapacity = 1024

/**
 * The scheduler of the owner fiber and the request fibers it forks: their tasks run as microtasks.
 * A completion's path (the call's fiber resumes, the owner books it, releases permits, admits, and
 * starts the next call) then runs within the I/O callback that delivered the answer, instead of one
 * event-loop turn per hop; profiles showed those turns costing as much as encoding. The owner never
 * runs unbounded: it handles a bounded queue and suspends when it is empty, and nothing can refill
 * it while its microtasks run. Timers and other fibers keep their turns.
 *
 * Only in place of Effect's default scheduler: a scheduler the caller provided (a deterministic
 * test scheduler, a runtime's own) runs the owner too ({@link ownerSchedulerFor}).
 *
 * @internal
 */
export const ownerScheduler: Scheduler.Scheduler = new Scheduler.MixedScheduler("sync")

/** The owner's scheduler under `current`: {@link ownerScheduler} for Effect's default one, else `current`. @internal */
export const ownerSchedulerFor = (current: Scheduler.Scheduler): Scheduler.Scheduler =>
  current instanceof Scheduler.MixedScheduler ? ownerScheduler : current

/**
 * Prepared slices that may wait in the command queue for the owner to take them. The in-flight
 * bounds count a slice from admission until its request is answered; without this second, small
 * bound the caller (which encodes) could run a whole in-flight budget of encoded buffers ahead of
 * the owner (which sends), and those buffers, not the requests on the wire, made the peak memory.
 * Enough slices for the owner never to wait on the caller: it takes them as fast as it sends. At most
 * {@link maxStagedBytes} of them are staged: large slices (a request's worth) stay as few as before.
 *
 * @internal
 */
export const maxStagedSlices = 8

/** The bytes of the slices staged at once (a slice larger counts as this much). @internal */
export const maxStagedBytes = 2 * 1024 * 1024

/**
 * A write waiting for a staging place resumes once the owner has taken the slices down to this many: a
 * caller that outruns the owner (slices of a few records) then waits once per several writes, and the
 * owner still has slices to take meanwhile.
 */
const stagedResumeAt = maxStagedSlices / 2

/** What a staged slice of `bytes` holds of the staging bound. */
const stagePermitOf = (bytes: number): Permit => new Permit(1, Math.min(bytes, maxStagedBytes))

/**
 * How often the owner ticks (batch delay, stall check). A `Duration`, not `"100 millis"`: `sleep`
 * parses a string on every call, and a simulated hour of a writer is 36,000 ticks. @internal
 */
export const tickInterval = Duration.millis(100)

/**
 * Builds a writer on the core in the current scope, with both seams of a delivering method.
 *
 * @internal
 */
export const make = <M extends Method, P = never>(
  options: WriterOptions<M>
): Effect.Effect<Writer<M["Record"], CoreError<M>, P>, M["HandlerError"], M["Context"] | Scope.Scope> =>
  build<M, P>(
    options,
    {
      retry: RetryPolicy.toSchedule(options.retry),
      recovery: RetryPolicy.toSchedule(options.recovery),
      propagation: RetryPolicy.toSchedule(options.propagation ?? options.recovery)
    },
    (core) => Effect.map(options.backend(core), (backend) => ({ admission: backend, delivery: backend }))
  )

/**
 * Builds a writer on the core's admission alone, for a method that stages its records and commits
 * them at checkpoints through a committer of its own: nothing is sent, retried or judged here.
 *
 * @internal
 */
export const makeStaging = <M extends Method, P = never>(
  options: StagingOptions<M>
): Effect.Effect<Writer<M["Record"], CoreError<M>, P>, M["HandlerError"], M["Context"] | Scope.Scope> =>
  build<M, P>(
    options,
    undefined,
    (core) => Effect.map(options.admission(core), (admission) => ({ admission, delivery: undefined }))
  )

/** The writer's calls on no fiber, cancelled when its scope closes (`noFiberCalls.ts`). */
const callsOnNoFiber = Effect.acquireRelease(
  Effect.sync(() => new NoFiberCalls()),
  (calls) => Effect.sync(() => calls.cancelAll())
)

const build = Effect.fnUntraced(
  function*<M extends Method, P>(
    options: CoreOptions<M>,
    schedules: ownerState.OwnerContext<M>["schedules"],
    seamsOf: (core: Core<M>) => Effect.Effect<owner.Seams<M>, M["HandlerError"], M["Context"] | Scope.Scope>
  ) {
    const context = yield* Effect.context<M["Context"]>()
    const counters = summaryCounters.make()
    // A failing `open` fails building the writer with the handler's error (nothing to close then).
    const router = yield* failureRouting.make<M["Failure"], M["HandlerError"], M["Context"]>(options.handler, counters)
    const flow = yield* flowControl.make(options.limits)
    const staged = flowControl.makeUnsafe({
      maxUnits: maxStagedSlices,
      maxBytes: maxStagedBytes,
      resumeAtUnits: stagedResumeAt
    })
    const failed = yield* Deferred.make<never, CoreError<M>>()
    const commands = yield* Queue.bounded<ownerState.Command<M>>(commandCapacity)
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const calls = yield* callsOnNoFiber
    const state = ownerState.makeState<CoreError<M>>()
    const ctx: ownerState.OwnerContext<M> = {
      state,
      commands,
      overflow: [],
      fibers,
      calls,
      failed,
      router,
      counters,
      metrics: options.metrics,
      releaseUnsafe: flow.releaseUnsafe,
      clock: yield* Clock.Clock,
      unstage: (bytes) => staged.releaseUnsafe(stagePermitOf(bytes)),
      wakeAdmission: Effect.andThen(flow.openAll, staged.openAll),
      schedules,
      context,
      admission: undefined,
      delivery: undefined,
      maxRequests: options.limits.maxRequests ?? Number.POSITIVE_INFINITY,
      queued: [],
      reserved: new Set(),
      repairs: undefined
    }
    const core = actions.makeCore(ctx)
    const seams = yield* seamsOf(core)
    ctx.admission = seams.admission
    ctx.delivery = seams.delivery
    // The gauges this writer moved go back to where it found them, however it ends.
    yield* Effect.addFinalizer(() => actions.releaseGauges(state))
    yield* startOwner(ctx, core, seams)
    yield* ticker(state, commands)
    const parts: Parts<M> = { commands, failed, flow, staged, counters, state }
    const writer = admission<M, P>(seams.admission, parts)
    yield* flushAtClose(state, writer)
    yield* progressLog.start(seams.admission.name, writer.summary, () => state.outstanding)
    return writer
  }
)

/** Forks the owner fiber in the scope, on the owner's scheduler, with the handler's context. */
const startOwner = Effect.fnUntraced(
  function*<M extends Method>(ctx: ownerState.OwnerContext<M>, core: Core<M>, seams: owner.Seams<M>) {
    yield* owner.run(ctx, core, seams).pipe(
      Effect.provideService(Scheduler.Scheduler, ownerSchedulerFor(yield* Scheduler.Scheduler)),
      Effect.provideContext(ctx.context),
      Effect.forkScoped
    )
  }
)

/**
 * Closing after success is the end of input: a barrier, unless nothing was admitted since the
 * last one (the sink's own final flush, or the caller's, already flushed the handler: a second
 * flush would only run it again). A finalizer has no error channel, so a failure of this flush
 * is a defect: call `flush` before closing to get it typed. A failed writer is only released.
 */
const flushAtClose = <E>(
  state: ownerState.State<E>,
  writer: { readonly flush: Effect.Effect<void, E> }
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.addFinalizer((exit) =>
    Exit.isSuccess(exit) && state.failure === undefined && ownerState.unflushed(state)
      ? Effect.orDie(writer.flush)
      : Effect.void
  )

/**
 * The owner's tick, on a fiber of the scope: one tick at most waits in the queue (while the owner is busy, ticks
 * would only fill it). With nothing outstanding there is nothing to time but idle eviction: the ticker sleeps
 * until the owner takes an admission or eviction is due, so an idle writer costs no wake-ups.
 */
const ticker = <M extends Method>(
  state: ownerState.State<CoreError<M>>,
  commands: Queue.Queue<ownerState.Command<M>>
): Effect.Effect<void, never, Scope.Scope> => {
  const tick = Effect.suspend(() => {
    if (state.tickPending) return Effect.void
    state.tickPending = true
    return Effect.asVoid(Queue.offer(commands, { _tag: "Tick" }))
  })
  const idle = Effect.suspend(() => {
    if (state.outstanding > 0 || state.requests > 0) return Effect.void
    state.tickerAsleep = true
    state.tickerWake.closeUnsafe()
    return Effect.raceFirst(Effect.sleep(owner.evictionInterval), state.tickerWake.await).pipe(
      Effect.ensuring(Effect.sync(() => void (state.tickerAsleep = false)))
    )
  })
  return Effect.sleep(tickInterval).pipe(
    Effect.andThen(tick),
    Effect.andThen(idle),
    Effect.forever,
    Effect.forkScoped,
    Effect.asVoid
  )
}

interface Parts<M extends Method> {
  readonly commands: Queue.Queue<ownerState.Command<M>>
  readonly failed: Deferred.Deferred<never, CoreError<M>>
  readonly flow: flowControl.FlowController
  /** Slices offered and not yet taken by the owner (`maxStagedSlices`, `maxStagedBytes`). */
  readonly staged: flowControl.FlowController
  readonly counters: summaryCounters.SummaryCounters
  readonly state: ownerState.State<CoreError<M>>
}

const orFailedWith =
  <E>(failed: Deferred.Deferred<never, E>) => <X>(effect: Effect.Effect<X, E>): Effect.Effect<X, E> =>
    Effect.raceFirst(effect, Deferred.await(failed))

/**
 * A wait for admission (permits, a staging place) that the writer's failure ends: the failure opens every
 * bound (`wakeAdmission`), so the wait returns and the failure is found here, without a race (two forks and
 * an interrupt per wait, a write of a small chunk's largest cost).
 */
const untilFailedWith = <E>(failed: Deferred.Deferred<never, E>) => <X>(wait: Effect.Effect<X>): Effect.Effect<X, E> =>
  Effect.flatMap(wait, (x) => Deferred.isDoneUnsafe(failed) ? Deferred.await(failed) : Effect.succeed(x))

/** The in-flight permit of routed records' payloads (at most the whole bound), or none when they hold no bytes. */
const chargeOf = (routed: ReadonlyArray<FailedElement>, maxBytes: number): Permit | undefined => {
  let bytes = 0
  for (let i = 0; i < routed.length; i++) bytes += routed[i]?.payload?.length ?? 0
  return bytes === 0 ? undefined : new Permit(0, Math.min(bytes, maxBytes))
}

/** One command a prepared run offers, with what it takes: an in-flight permit, and a staging place (a slice). */
class Offer<M extends Method> {
  readonly command: ownerState.Command<M>
  readonly permit: Permit | undefined
  /** What a slice holds of the staging bound; none for routed records alone. */
  readonly stage: Permit | undefined
  constructor(command: ownerState.Command<M>, permit: Permit | undefined, stage: Permit | undefined) {
    this.command = command
    this.permit = permit
    this.stage = stage
  }
}

/**
 * The commands of a prepared run: its slices in order, and its routed records with the last one, or,
 * when their payloads hold bytes (an oversize row is up to 10 MiB), on a command of their own charged
 * those bytes in the in-flight bound until the handler has them.
 */
const offersOf = <M extends Method>(
  prepared: Prepared<M["Slice"], M["Failure"]>,
  routedDone: Deferred.Deferred<void, CoreError<M>> | undefined,
  maxBytes: number
): Array<Offer<M>> => {
  const slices = prepared.slices
  const routedPermit = chargeOf(prepared.routed, maxBytes)
  const apart = routedPermit !== undefined || slices.length === 0
  // no allocation site to be pretenured, as the commands are classes (ADR 0056)
  const offers = emptyArray<Offer<M>>()
  for (let i = 0; i < slices.length; i++) {
    const slice = slices[i] as Slice<M["Slice"]>
    const last = i === slices.length - 1 && !apart
    const routed = last ? prepared.routed : []
    const skipped = i === slices.length - 1 ? prepared.skipped : []
    offers.push(
      new Offer(
        new ownerState.Admit(slice, routed, skipped, last ? routedDone : undefined, undefined),
        new Permit(slice.units, slice.permitBytes),
        stagePermitOf(slice.bytes)
      )
    )
  }
  if (apart && (prepared.routed.length > 0 || (slices.length === 0 && prepared.skipped.length > 0))) {
    const skipped = slices.length === 0 ? prepared.skipped : []
    offers.push(
      new Offer(
        new ownerState.Admit(undefined, prepared.routed, skipped, routedDone, routedPermit),
        routedPermit,
        undefined
      )
    )
  }
  return offers
}

/** What `Effect.uninterruptibleMask` hands its body. */
type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * Offers a command to the owner after taking its permits. Taken permits (in flight, staged) are
 * given back, and the offer uncounted, when a wait is interrupted. A slice takes a staging place
 * too; routed records only their in-flight bytes.
 */
const enqueuer = <M extends Method>(parts: Parts<M>) => {
  const { commands, failed, flow, staged, state } = parts
  const orFailed = orFailedWith(failed)
  const untilFailed = untilFailedWith(failed)
  // before a wait for permits: asks the owner to send its open batches; only a full queue is waited for (and
  // then also for the failure: a dead owner takes nothing)
  const sendAllCommand: ownerState.Command<M> = { _tag: "SendAll" }
  const sendAll = Effect.suspend(() =>
    Queue.offerUnsafe(commands, sendAllCommand)
      ? Effect.void
      : Effect.ignore(orFailed(Queue.offer(commands, sendAllCommand)))
  )
  // what an offer that did not happen had taken (a slice's staging place is taken after its permit)
  const giveBack = (permit: Permit | undefined, stage: Permit | undefined): void => {
    if (permit === undefined) return
    flow.releaseUnsafe(permit)
    if (stage !== undefined) staged.releaseUnsafe(stage)
  }
  const admit = Effect.fnUntraced(function*(restore: Restore, { command, permit, stage }: Offer<M>) {
    if (permit !== undefined) {
      if (!(yield* flow.tryAcquire(permit))) yield* restore(untilFailed(flow.acquire(permit, sendAll)))
      if (stage !== undefined && !(yield* staged.tryAcquire(stage))) {
        yield* restore(untilFailed(staged.acquire(stage))).pipe(Effect.onInterrupt(() => flow.release(permit)))
      }
    }
    state.offered++
    if (Queue.offerUnsafe(commands, command)) return
    yield* restore(orFailed(Queue.offer(commands, command))).pipe(
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          state.offered--
          giveBack(permit, stage)
        })
      )
    )
  })
  /**
   * The fast path, in the caller's step: takes the permits and offers when all have room now (nothing
   * waits, nothing forks); else takes nothing and says so.
   */
  const offerNowUnsafe = ({ command, permit, stage }: Offer<M>): boolean => {
    if (permit !== undefined) {
      if (!flow.tryAcquireUnsafe(permit)) return false
      if (stage !== undefined && !staged.tryAcquireUnsafe(stage)) {
        flow.releaseUnsafe(permit)
        return false
      }
    }
    state.offered++
    if (Queue.offerUnsafe(commands, command)) return true
    state.offered--
    giveBack(permit, stage)
    return false
  }
  return {
    offerNowUnsafe,
    offer: (offer: Offer<M>) => Effect.uninterruptibleMask((restore) => admit(restore, offer))
  }
}

/** The caller-side admission of one prepared run: each slice takes its permit, then is offered. */
const admitter = <M extends Method>(
  backend: Admission<M>,
  parts: Parts<M>
): (records: ReadonlyArray<M["Record"]>) => Effect.Effect<void, CoreError<M>> => {
  const { failed, flow } = parts
  const limits = { maxUnits: flow.maxUnits, maxBytes: flow.maxBytes }
  const orFailed = orFailedWith(failed)
  const enqueue = enqueuer(parts)

  // Offers `offers` from `from` on, in order: as many as have room in this step, then the first that
  // waits through the slow path, and the rest after it.
  const offerFrom = (offers: ReadonlyArray<Offer<M>>, from: number): Effect.Effect<void, CoreError<M>> =>
    Effect.suspend(() => {
      for (let i = from; i < offers.length; i++) {
        if (Deferred.isDoneUnsafe(failed)) return Deferred.await(failed)
        const offer = offers[i] as Offer<M>
        const p = offer.permit
        // a slice over a bound would wait forever: a backend bug, not backpressure
        if (p !== undefined && (p.units > flow.maxUnits || p.bytes > flow.maxBytes)) {
          return Effect.die(
            new Error(`${backend.name}: a slice of ${p.units} units, ${p.bytes} bytes exceeds the bounds`)
          )
        }
        if (!enqueue.offerNowUnsafe(offer)) {
          return i === offers.length - 1
            ? enqueue.offer(offer)
            : Effect.andThen(enqueue.offer(offer), offerFrom(offers, i + 1))
        }
      }
      return Effect.void
    })

  // prepared, then offered: a chain, not a generator (a write of a few records is mostly its steps)
  const admitPrepared = (prepared: Prepared<M["Slice"], M["Failure"]>): Effect.Effect<void, CoreError<M>> => {
    // records routed before admission: with `writeAwaitsRouted` the write returns once the handler
    // has them, so a handler that fails (failJob) fails this write (nothing routed: no wait)
    const routedDone = backend.writeAwaitsRouted === true && prepared.routed.length > 0
      ? Deferred.makeUnsafe<void, CoreError<M>>()
      : undefined
    const offered = offerFrom(offersOf(prepared, routedDone, flow.maxBytes), 0)
    return routedDone === undefined ? offered : Effect.andThen(offered, orFailed(Deferred.await(routedDone)))
  }
  const prepareAndAdmit = (records: ReadonlyArray<M["Record"]>) =>
    Effect.flatMap(backend.prepare(records, limits), admitPrepared)
  return (records) => {
    const gate = backend.admissionGate?.()
    // behind a gate, the run is prepared once it opens
    return gate === undefined
      ? prepareAndAdmit(records)
      : Effect.andThen(orFailed(gate), Effect.suspend(() => prepareAndAdmit(records)))
  }
}

/** The caller-side half: `write` (prepare, permits, offer), `flush`, `checkpoint`, `summary`. */
const admission = <M extends Method, P>(
  backend: Admission<M>,
  parts: Parts<M>
): Writer<M["Record"], CoreError<M>, P> => {
  const { commands, counters, failed } = parts
  const orFailed = orFailedWith(failed)
  const admit = admitter(backend, parts)

  // One run of records is prepared while earlier ones are in flight, then admitted as soon as
  // permits free up: preparing a whole large chunk up front would let the requests drain meanwhile.
  const size = Math.max(1, backend.sliceRecords)
  const writeSpan = `${backend.name}.write`
  const runs = Effect.fnUntraced(function*(all: ReadonlyArray<M["Record"]>) {
    for (let from = 0; from < all.length; from += size) yield* admit(all.slice(from, from + size))
  })
  const write = (records: Iterable<M["Record"]>): Effect.Effect<void, CoreError<M>> =>
    Effect.suspend(() => {
      if (Deferred.isDoneUnsafe(failed)) return Deferred.await(failed)
      const all: ReadonlyArray<M["Record"]> = Array.isArray(records) ? records : Array.from(records)
      if (all.length === 0) return Effect.void
      return all.length <= size ? admit(all) : runs(all)
    })

  const flush: Effect.Effect<void, CoreError<M>> = Effect.gen(function*() {
    const done = yield* Deferred.make<void, CoreError<M>>()
    yield* orFailed(Queue.offer(commands, { _tag: "Flush", done }))
    yield* orFailed(Deferred.await(done))
  }).pipe(hotSpan(`${backend.name}.flush`))

  return {
    // one span per chunk
    write: (records) => write(records).pipe(hotSpan(writeSpan)),
    flush,
    // the exactly-once protocol (`checkpoint.ts`) wraps this writer and drains through `flush`
    checkpoint: () => flush,
    // Read at once, never queued behind writes: the owner alone writes the counters, and a
    // snapshot is taken between two of its steps (one thread).
    summary: Effect.sync((): WriteSummary => counters.snapshot())
  }
}
