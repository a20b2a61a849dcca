/**
 * The Storage Write backend of the writer core (`internal/core/`), which at-least-once, exactly-once
 * (through a {@link Mode}) and CDC share: what differs from Bigtable. Rows are encoded on the caller's
 * fiber into slices (`prepare.ts`); the owner appends each slice to its destination's batch in one
 * copy, opening the destination (`destination.ts`) and re-reading its schema when the serializer's
 * fingerprint moved or the service pushed one; full batches, and every open one at a barrier, are
 * sealed and sent. A call is one append's attempts on one connection (`pendingAppend.ts`); how it
 * ended becomes the core's verdict (`verdict.ts`, which owns the whole append decision): rows written
 * and routed, a reconnect after the core's `recovery` wait, or a table repair by the core's repair
 * engine (`core/repairs.ts`), during which the destination's new requests are held here.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import type * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import type * as Result from "effect/Result"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, TableAdminFailed } from "../../../BigQuery/BigQueryError.ts"
import { type BigQueryFailure, failedRow } from "../../../BigQuery/BigQueryFailure.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { Accounted, Backend, Core, Method } from "../../core/backend.ts"
import { maxStagedSlices } from "../../core/writer.ts"
import * as DeadlineKeeper from "../../wire/deadlineKeeper.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import * as AppendRequest from "../transport/appendRequest.ts"
import * as SendBacklog from "../transport/sendBacklog.ts"
import * as AppendNow from "./appendNow.ts"
import * as Destination from "./destination.ts"
import type * as PendingAppend from "./pendingAppend.ts"
import * as Prepare from "./prepare.ts"
import * as Projection from "./projection.ts"
import type * as Slices from "./slices.ts"
import * as Split from "./split.ts"
import * as Verdict from "./verdict.ts"

/**
 * A request's stamp and place in its buffered stream's chain of appends (the exactly-once mode):
 * `offset`, where it is sent; `after`, the final end of the append sent before it (the offset its
 * rows truly go at, once that one settled); `end`, its own, completed when it settles.
 *
 * @internal
 */
export interface Link {
  readonly offset: number
  readonly after: Effect.Effect<number, BigQueryError>
  readonly end: Deferred.Deferred<number, BigQueryError>
}

/**
 * One sealed batch on its way: its destination and rows; it is the item the core accounts for
 * (`key`, rows as `units`, `bytes`, `permitBytes`). It keeps its append's progress between calls.
 *
 * @internal
 */
export interface Request extends Accounted, PendingAppend.Batch {
  readonly d: Destination.Destination
  readonly sealed: Split.Sealed
  /** The framed rows its append sends (`sealed.body`). */
  readonly body: Uint8Array
  /** Its rows (`sealed.count`). */
  readonly count: number
  /** The schema in force when it was sealed (a refresh may come before a queued request starts). */
  readonly descriptor: Uint8Array
  readonly schema: TableSchema.TableSchema
  /** Buffered streams: its offset, stamped when it is sent, and its place in the chain of appends. */
  readonly link?: Link | undefined
  /** Owner: its destination's repair epoch when it was last sent (`Core.repairs`). */
  epoch: number
  /** Its append's progress (rows left, routed rows, counts), made by its first call. */
  progress: PendingAppend.Progress | undefined
}

/** @internal */
export type Outcome = Exit.Exit<Verdict.Step, BigQueryError>

/**
 * The core a BigQuery writer runs on, and the open destinations its owner-side steps read (the
 * exactly-once checkpoint reads them with a step sent through `core.offer`).
 *
 * @internal
 */
export interface OwnerView<E> {
  /** Runs a step on the owner (`Core.offer`). */
  readonly offer: (step: Effect.Effect<void, E>) => Effect.Effect<void>
  /** Fails with the writer's failure once latched (`Core.failure`). */
  readonly failure: Effect.Effect<never, E>
  readonly destinations: ReadonlyMap<string, Destination.Destination>
}

