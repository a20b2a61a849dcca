/**
 * The state of the writer's owner fiber, and the commands it takes. The owner is the only reader
 * and writer of this state: the per-table batches, the in-flight bookkeeping, the isolation and
 * repair queues, the counters and the barriers. The files beside it (`booking`, `dispatch`,
 * `repair`, `completion`, `admission`) are the owner's steps, each taking this state; they run on
 * the owner fiber only. Every other fiber talks to it through `commands`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"
import type { EntryStatus } from "../../Bigtable/BigtableClient.ts"
import type { BigtableError } from "../../Bigtable/BigtableError.ts"
import type { FailedMutation } from "../../Bigtable/BigtableFailure.ts"
import type { TableDestination } from "../../Bigtable/TableDestination.ts"
import type { FailureHandler } from "../../Sink/FailureHandler.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { Permit } from "../flowControl.ts"
import type * as counters from "../summaryCounters.ts"
import type * as admin from "./admin.ts"
import type * as batcher from "./batcher.ts"
import type { Service } from "./connect.ts"
import type { Settings, WriterSettings } from "./options.ts"
import type { Item } from "./prepare.ts"

/** Everything a writer can fail with: its own errors and the failure handler's. @internal */
export type WriterError<EH> = BigtableError | SinkConfigError | EH

/** @internal */
export type EnsureResults = ReadonlyArray<
  { readonly key: string; readonly exit: Exit.Exit<admin.EnsureResult, BigtableError> }
>

/** @internal */
export type Command<E> =
  | {
    readonly _tag: "Admit"
    readonly items: ReadonlyArray<Item>
    readonly routed: ReadonlyArray<FailedMutation>
    readonly skipped: ReadonlyArray<string>
  }
  | { readonly _tag: "SendAll" }
  | { readonly _tag: "Tick" }
  | { readonly _tag: "Completed"; readonly items: ReadonlyArray<Item>; readonly statuses: ReadonlyArray<EntryStatus> }
  | { readonly _tag: "Resend"; readonly items: ReadonlyArray<Item> }
  | { readonly _tag: "Ensured"; readonly results: EnsureResults }
  | { readonly _tag: "RepairDue" }
  | { readonly _tag: "Flush"; readonly done: Deferred.Deferred<void, E> }

/** One open table: its batch, the entries held while it is repaired, its in-flight count. @internal */
export interface Dest {
  readonly table: TableDestination
  readonly batch: batcher.Batch<Item>
  openedAt: number
  ready: boolean
  ensured: boolean
  readonly held: Array<Item>
  inFlight: number
  lastUsed: number
}

/** The table repair under way: the tables to ensure, the entries parked on them, the rounds spent. @internal */
export interface Repair {
  readonly tables: Set<string>
  readonly parked: Array<Item>
  rounds: number
  lastCause: unknown
  busy: boolean
}

/** @internal */
export interface OwnerContext<A, EH, R> {
  readonly settings: Settings<A, EH, R>
  readonly client: Service
  readonly commands: Queue.Queue<Command<WriterError<EH>>>
  /** Written by the owner only; `writer.summary` reads a snapshot without queueing. */
  readonly summary: counters.SummaryCounters
  readonly release: (permit: Permit) => Effect.Effect<void>
  readonly failed: Deferred.Deferred<never, WriterError<EH>>
  readonly fibers: FiberSet.FiberSet<unknown, unknown>
  readonly validate: (table: TableDestination) => Effect.Effect<void, SinkConfigError>
}

/** The owner's mutable state; read and written on the owner fiber only. @internal */
export interface State<A, EH, R> {
  readonly ctx: OwnerContext<A, EH, R>
  readonly settings: Settings<A, EH, R>
  readonly client: Service
  readonly handler: FailureHandler<FailedMutation, EH, R>
  readonly w: WriterSettings
  readonly thresholds: batcher.Thresholds
  readonly summary: counters.SummaryCounters
  readonly dests: Map<string, Dest>
  readonly barriers: Array<Deferred.Deferred<void, WriterError<EH>>>
  outstanding: number
  outstandingBytes: number
  parked: number
  consecutiveRejections: number
  /** MutateRows calls in flight. */
  requestsInFlight: number
  /** Whether admission is waiting for permits held by unsent batches. */
  admissionWaiting: boolean
  /** When a call was last answered, or last seen with none in flight (stall.ts). */
  lastProgressAt: number
  /** When the last stall warning was logged. */
  lastStallWarningAt: number
  repair: Repair | undefined
  failure: Cause.Cause<WriterError<EH>> | undefined
}

/** @internal */
export const make = <A, EH, R>(ctx: OwnerContext<A, EH, R>): State<A, EH, R> => {
  const w = ctx.settings.writer
  return {
    ctx,
    settings: ctx.settings,
    client: ctx.client,
    handler: ctx.settings.handler,
    w,
    thresholds: { batchElementCount: w.batchElementCount, batchByteSize: w.batchByteSize },
    summary: ctx.summary,
    dests: new Map(),
    barriers: [],
    outstanding: 0,
    outstandingBytes: 0,
    parked: 0,
    consecutiveRejections: 0,
    requestsInFlight: 0,
    admissionWaiting: false,
    lastProgressAt: 0,
    lastStallWarningAt: Number.NEGATIVE_INFINITY,
    repair: undefined,
    failure: undefined
  }
}

/** Runs `effect` on a fiber of the writer's set (interrupted when the writer closes). @internal */
export const fork = <A, EH, R>(
  st: State<A, EH, R>,
  effect: Effect.Effect<unknown, never, never>
): Effect.Effect<unknown> => FiberSet.run(st.ctx.fibers, effect)

/** Sends a command to the owner (from a forked fiber). @internal */
export const offer = <A, EH, R>(st: State<A, EH, R>, command: Command<WriterError<EH>>): Effect.Effect<unknown> =>
  Effect.suspend(() =>
    Queue.offerUnsafe(st.ctx.commands, command) ? Effect.void : Queue.offer(st.ctx.commands, command)
  )

/** Records the first fatal cause and publishes it through `failed`. @internal */
export const failCause = <A, EH, R>(st: State<A, EH, R>, cause: Cause.Cause<WriterError<EH>>): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (st.failure !== undefined) return Effect.void
    st.failure = cause
    return Deferred.failCause(st.ctx.failed, cause).pipe(Effect.asVoid)
  })

/** {@link failCause} with one error. @internal */
export const fail = <A, EH, R>(st: State<A, EH, R>, error: WriterError<EH>): Effect.Effect<void> =>
  Effect.suspend(() => failCause(st, Cause.fail(error)))

/** The metric attributes of a destination, when per-destination metrics are on. @internal */
export const perDestination = <A, EH, R>(
  st: State<A, EH, R>,
  key: string
): { readonly destination: string } | undefined => st.w.perDestinationMetrics ? { destination: key } : undefined
