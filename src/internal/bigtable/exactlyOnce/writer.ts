/**
 * The exactly-once Bigtable writer (reference 3.5, DESIGN 6): the writer core's admission seam
 * (`core/writer.ts` `makeStaging`: nothing is sent from the owner), wrapped in the shared checkpoint
 * protocol (`checkpoint/protocol.ts`), whose committer sends.
 *
 * **Details**
 *
 * - `write` (caller fiber): each record's identity is derived from the writer id and its position
 *   (`identity.ts`, ADR 0019); it is resolved, serialized and measured by the at-least-once
 *   `prepare.ts`, then frozen into an envelope (`envelope.ts`): a `DeleteFromRow`, a mutation of
 *   the marker family or more than 99,999 mutations route the record to the failure handler.
 * - admission (owner fiber): envelopes are staged in memory, nothing is sent; past
 *   `maxStagedEntries` / `maxStagedBytes` the writer fails with `StagingFull`.
 * - `checkpoint(position)`: the drain (nothing in flight), then the participant hands the staged
 *   envelopes over as the checkpoint's commits, the protocol saves them, then they are committed
 *   (`committer.ts`) after the preconditions of each table were checked once (`preconditions.ts`).
 * - restore: the stored envelopes are decoded (validated again) and committed again: the markers
 *   absorb those already applied.
 *
 * `recordsWritten` and `bytesWritten` (each entry's serialized size, as the at-least-once sink counts
 * it) count the records of this run's checkpoints once committed (applied now or found applied); a
 * restore's re-run is counted in the request metrics only.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { BigtableClient } from "../../../Bigtable/BigtableClient.ts"
import type { BigtableClientService, TableFamilies } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, StagingFull } from "../../../Bigtable/BigtableError.ts"
import { FailedMutation } from "../../../Bigtable/BigtableFailure.ts"
import type { Mutation } from "../../../Bigtable/Mutation.ts"
import type { RowMutationEntry } from "../../../Bigtable/RowMutationEntry.ts"
import type { CheckpointError, Resume } from "../../../Sink/Checkpoint.ts"
import { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { Writer } from "../../../Sink/Writer.ts"
import * as checkpoint from "../../checkpoint/protocol.ts"
import type { Accounted, Admission, AdmissionCore, Method, Prepared as CorePrepared } from "../../core/backend.ts"
import * as core from "../../core/writer.ts"
import * as deadline from "../../wire/deadline.ts"
import { withDeadline } from "../admin/createTable.ts"
import * as prepare from "../atLeastOnce/prepare.ts"
import type { WriterError } from "../atLeastOnce/state.ts"
import { contact } from "../contact.ts"
import * as heap from "../heapObjects.ts"
import * as metrics from "../metrics.ts"
import type { Declared } from "../options.ts"
import * as checkAndMutate from "../transport/checkAndMutateProto.ts"
import * as mutationProto from "../transport/mutationProto.ts"
import * as committer from "./committer.ts"
import * as envelope from "./envelope.ts"
import * as identity from "./identity.ts"
import type { MethodSettings, Settings } from "./options.ts"
import * as preconditions from "./preconditions.ts"
import * as provision from "./provision.ts"

/** What a staged entry charges against `maxStagedBytes` besides its request (reference 3.5). @internal */
export const entryOverhead = 256

/** One staged entry, accounted by the core until admitted (then given back at once). @internal */
export interface Staged extends Accounted {
  readonly frozen: envelope.Frozen
  /** Set when it is admitted (`Accounted.generation`). */
  generation: number
}

/**
 * The exactly-once Bigtable method's types on the core: records `A` in, staged entries admitted
 * in slices (nothing is sent from the owner: no request, no outcome), routed `FailedMutation`s; the
 * handler fails with `EH` and its steps need `R`.
 */
interface StagingMethod<A, EH, R> extends Method {
  readonly Record: A
  readonly Slice: ReadonlyArray<Staged>
  readonly Item: Staged
  readonly Request: never
  readonly Outcome: never
  readonly Failure: FailedMutation
  readonly Error: WriterError<EH>
  readonly HandlerError: EH
  readonly Context: R
}

/** The staging admission on the core. */
type Staging<A, EH, R> = Admission<StagingMethod<A, EH, R>>

/** The core the staging admission runs on. */
type StagingCore<A, EH, R> = AdmissionCore<StagingMethod<A, EH, R>>

/** The staged envelopes of the owner fiber, and what they charge. */
interface Stage {
  envelopes: Array<envelope.Frozen>
  bytes: number
}

/**
 * What the caller's writes prepared since the last checkpoint, counted on the caller's fiber (the
 * stage itself is the owner's): the sink form sizes its writes by it, so that a backlog checkpoints
 * early instead of staging past a bound. `largest` is the largest entry charged so far.
 */
