/**
 * The writer core's state and commands: what the owner fiber reads and writes (outstanding units
 * and bytes, requests in flight, barriers, the failure latch), and what it is built from.
 *
 * @internal
 */
import type * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import type * as Deferred from "effect/Deferred"
import type * as Effect from "effect/Effect"
import type * as FiberSet from "effect/FiberSet"
import * as Latch from "effect/Latch"
import type * as Metric from "effect/Metric"
import type * as Queue from "effect/Queue"
import type * as Schedule from "effect/Schedule"
import type { Admission, Budget, CoreError, CoreMetrics, Delivery, Method, Slice } from "./backend.ts"
import type { FailureRouter } from "./failureRouting.ts"
import type { Permit } from "./flowControl.ts"
import type { NoFiberCalls } from "./noFiberCalls.ts"
import type { Repairs } from "./repairs.ts"
import * as stall from "./stall.ts"
import type { SummaryCounters } from "./summaryCounters.ts"

/**
 * A prepared slice (or routed records alone) for the owner to admit. The commands that carry records
 * are classes, not literals: a literal's allocation site can be pretenured, and a command born in the
 * old generation keeps the young records it points to alive until a full collection (ADR 0056).
 *
 * @internal
 */
export class Admit<M extends Method> {
  readonly _tag = "Admit"
  readonly slice: Slice<M["Slice"]> | undefined
  readonly routed: ReadonlyArray<M["Failure"]>
  readonly skipped: ReadonlyArray<string>
  /** Completed once `routed` went to the handler (failed with the latch when that failed the writer). */
  readonly routedDone: Deferred.Deferred<void, CoreError<M>> | undefined
  /** The in-flight bytes `routed`'s payloads were charged (an oversize row is up to 10 MiB), given back once routed. */
  readonly routedPermit: Permit | undefined
  constructor(
    slice: Slice<M["Slice"]> | undefined,
    routed: ReadonlyArray<M["Failure"]>,
    skipped: ReadonlyArray<string>,
    routedDone: Deferred.Deferred<void, CoreError<M>> | undefined,
    routedPermit: Permit | undefined
  ) {
    this.slice = slice
    this.routed = routed
    this.skipped = skipped
    this.routedDone = routedDone
    this.routedPermit = routedPermit
  }
}

/** A request answered, with its outcome (a class: {@link Admit} says why). @internal */
export class Completed<M extends Method> {
  readonly _tag = "Completed"
  readonly batch: M["Request"]
  readonly outcome: M["Outcome"]
  constructor(batch: M["Request"], outcome: M["Outcome"]) {
    this.batch = batch
    this.outcome = outcome
  }
}

/** The commands of the owner. @internal */
export type Command<M extends Method> =
  | Admit<M>
  | { readonly _tag: "SendAll" }
  | { readonly _tag: "Tick" }
  | Completed<M>
  /** A call that died (or was interrupted on its own): latched as the writer's failure. */
  | { readonly _tag: "CallFailed"; readonly cause: Cause.Cause<never> }
  | { readonly _tag: "Retry"; readonly items: ReadonlyArray<M["Item"]> }
  /** A method's own step, sent through `Core.offer` to run on the owner. */
  | { readonly _tag: "Step"; readonly step: Effect.Effect<void, CoreError<M>> }
  | { readonly _tag: "Flush"; readonly done: Deferred.Deferred<void, CoreError<M>> }

/**
 * A barrier (`flush`) waiting: it covers the items admitted before it (generations up to and
 * including its own), and `taken`, the `Admit` commands taken before it.
 *
 * @internal
 */
export interface Barrier<E> {
  readonly done: Deferred.Deferred<void, E>
  readonly generation: number
  readonly taken: number
}