/**
 * What the exactly-once mode changes (`exactlyOnce/mode.ts`); without one the backend appends to
 * each table's `_default` stream.
 *
 * - `open`: opens a destination (its buffered stream, created or restored).
 * - `send`: hands a sealed request to `send` (the core's): the buffered mode stamps its offset and
 *   links it to the append before it (pipelined), or holds it behind a restored stream's probe.
 * - `call`: one call of a request's append.
 * - `answered`: after the owner judged a request's last call (done or failed): the next offset, the next request.
 * - `evictable`: whether an idle destination may be forgotten.
 *
 * @internal
 */
export interface Mode {
  readonly open: (
    destination: TableDestination,
    now: number,
    shared: Destination.Shared
  ) => Effect.Effect<Destination.Destination, BigQueryError | Destination.SerializerThrew>
  readonly send: (request: Request, send: (request: Request) => Effect.Effect<void>) => Effect.Effect<void>
  readonly call: (request: Request) => Effect.Effect<Verdict.Step, BigQueryError>
  readonly answered: (
    request: Request,
    /** Absent: the append failed (the writer's failure). */
    outcome: Verdict.Outcome | undefined,
    send: (request: Request) => Effect.Effect<void>
  ) => Effect.Effect<void>
  readonly evictable: (d: Destination.Destination) => boolean
}

/**
 * The Storage Write backend's types on the core: records `A` in, encoded rows per slice, each
 * sealed batch a {@link Request} that is its own accounted item, a call's {@link Outcome}, routed
 * `BigQueryFailure`s; the writer fails with a `BigQueryError` or the failure handler's `E`, whose
 * steps need `R`.
 *
 * @internal
 */
export interface StorageWriteMethod<A, E, R> extends Method {
  readonly Record: A
  readonly Slice: Slices.Rows
  readonly Item: Accounted
  readonly Request: Request
  readonly Outcome: Outcome
  readonly Failure: BigQueryFailure
  readonly Error: BigQueryError | E
  readonly HandlerError: E
  readonly Context: R
}

/** The core a Storage Write writer runs on. @internal */
export type BigQueryCore<A, E, R> = Core<StorageWriteMethod<A, E, R>>

/**
 * A destination's open (schema read, table proven or created) finished on its own fiber: the
 * slices that waited for it are batched, or routed or failed with its error.
 *
 * @internal
 */
export interface Opened {
  readonly _tag: "Opened"
  readonly key: string
  readonly result: Result.Result<Destination.Destination, BigQueryError | Destination.SerializerThrew>
}

/** The Storage Write backend's seams on the core. @internal */
export type BigQueryBackend<A, E, R> = Backend<StorageWriteMethod<A, E, R>>

const isRequest = (item: Accounted): item is Request => "sealed" in item

/** Records prepared per `prepare` call. @internal */
export const sliceRecords = 8192

interface State<A, E, R> {
  readonly core: BigQueryCore<A, E, R>
  readonly client: BigQueryClientService
  readonly settings: Settings<A, E, R>
  readonly destinations: Map<string, Destination.Destination>
  /**
   * Destinations being opened, each with the slices that came for it meanwhile (in order, with the
   * barrier generation each was admitted in). An open runs on a fiber of its own: a slow
   * `tables.insert` holds up its own table, not the others.
   */
  readonly opening: Map<string, Array<Admitted>>
  /**
   * Full-size buffers, shared by slices (taken on the caller's fiber) and batches (the owner's): a
   * slice's buffer becomes its destination's batch buffer or is copied and given back; a batch's is
   * given back once it is answered. One thread: no fiber ever waits on it.
   */
  readonly pool: Split.Pool
  /** Request bytes the transport holds for the wire: admission waits while they are high (sendBacklog.ts). */
  readonly backlog: SendBacklog.SendBacklog
  /** The response deadlines of the appends in flight (one fiber in the writer's scope, not one per append). */
  readonly deadlines: DeadlineKeeper.DeadlineKeeper
  /**
   * Slices parked behind an open in `opening` (each table's first slice, which starts its open, not
   * counted, so many new tables still open at once), on the same level gate: the owner has taken
   * them, so the core's staging bound no longer holds them back, and without this a table's first
   * open let the caller encode the whole admission budget ahead (50 MiB of rows in twice that in
   * buffers: the RSS peak).
   */
  readonly parked: SendBacklog.SendBacklog
  readonly prepareEnv: Prepare.Env<A>
  readonly maxBytes: number
  /** Scratch of `Split.fitFrames`. */
  readonly fit: Split.Fit
  readonly mode: Mode | undefined
  /** Requests held while their destination is repaired (or behind held ones), in order, by key. */
  readonly held: Map<string, Array<Request>>
}