interface Pending {
  entries: number
  bytes: number
  largest: number
}

/**
 * How many more records may be written before a checkpoint must be taken: an entry per record at
 * most, and, for the bytes, at most the largest charge seen per record. Before anything was
 * measured, one record (its size is not known yet).
 */
const roomOf = (method: MethodSettings, pending: Pending): number => {
  const entries = method.maxStagedEntries - pending.entries
  if (pending.largest === 0) return Math.min(1, entries)
  return Math.max(0, Math.min(entries, Math.floor((method.maxStagedBytes - pending.bytes) / pending.largest)))
}

/**
 * The prepared entries as envelopes with their identities, each charged its exact request size; an entry
 * that is not a valid envelope is routed (added to `prepared.routed`).
 */
const envelopesOf = <A, EH, R, P>(
  settings: Settings<A, EH, R, P>,
  prepared: prepare.Prepared,
  ids: WeakMap<object, string>
): { readonly staged: Array<Staged>; readonly bytes: number } => {
  const staged: Array<Staged> = []
  let bytes = 0
  for (const item of prepared.items) {
    const frozen = envelope.freeze({
      tableName: item.table.tableName,
      appProfileId: settings.base.appProfileId,
      markerFamily: settings.method.markerFamily,
      identity: ids.get(item.entry) ?? "",
      entry: item.entry
    })
    if (Result.isFailure(frozen)) {
      prepared.routed.push(
        new FailedMutation({
          destination: item.key,
          table: item.table,
          message: `not an exactly-once envelope: ${frozen.failure}`
        })
      )
      continue
    }
    const charge = checkAndMutate.requestSize(frozen.success.envelope) + entryOverhead
    bytes += charge
    staged.push({ key: item.key, units: 1, bytes: charge, permitBytes: 0, generation: 0, frozen: frozen.success })
  }
  return { staged, bytes }
}

/** Stages admitted envelopes until the checkpoint, or fails with `StagingFull` past either bound. */
const admitStaged = Effect.fnUntraced(
  function*<A, EH, R>(
    c: StagingCore<A, EH, R>,
    stage: Stage,
    method: MethodSettings,
    items: ReadonlyArray<Staged>,
    generation: number
  ) {
    let bytes = 0
    for (const item of items) {
      bytes += item.bytes
      item.generation = generation
    }
    if (
      stage.envelopes.length + items.length > method.maxStagedEntries ||
      stage.bytes + bytes > method.maxStagedBytes
    ) {
      yield* c.resolved(items)
      return yield* new BigtableError({
        reason: new StagingFull({
          stagedEntries: stage.envelopes.length,
          stagedBytes: stage.bytes,
          maxStagedEntries: method.maxStagedEntries,
          maxStagedBytes: method.maxStagedBytes
        })
      })
    }
    for (const item of items) stage.envelopes.push(item.frozen)
    stage.bytes += bytes
    yield* c.gauge(metrics.stagedEntries, items.length)
    yield* c.gauge(metrics.stagedBytes, bytes)
    yield* c.resolved(items)
  }
)

/** The admission's `prepare`: identities, then envelopes, each counted in `pending`. */
const preparer = <A, EH, R, P>(settings: Settings<A, EH, R, P>, pending: Pending) => {
  const { base } = settings
  const sequencer = identity.sequencer(settings.resume.writerId)
  const encodePosition = Schema.encodeUnknownSync(settings.resume.positionSchema)
  return Effect.fnUntraced(function*(records: ReadonlyArray<A>) {
    // identities in record order: the resolver runs first for every record, the serializer next
    const ids = new WeakMap<object, string>()
    let current = ""
    let positionError: unknown = undefined
    const resolve = (record: A) => {
      try {
        current = sequencer.next(identity.canonicalJson(encodePosition(settings.position(record))))
      } catch (cause) {
        positionError ??= cause
      }
      return base.resolve(record)
    }
    const tag = (id: string, result: unknown): unknown => {
      if (typeof result !== "object" || result === null || !("rowKey" in result) || !("mutations" in result)) {
        return result
      }
      // a fresh object per record, so two records sharing an entry object keep their own identity
      // (its fields are checked by `prepare`, and copied by `envelope.freeze`)
      const entry: RowMutationEntry = new heap.Entry(
        result.rowKey as Uint8Array,
        result.mutations as ReadonlyArray<Mutation>
      )
      ids.set(entry, id)
      return entry
    }
    const serializer = (record: A) => {
      const id = current
      const result = base.serializer(record)
      return Effect.isEffect(result) ?
        Effect.map(result, (r) => tag(id, r) as RowMutationEntry | null) :
        tag(id, result) as RowMutationEntry | null
    }
    const prepared = yield* prepare.prepare(records, resolve, serializer)
    if (positionError !== undefined) {
      return yield* new SinkConfigError({
        path: "checkpoint.position",
        detail: `a record's position does not encode as JSON with the resume's positionSchema: ${
          positionError instanceof Error ? positionError.message : String(positionError)
        }`
      })
    }
    const { staged, bytes } = envelopesOf(settings, prepared, ids)
    pending.entries += staged.length
    pending.bytes += bytes
    for (const item of staged) pending.largest = Math.max(pending.largest, item.bytes)
    const admitted: CorePrepared<ReadonlyArray<Staged>, FailedMutation> = {
      slices: staged.length === 0 ? [] : [{ payload: staged, units: staged.length, bytes, permitBytes: 0 }],
      routed: prepared.routed,
      skipped: prepared.skipped
    }
    return admitted
  })
}