/** The core's mutable state; read and written on the owner fiber (the finalizers read it after it stopped). @internal */
export interface State<E> {
  outstanding: number
  /** The generation of what is admitted now: the number of barriers before it (`Accounted.generation`). */
  generation: number
  /**
   * Units outstanding by the generation they were admitted in, oldest first (a generation takes no
   * more units once a barrier closed it, and an entry goes when its units are gone).
   */
  readonly pending: Map<number, number>
  requests: number
  /** Admission is waiting for permits held by open batches: cut them once no request is in flight. */
  admissionWaiting: boolean
  /** `Admit` commands offered by callers (counted before they reach the owner). */
  offered: number
  /** `Admit` commands the owner has taken. */
  taken: number
  /** `taken` when the last barrier succeeded: closing after success flushes when `offered` is past it. */
  flushedUpTo: number
  /** In the order they came, so by generation. */
  readonly barriers: Array<Barrier<E>>
  failure: Cause.Cause<E> | undefined
  /** Gauge moves of this writer, taken back when it closes. */
  readonly gauges: Map<Metric.Gauge<number>, number>
  readonly stall: stall.StallState
  /** When the tick last forgot idle destinations. */
  lastEvictionAt: number
  /** A `Tick` waits in the queue: the ticker offers no other until the owner took it. */
  tickPending: boolean
  /**
   * The ticker sleeps until `tickerWake` opens (or idle eviction is due): nothing is outstanding, so no
   * batch can come due and no request stall. The owner opens it when it takes an admission.
   */
  tickerAsleep: boolean
  readonly tickerWake: Latch.Latch
}

/** Whether anything was offered for admission since the last successful barrier. @internal */
export const unflushed = <E>(st: State<E>): boolean => st.offered > st.flushedUpTo

/** @internal */
export const makeState = <E>(): State<E> => ({
  outstanding: 0,
  generation: 0,
  pending: new Map(),
  requests: 0,
  admissionWaiting: false,
  offered: 0,
  taken: 0,
  flushedUpTo: 0,
  barriers: [],
  failure: undefined,
  gauges: new Map(),
  stall: stall.makeState(),
  lastEvictionAt: 0,
  tickPending: false,
  tickerAsleep: false,
  tickerWake: Latch.makeUnsafe(false)
})

/** What the owner is built from (by `writer.make`). @internal */
export interface OwnerContext<M extends Method> {
  readonly state: State<CoreError<M>>
  readonly commands: Queue.Queue<Command<M>>
  /**
   * Commands of calls started on no fiber (`Delivery.start`) that found `commands` full: the owner
   * takes them before the queue's. Non-empty only while the queue is full, so the owner never waits
   * on an empty queue with one here.
   */
  readonly overflow: Array<Command<M>>
  readonly fibers: FiberSet.FiberSet<unknown, unknown>
  /** The cancels of the calls started on no fiber and not yet answered: run when the writer closes. */
  readonly calls: NoFiberCalls
  readonly failed: Deferred.Deferred<never, CoreError<M>>
  readonly router: FailureRouter<M["Failure"], M["HandlerError"], M["Context"]>
  readonly counters: SummaryCounters
  readonly metrics: CoreMetrics
  /** Gives an in-flight permit back (and wakes the writes it lets through). */
  readonly releaseUnsafe: (permit: Permit) => void
  /** The writer's clock, read in the owner's steps (the clock of the fiber that built it). */
  readonly clock: Clock.Clock
  /** The owner took an admitted slice of `bytes` from the queue: its staging place is free. */
  readonly unstage: (bytes: number) => void
  /** Wakes every write waiting for admission (permits, a staging place) once `failed` is done. */
  readonly wakeAdmission: Effect.Effect<void>
  /** The budgets' schedules; absent on a staging writer (nothing is sent, nothing retried). */
  readonly schedules: Readonly<Record<Budget, Schedule.Schedule<unknown, unknown>>> | undefined
  /** The context of the handler (and of the method's owner-side steps). */
  readonly context: Context.Context<M["Context"]>
  /** Set once the method is built (its factory receives the core first). */
  admission: Admission<M> | undefined
  /**
   * Set once a delivering method is built; absent on a staging writer, whose `AdmissionCore`
   * cannot send: the commands of delivery (`Completed`, `CallFailed`, `Retry`, `Step`) never come.
   */
  delivery: Delivery<M> | undefined
  /** At most this many requests in flight (`Infinity`: no bound); the others wait in `queued`, in order. */
  readonly maxRequests: number
  readonly queued: Array<M["Request"]>
  /** Requests that go again after a wait and kept their place in the window (`Verdict.reserve`). */
  readonly reserved: Set<M["Request"]>
  /** The repair engine, made with the core. */
  repairs: Repairs<M["Item"], CoreError<M>> | undefined
}