/** A slice's rows, with the barrier generation they were admitted in. */
interface Admitted {
  readonly rows: Slices.Rows
  readonly generation: number
}

const sendBatch = <A, E, R>(
  st: State<A, E, R>,
  d: Destination.Destination,
  sealed: Split.Sealed,
  permitBytes: number,
  generation: number
): Effect.Effect<void> =>
  Effect.suspend(() => {
    d.inFlight++
    const perDestination = st.settings.stream.perDestinationMetrics ? d.key : undefined
    const request: Request = {
      d,
      sealed,
      body: sealed.body,
      count: sealed.count,
      key: d.key,
      units: sealed.count,
      bytes: sealed.bytes,
      permitBytes,
      generation,
      descriptor: d.descriptor,
      schema: d.schema,
      epoch: 0,
      progress: undefined
    }
    return metrics.countRecords(metrics.recordsSend, sealed.count, perDestination).pipe(
      Effect.andThen(metrics.countRecords(metrics.bytesSend, sealed.bytes, perDestination)),
      Effect.andThen(
        st.mode === undefined ? dispatch(st, request) : st.mode.send(request, (r) => dispatch(st, r))
      )
    )
  })

/**
 * Hands a request to the core, or holds it while its destination is repaired (and behind requests
 * held before it, so they keep their order); it carries the repair epoch it is sent in.
 */
const dispatch = <A, E, R>(st: State<A, E, R>, request: Request): Effect.Effect<void> =>
  Effect.suspend(() => {
    const held = st.held.get(request.key)
    if (held !== undefined || st.core.repairs.active(request.key)) {
      if (held === undefined) st.held.set(request.key, [request])
      else held.push(request)
      return Effect.void
    }
    request.epoch = st.core.repairs.epoch(request.key)
    return st.core.send(request)
  })

/** The destination `key` was repaired: its held requests go, in order. */
const settled = <A, E, R>(st: State<A, E, R>, key: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const held = st.held.get(key)
    if (held === undefined) return Effect.void
    st.held.delete(key)
    return Effect.forEach(held, (request) => dispatch(st, request), { discard: true })
  })

/** Seals `d`'s open batch (which has rows); the owner's own cuts come off the caller's projection. */
const seal = <A, E, R>(st: State<A, E, R>, d: Destination.Destination, own: boolean): Split.Sealed => {
  const sealed = Split.seal(d.batch)
  // the next batch starts on no buffer: the next slice's buffer usually becomes the batch's
  d.batch.writer = Split.unallocated(st.pool)
  const projection = st.prepareEnv.projections.get(d.key)
  if (own && projection !== undefined) Projection.takenAway(projection, d.batchStamp, sealed.frameBytes)
  return sealed
}

/** Seals and sends `d`'s open batch, if it has rows (a barrier, a schema refresh, or a slice completing it). */
const cut = <A, E, R>(st: State<A, E, R>, d: Destination.Destination, own = true): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (d.batch.count === 0) return Effect.void
    const permitBytes = d.permitBytes
    d.permitBytes = 0
    return sendBatch(st, d, seal(st, d, own), permitBytes, d.batchGeneration)
  })

/**
 * Sends `d`'s open batch when nothing of `d` is in flight: rows go out at once to an idle
 * destination and are batched only while one of its appends is out, whose answer sends them (the
 * Go and Java writers' rule). So no row waits for a batch to fill or for a timer, and a batch holding
 * admission permits always has an answer coming that sends it.
 */