/** The admission: envelopes prepared on the caller's fiber, staged on the owner (nothing to cut, time or send). */
const makeStaging = <A, EH, R, P>(
  settings: Settings<A, EH, R, P>,
  stage: Stage,
  pending: Pending
) =>
(c: StagingCore<A, EH, R>): Effect.Effect<Staging<A, EH, R>> =>
  Effect.sync(() => {
    const prepareRun = preparer(settings, pending)
    return {
      name: "BigtableSink",
      sliceRecords: 1000,
      prepare: (records) => prepareRun(records),
      admit: (items, _now, generation) => admitStaged(c, stage, settings.method, items, generation)
    }
  })

/**
 * The preconditions of the tables written (app profile, marker family, the envelopes' families),
 * each table's live families read once.
 */
const preconditionsOf = (client: BigtableClientService, method: MethodSettings, declared: Declared | undefined) => {
  const checked = new Map<string, TableFamilies>()
  const familiesOf = Effect.fnUntraced(function*(tableName: string, appProfileId: string | undefined) {
    const known = checked.get(tableName)
    if (known !== undefined) return known
    // CREATE_IF_NEEDED: the table, its declared families and the marker family, before the checks
    if (declared !== undefined) yield* provision.ensureTable(client, tableName, declared, method.adminTimeout)
    yield* preconditions.checkAppProfile(client, tableName, appProfileId, method.adminTimeout)
    const families = yield* withDeadline("GetTable", tableName, method.adminTimeout, client.getTable(tableName))
    yield* preconditions.checkMarkerFamily(tableName, families, method.markerFamily)
    checked.set(tableName, families)
    return families
  })
  const validate = Effect.fnUntraced(function*(envelopes: ReadonlyArray<envelope.Envelope>) {
    const byTable = new Map<string, Array<envelope.Envelope>>()
    for (const e of envelopes) {
      const list = byTable.get(e.tableName)
      if (list === undefined) byTable.set(e.tableName, [e])
      else list.push(e)
    }
    for (const [tableName, list] of byTable) {
      const families = yield* familiesOf(tableName, list[0]?.appProfileId)
      yield* preconditions.checkFamilies(tableName, families, list)
    }
  })
  return { familiesOf, validate }
}

/**
 * The writer's core once built, and whether this run's checkpoints are being committed (`false`
 * while a restore re-runs the stored commits, which only the request metrics count).
 */
interface Run<A, EH, R> {
  core: StagingCore<A, EH, R> | undefined
  live: boolean
}

/** The checkpoint participant: `prepare` hands the staged envelopes over, `commit` checks their tables and commits them. */
const participantOf = <A, EH, R>(
  client: BigtableClientService,
  method: MethodSettings,
  stage: Stage,
  pending: Pending,
  tables: ReturnType<typeof preconditionsOf>,
  run: Run<A, EH, R>
): checkpoint.Participant<envelope.Frozen, WriterError<EH>> => {
  const commitSettings = {
    maxInFlightRequests: method.maxInFlightRequests,
    responseTimeout: method.responseTimeout,
    perDestinationMetrics: method.perDestinationMetrics
  }
  return {
    commitSchema: envelope.Codec,
    prepare: Effect.suspend(() => {
      const { bytes, envelopes } = stage
      stage.envelopes = []
      stage.bytes = 0
      pending.entries = 0
      pending.bytes = 0
      const c = run.core
      const gauges = c === undefined
        ? Effect.void
        : Effect.andThen(c.gauge(metrics.stagedEntries, -envelopes.length), c.gauge(metrics.stagedBytes, -bytes))
      return Effect.as(gauges, envelopes)
    }),
    commit: Effect.fnUntraced(function*(frozen: ReadonlyArray<envelope.Frozen>) {
      if (frozen.length === 0) return
      const envelopes = frozen.map((f) => f.envelope)
      yield* tables.validate(envelopes)
      const done = yield* committer.commit(client, envelopes, commitSettings)
      const c = run.core
      if (!run.live || c === undefined) return
      // this run's records, once each (applied now or found applied), with the serialized size the
      // at-least-once sink counts: the user's entry, without the marker mutation
      for (const e of envelopes) {
        const key = committer.tableKey(e.tableName)
        c.counters.add(key, "recordsWritten", 1)
        c.counters.add(key, "bytesWritten", mutationProto.entryByteSize({ rowKey: e.rowKey, mutations: e.mutations }))
      }
      yield* Metric.update(metrics.recordsSend, done.completed + done.deduplicated)
    }),
    restore: () => Effect.void
  }
}

