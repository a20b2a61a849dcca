/**
 * The Bigtable backend's state on the writer core (`internal/core/`): the per-table batches and
 * the isolation pass's rejection streak (table repairs are the core's engine's, `core/repairs.ts`). The core owns the rest
 * (admission, in-flight counts, barriers, routing, counters, the latch). The files beside it
 * (`dispatch`, `verdict`, `repair`, `backend`) are the backend's steps, each taking this state;
 * they run on the writer's owner fiber only.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { EntryStatus } from "../../../Bigtable/BigtableClient.ts"
import type { BigtableError } from "../../../Bigtable/BigtableError.ts"
import type { FailedMutation } from "../../../Bigtable/BigtableFailure.ts"
import type { TableDestination } from "../../../Bigtable/TableDestination.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { Core, Method } from "../../core/backend.ts"
import type { Settings, WriterSettings } from "../options.ts"
import type { Service } from "../transport/connect.ts"
import type * as batcher from "./batcher.ts"
import type { Item } from "./prepare.ts"

/** Everything a writer can fail with: its own errors and the failure handler's. @internal */
export type WriterError<EH> = BigtableError | SinkConfigError | EH

/** One MutateRows request: entries of one table. @internal */
export type Request = ReadonlyArray<Item>

/**
 * The Bigtable backend's types on the core: records `A` in, entries (`Item`s) admitted in slices
 * and sent per table as MutateRows requests, answered with a status per entry; routed
 * `FailedMutation`s; the handler fails with `EH` and its steps need `R`.
 *
 * @internal
 */
export interface BigtableMethod<A, EH, R> extends Method {
  readonly Record: A
  readonly Slice: ReadonlyArray<Item>
  readonly Item: Item
  readonly Request: Request
  readonly Outcome: ReadonlyArray<EntryStatus>
  readonly Failure: FailedMutation
  readonly Error: WriterError<EH>
  readonly HandlerError: EH
  readonly Context: R
}

/** The writer core as the Bigtable backend sees it. @internal */
export type BigtableCore<A, EH, R> = Core<BigtableMethod<A, EH, R>>

/** One open table: its batch, the entries held while it is repaired, its in-flight count. @internal */
export interface Dest {
  readonly table: TableDestination
  readonly batch: batcher.Batch<Item>
  openedAt: number
  /** Its table was ensured once (a later missing family is then the records', not the table's). */
  ensured: boolean
  readonly held: Array<Item>
  /** Entries admitted and not yet written or routed (batched, held or in flight). */
  inFlight: number
  /** MutateRows requests out for this table: while none is, an admitted entry is sent at once. */
  requests: number
  lastUsed: number
}

/** The backend's mutable state; read and written on the owner fiber only. @internal */
export interface State<A, EH, R> {
  readonly core: BigtableCore<A, EH, R>
  readonly settings: Settings<A, EH, R>
  readonly client: Service
  readonly w: WriterSettings
  readonly thresholds: batcher.Thresholds
  readonly dests: Map<string, Dest>
  readonly validate: (table: TableDestination) => Effect.Effect<void, SinkConfigError>
  consecutiveRejections: number
  /** Requests whose call, started on no fiber, ended past its deadline: logged by their verdict. */
  readonly exceeded: Map<Request, Duration.Duration>
}

/** @internal */
export const make = <A, EH, R>(
  core: BigtableCore<A, EH, R>,
  settings: Settings<A, EH, R>,
  client: Service,
  validate: State<A, EH, R>["validate"]
): State<A, EH, R> => {
  const w = settings.writer
  return {
    core,
    settings,
    client,
    w,
    thresholds: { batchElementCount: w.batchElementCount, batchByteSize: w.batchByteSize },
    dests: new Map(),
    validate,
    consecutiveRejections: 0,
    exceeded: new Map()
  }
}