const sendIfIdle = <A, E, R>(st: State<A, E, R>, d: Destination.Destination): Effect.Effect<void> =>
  d.inFlight === 0 ? cut(st, d, true) : Effect.void

/**
 * Appends a slice's rows to `d`'s batch: when they fit, by copying the fewer bytes (`Split.join`: the
 * batch's rows into the gap `prepare` left before the slice's, or the slice's after the batch's), else
 * in runs that fit, sealing and sending each batch the rows fill. The buffer given up goes back to the
 * slice pool.
 */
const appendRows = <A, E, R>(
  st: State<A, E, R>,
  d: Destination.Destination,
  admitted: Admitted
): Effect.Effect<void> => {
  const join = joinRows(st, d, admitted)
  // a slice that starts a batch sends the open one first (the caller counted it sent: not own)
  return admitted.rows.startsBatch ? Effect.andThen(cut(st, d, false), join) : join
}

/** {@link appendRows} once the batch before a slice that starts one is sent. */
const joinRows = <A, E, R>(
  st: State<A, E, R>,
  d: Destination.Destination,
  { generation, rows }: Admitted
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const batch = d.batch
    d.batchStamp = Projection.batchStamp(rows.seals, rows.sealsBatch)
    if (batch.count === 0) d.batchGeneration = generation
    if (Split.frameBytes(batch) + rows.body.length <= st.maxBytes) {
      // the smaller of the batch and the slice is copied to the other (none when the batch is empty)
      Split.join(st.pool, batch, rows.buffer, rows.body, rows.count, rows.bytes)
      d.permitBytes += rows.body.length + rows.slack
      return rows.sealsBatch ? cut(st, d, false) : Effect.void
    }
    // the rows that fit go in one copy, the batch is sealed, the rest go on in the next one
    const full: Array<readonly [Split.Sealed, number, number]> = []
    const body = rows.body
    const fit = st.fit
    let from = 0
    while (from < body.length) {
      Split.fitFrames(body, from, st.maxBytes - Split.frameBytes(batch), batch.count === 0, fit)
      if (fit.count > 0) {
        Split.appendFrames(batch, body.subarray(from, fit.end), fit.count, fit.bytes)
        d.permitBytes += fit.end - from + (fit.end === body.length ? rows.slack : 0)
        from = fit.end
      }
      if (from < body.length) {
        full.push([seal(st, d, true), d.permitBytes, d.batchGeneration])
        d.permitBytes = 0
        d.batchGeneration = generation
      }
    }
    Split.recycle(st.pool, rows.buffer)
    return Effect.forEach(
      full,
      ([sealed, permitBytes, batchGeneration]) => sendBatch(st, d, sealed, permitBytes, batchGeneration),
      { discard: true }
    )
      .pipe(Effect.andThen(rows.sealsBatch ? cut(st, d, false) : Effect.void))
  })

/**
 * Opening a destination or re-reading its schema failed: a serializer's schema call that threw
 * routes the slice's rows (each a failed row with its bytes); anything else is the writer's error.
 */
const schemaFailed = <A, E, R>(
  st: State<A, E, R>,
  { generation, rows }: Admitted,
  error: BigQueryError | Destination.SerializerThrew
): Effect.Effect<void, BigQueryError> => {
  if (error._tag !== "SerializerThrew") return Effect.fail(error)
  const message = `the serializer's ${error.stage} threw: ${
    error.cause instanceof Error ? error.cause.message : String(error.cause)
  }`
  const failures = AppendRequest.rowsOf(rows.body).map((row) =>
    failedRow({ destination: rows.key, payload: row.slice(), message, cause: error.cause })
  )
  Split.recycle(st.pool, rows.buffer)
  const projection = st.prepareEnv.projections.get(rows.key)
  if (projection !== undefined) {
    Projection.takenAway(projection, Projection.batchStamp(rows.seals, rows.sealsBatch), rows.body.length)
  }
  return st.core.resolved([{
    key: rows.key,
    units: rows.count,
    bytes: rows.bytes,
    permitBytes: rows.body.length + rows.slack,
    generation
  }]).pipe(Effect.andThen(Effect.forEach(failures, st.core.route, { discard: true })))
}