/**
 * The exactly-once writer, and how many more records its stage can take before a checkpoint must
 * be taken (what the sink form sizes its writes by).
 *
 * @internal
 */
export interface Built<A, EH, P> {
  readonly writer: Writer<A, WriterError<EH> | CheckpointError, P>
  readonly room: () => number
}

/**
 * Builds the exactly-once writer in the current scope: restores from `settings.resume` (the stored
 * envelopes committed again) before the first write.
 *
 * @internal
 */
export const fromSettings = <A, EH, R, P>(
  settings: Settings<A, EH, R, P>
): Effect.Effect<
  Writer<A, WriterError<EH> | CheckpointError, P>,
  WriterError<EH> | CheckpointError,
  BigtableClient | Scope.Scope | R
> => Effect.map(build(settings), (built) => built.writer)

/**
 * {@link fromSettings}, with the room of the stage.
 *
 * @internal
 */
export const build = <A, EH, R, P>(
  settings: Settings<A, EH, R, P>
): Effect.Effect<Built<A, EH, P>, WriterError<EH> | CheckpointError, BigtableClient | Scope.Scope | R> => {
  const resume = settings.resume
  // What the writer keeps is built from settings without the restored record, which only the
  // restore reads (it holds every envelope of the last checkpoint).
  const kept: Settings<A, EH, R, P> = { ...settings, resume: { ...resume, record: Option.none() } }
  return Effect.andThen(contact, Effect.flatMap(partsOf(kept), (parts) => restoreInto(parts, resume))).pipe(
    Effect.provideService(deadline.AdminTimeout, settings.method.adminTimeout),
    Effect.provideService(deadline.ResponseTimeout, settings.method.responseTimeout)
  )
}

/** The writer's parts before the restore: the core writer on the staging admission, and its participant. */
interface Parts<A, EH, R> {
  readonly writer: Writer<A, WriterError<EH>>
  readonly participant: checkpoint.Participant<envelope.Frozen, WriterError<EH>>
  readonly run: Run<A, EH, R>
  readonly room: () => number
}

const partsOf = Effect.fnUntraced(function*<A, EH, R, P>(settings: Settings<A, EH, R, P>) {
  const client = yield* BigtableClient
  const { base, method } = settings
  const stage: Stage = { envelopes: [], bytes: 0 }
  const pending: Pending = { entries: 0, bytes: 0, largest: 0 }
  const run: Run<A, EH, R> = { core: undefined, live: false }
  const writer = yield* core.makeStaging<StagingMethod<A, EH, R>, P>({
    handler: base.handler,
    limits: { maxUnits: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER },
    metrics: {
      recordsSendErrors: metrics.recordsSendErrors,
      recordsSkipped: metrics.recordsSkipped,
      destinationSendErrors: metrics.destinationSendErrors,
      perDestination: method.perDestinationMetrics
    },
    admission: (c: StagingCore<A, EH, R>) => {
      run.core = c
      return makeStaging(settings, stage, pending)(c)
    }
  })
  const tables = preconditionsOf(client, method, base.declared)
  // a fixed table is checked before anything is staged or restored
  if (settings.fixedTable !== undefined) yield* tables.familiesOf(settings.fixedTable.tableName, base.appProfileId)
  const participant = participantOf(client, method, stage, pending, tables, run)
  return { writer, participant, run, room: () => roomOf(method, pending) }
})

const restoreInto = <A, EH, R, P>(
  parts: Parts<A, EH, R>,
  resume: Resume<P>
): Effect.Effect<Built<A, EH, P>, WriterError<EH> | CheckpointError> =>
  Effect.map(
    checkpoint.make({ name: "BigtableSink", writer: parts.writer, resume, participant: parts.participant }),
    (writer) => {
      parts.run.live = true
      return { writer, room: parts.room }
    }
  )