/**
 * The owner's side of a slice: batched on its open destination, or held while the destination
 * opens on a fiber of its own (the first slice of a table starts the open).
 */
const admit = <A, E, R>(
  st: State<A, E, R>,
  slice: Admitted,
  now: number
): Effect.Effect<void, BigQueryError> =>
  Effect.suspend(() => {
    const rows = slice.rows
    const d = st.destinations.get(rows.key)
    if (d !== undefined) return batchRows(st, d, slice, now)
    const waiting = st.opening.get(rows.key)
    if (waiting !== undefined) {
      waiting.push(slice)
      st.parked.sent(1)
      return Effect.void
    }
    st.opening.set(rows.key, [slice])
    return st.core.fork(
      (st.mode === undefined
        ? Destination.open(st.client, st.settings, rows.destination, now, st)
        : st.mode.open(rows.destination, now, st)).pipe(
          // a defect (user code that threw: `tableCreateOptions`, CDC table options) must come back
          // too: an open that never reports leaves the table opening and every barrier waiting
          Effect.catchDefect((defect) => Effect.fail(openDied(rows.key, defect))),
          Effect.result,
          Effect.flatMap((result) => st.core.offer(opened(st, { _tag: "Opened", key: rows.key, result })))
        )
    )
  })

/** The terminal error of an open that died, naming its table. */
const openDied = (key: string, defect: unknown): BigQueryError =>
  new BigQueryError({
    reason: new TableAdminFailed({
      method: "open",
      destination: key,
      status: 0,
      detail: `opening the table died: ${defect instanceof Error ? defect.message : String(defect)}`,
      cause: defect
    })
  })

/** The open of a destination finished: its waiting slices are batched and sent, or routed or failed. */
const opened = Effect.fnUntraced(function*<A, E, R>(st: State<A, E, R>, event: Opened) {
  const waiting = st.opening.get(event.key) ?? []
  st.opening.delete(event.key)
  st.parked.taken(Math.max(0, waiting.length - 1))
  const result = event.result
  if (result._tag === "Failure") {
    Prepare.forget(st.prepareEnv, event.key)
    for (const slice of waiting) yield* schemaFailed(st, slice, result.failure)
    return
  }
  const d = result.success
  st.destinations.set(event.key, d)
  yield* st.core.gauge(metrics.openDestinations, 1)
  const now = yield* Clock.currentTimeMillis
  // the first slice goes at once (nothing in flight yet), the others follow its answer
  for (const slice of waiting) yield* batchRows(st, d, slice, now)
})

/** A slice on its open destination: the schema re-read when it changed, then its rows batched. */
const batchRows = Effect.fnUntraced(
  function*<A, E, R>(st: State<A, E, R>, d: Destination.Destination, slice: Admitted, now: number) {
    const rows = slice.rows
    d.lastUsedMillis = now
    if (d.schemaPushed || (rows.fingerprint !== d.fingerprint && !Equal.equals(rows.fingerprint, d.fingerprint))) {
      // the rows before were encoded with the old schema: they go first
      yield* cut(st, d, true)
      const next = yield* Effect.result(Destination.readSchema(st.settings, d.destination))
      if (next._tag === "Failure") return yield* schemaFailed(st, slice, next.failure)
      d.schema = next.success.schema
      d.descriptor = next.success.descriptor
      d.fingerprint = next.success.fingerprint
      d.schemaPushed = false
    }
    // a batch's rows share one barrier generation (a barrier cuts every batch, but slices parked
    // behind an open come to their batch after it)
    if (d.batch.count > 0 && d.batchGeneration !== slice.generation) yield* cut(st, d, true)
    yield* appendRows(st, d, slice)
    yield* sendIfIdle(st, d)
  }
)

/** A request's progress, made by its first call (a step comes only after one). */
const progressOf = (request: Request): PendingAppend.Progress => {
  if (request.progress === undefined) throw new Error(`BigQuerySink: a step of ${request.key} came before its call`)
  return request.progress
}

/**
 * The core's verdict on one call of an append (`verdict.ts`): done (its rows written, the rejected
 * ones routed), a reconnect after a `recovery` wait, a repair of its table, or the writer's failure.
 * Only the last call of a request frees its destination's place (`inFlight`) and moves a buffered
 * stream on.
 */
const judge = <A, E, R>(
  st: State<A, E, R>,
  request: Request,
  exit: Outcome
): Effect.Effect<Verdict.BigQueryVerdict<E>> =>
  Effect.suspend(() => {
    if (Exit.isFailure(exit)) {
      return Effect.as(Effect.andThen(ended(st, request, undefined), st.core.failCause(exit.cause)), Verdict.noVerdict)
    }
    const step = exit.value
    switch (step._tag) {
      case "reconnect":
        return Effect.succeed(Verdict.reconnect(request, ++progressOf(request).reconnects, step.problem))
      case "repair": {
        const progress = progressOf(request)
        const attempt = step.kind === "createTable" ? ++progress.creations : ++progress.schemaWaits
        st.core.counters.add(request.key, "retries", 1)
        return Effect.as(
          metrics.countRecords(metrics.appendRetries, 1, undefined),
          Verdict.repair(
            request,
            request.epoch,
            step.kind,
            attempt,
            step.problem,
            Destination.repairTable(st.client, st.settings, request.d.destination, request.schema, step.kind)
          )
        )
      }
      case "done":
        // the rows batched while this append was out go now, unless another of d's appends is still out
        return Effect.andThen(
          ended(st, request, step.outcome),
          Effect.tap(verdictOf(st, request, step.outcome), () => sendIfIdle(st, request.d))
        )
    }
  })

/** A request's last call is over: its destination's place is free, and a buffered stream moves on. */
const ended = <A, E, R>(
  st: State<A, E, R>,
  request: Request,
  outcome: Verdict.Outcome | undefined
): Effect.Effect<void> =>
  Effect.suspend(() => {
    request.d.inFlight--
    return st.mode === undefined ? Effect.void : st.mode.answered(request, outcome, (r) => dispatch(st, r))
  })

const verdictOf = <A, E, R>(
  st: State<A, E, R>,
  request: Request,
  o: Verdict.Outcome
): Effect.Effect<Verdict.BigQueryVerdict<E>> =>
  Effect.suspend(() => {
    // answered: nothing refers to the batch's buffer any more (routed rows keep copies)
    Split.recycle(st.pool, request.sealed.buffer)
    if (o.schemaPushed) request.d.schemaPushed = true
    const verdict = Verdict.written(request, o)
    if (o.retries === 0) return Effect.succeed(verdict)
    st.core.counters.add(request.key, "retries", o.retries)
    return Effect.as(metrics.countRecords(metrics.appendRetries, o.retries, undefined), verdict)
  })

/** Forgets destinations idle longer than `destinationIdleTimeout` with nothing pending. */
const evictIdle = <A, E, R>(st: State<A, E, R>, now: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    const idle = Duration.toMillis(st.settings.stream.destinationIdleTimeout)
    const evicted: Array<Destination.Destination> = []
    for (const [key, d] of st.destinations) {
      if (
        now - d.lastUsedMillis > idle && d.inFlight === 0 && d.batch.count === 0 &&
        (st.mode === undefined || st.mode.evictable(d))
      ) {
        st.destinations.delete(key)
        Prepare.forget(st.prepareEnv, key)
        evicted.push(d)
      }
    }
    if (evicted.length === 0) return Effect.void
    return Effect.andThen(
      Effect.forEach(evicted, (d) => d.slot.close, { discard: true }),
      st.core.gauge(metrics.openDestinations, -evicted.length)
    )
  })

const stallMessage = <A, E, R>(st: State<A, E, R>, waited: number) => {
  const tables = [...st.destinations].filter(([, d]) => d.inFlight > 0).map(([key]) => key).toSorted()
  return {
    message: `BigQuery has answered no AppendRows request for ${Math.floor(waited / 1000)} s: ` +
      `${st.core.requestsInFlight()} appends in flight, to ${tables.join(", ")}`,
    destinations: tables.join(",")
  }
}

/** A writer's state before its first record. */
const initialState = <A, E, R>(
  settings: Settings<A, E, R>,
  client: BigQueryClientService,
  core: BigQueryCore<A, E, R>,
  mode: Mode | undefined,
  deadlines: DeadlineKeeper.DeadlineKeeper
): State<A, E, R> => {
  const s = settings.stream
  const pool = Split.makePool(s.maxAppendRequestBytes, 32)
  return {
    core,
    client,
    settings,
    destinations: new Map(),
    opening: new Map(),
    pool,
    backlog: SendBacklog.make(SendBacklog.highFor(s.maxAppendRequestBytes)),
    deadlines,
    // as many slices parked behind opens as the core stages for the owner
    parked: SendBacklog.make(maxStagedSlices),
    prepareEnv: {
      resolve: settings.resolve,
      serializer: settings.serializer,
      maxAppendRequestBytes: s.maxAppendRequestBytes,
      pool,
      sizeHints: new Map(),
      projections: new Map()
    },
    maxBytes: s.maxAppendRequestBytes,
    fit: { end: 0, count: 0, bytes: 0 },
    mode,
    held: new Map()
  }
}

/** The backend with what the exactly-once mode reads of it. @internal */
export type Built<A, E, R> = BigQueryBackend<A, E, R> & {
  /** What `prepare` keeps per destination on the caller's side (bounded by eviction). */
  readonly prepareEnv: Prepare.Env<A>
  /** The open destinations (the owner's: read by steps run on it). */
  readonly destinations: ReadonlyMap<string, Destination.Destination>
}

/** Builds the backend on the core; the destinations' connections close with the writer's scope. @internal */
export const make = <A, E, R>(settings: Settings<A, E, R>, client: BigQueryClientService, mode?: Mode) =>
  Effect.fnUntraced(function*(core: BigQueryCore<A, E, R>) {
    const st = initialState(settings, client, core, mode, yield* DeadlineKeeper.make)
    // made before the slots' finalizer, so closed after it: a call forked here opens no connection then
    const appendNow: AppendNow.Env<A, E, R> = {
      settings,
      fork: yield* FiberSet.makeRuntime<never, Verdict.Step, BigQueryError>()
    }
    yield* Effect.addFinalizer(() => Effect.forEach(st.destinations.values(), (d) => d.slot.close, { discard: true }))
    const built: Built<A, E, R> = {
      name: "BigQuerySink",
      // a record routed as it is admitted fails the write that brought it when the handler fails
      writeAwaitsRouted: true,
      sliceRecords,
      admissionGate: () => st.backlog.wait() ?? st.parked.wait(),
      prepare: (records, limits) => Prepare.prepare(st.prepareEnv, records, limits),
      admit: (rows, now, generation) => admit(st, { rows, generation }, now),
      cutAll: Effect.suspend(() =>
        Effect.forEach(st.destinations.values(), (d) => cut(st, d, true), { discard: true })
      ),
      call: (request) =>
        Effect.exit(
          mode === undefined
            ? AppendNow.onFiber(settings, request)
            : mode.call(request)
        ).pipe(Effect.trackDuration(metrics.appendLatency)),
      // on the default stream an append starts on no fiber where it can (appendNow.ts); each it
      // declines runs `call` on a fiber, counted until it is written
      start: mode === undefined ? (request, deliver) => AppendNow.start(appendNow, request, deliver) : undefined,
      judge: (request, outcome) => judge(st, request, outcome),
      // what the core re-sends is what a step handed it: requests
      resend: (items) =>
        Effect.forEach(
          items,
          (item) => isRequest(item) ? dispatch(st, item) : Effect.die(new Error("BigQuerySink: re-sent a non-request")),
          { discard: true }
        ),
      settled: (key) => settled(st, key),
      evictIdle: (now) => evictIdle(st, now),
      stallMessage: (waited) => stallMessage(st, waited),
      prepareEnv: st.prepareEnv,
      destinations: st.destinations
    }
    return built
  })
