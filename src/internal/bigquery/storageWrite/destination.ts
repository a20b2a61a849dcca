/**
 * Per-table state: the batch being filled, the schema and descriptor in force, the connection
 * slot; opened lazily (proving the table exists, creating it under `CREATE_IF_NEEDED`), evicted
 * when idle and clean (cf. Go's `managed_stream.go`). Repairs of a table met on the append path
 * (creation, schema reconciliation) are the writer core's (`core/repairs.ts`, once per incident).
 *
 * **Details**
 *
 * The mutable fields of {@link Destination} belong to the writer fiber. The connection slot is
 * shared with the appends (on fibers, or started at once on the owner through `ready`); it
 * serializes its changes with a one-permit `Semaphore`, so a broken connection is reopened once
 * however many appends saw it.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Semaphore from "effect/Semaphore"
import * as AdditionalFields from "../../../BigQuery/AdditionalFields.ts"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import {
  BigQueryError,
  RequestRejected,
  RetriesExhausted,
  SchemaMismatch,
  TableAdminFailed
} from "../../../BigQuery/BigQueryError.ts"
import type { CdcTableOptions } from "../../../BigQuery/CdcTableOptions.ts"
import { descriptorOf } from "../../../BigQuery/RowSerializer.ts"
import * as TableCreateOptions from "../../../BigQuery/TableCreateOptions.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import { toScheduleOf } from "../../core/retrySchedule.ts"
import * as O from "../../options/schema.ts"
import type { DeadlineKeeper } from "../../wire/deadlineKeeper.ts"
import { name as codeName } from "../../wire/grpcStatus.ts"
import * as CdcOptions from "../cdc/options.ts"
import * as CdcProvision from "../cdc/provision.ts"
import { encodeDescriptor } from "../encoding/descriptor.ts"
import type { Settings } from "../options.ts"
import * as tables from "../schema/tables.ts"
import * as schemaUpdate from "../schema/update.ts"
import * as AppendChannels from "../transport/appendChannels.ts"
import * as Connection from "../transport/connection.ts"
import type { SendBacklog } from "../transport/sendBacklog.ts"
import * as Split from "./split.ts"
import { classifyOpen, tableNotFound } from "./verdict.ts"

/** The connection in force for a destination, reopened on demand. @internal */
export interface ConnectionSlot {
  /** The current connection if it is healthy and has `descriptor`, else a new one. */
  readonly acquire: (descriptor: Uint8Array) => Effect.Effect<Connection.Connection>
  /**
   * The current connection if it is healthy and has `descriptor`, without waiting (an append started
   * on no fiber); else `undefined`, and the append acquires one on a fiber.
   */
  readonly ready: (descriptor: Uint8Array) => Connection.Connection | undefined
  /** Half-closes `connection` if it is still current, so the next acquire opens a new one. */
  readonly retire: (connection: Connection.Connection) => Effect.Effect<void>
  /** Cancels `connection` (no response came), current or already retired: its waiting appends fail and are retried. */
  readonly abort: (connection: Connection.Connection, reason: string) => Effect.Effect<void>
  /** Ends the current connection; a later `acquire` opens none (it is interrupted). */
  readonly close: Effect.Effect<void>
}

/**
 * A destination's connection slot; each connection it opens takes a place on one of the client's
 * channels (appendChannels.ts), given back when the connection's call ends.
 *
 * @internal
 */
export const makeSlot = (
  channel: grpc.Client,
  writeStream: string,
  backlog: SendBacklog
): Effect.Effect<ConnectionSlot> =>
  Effect.map(Semaphore.make(1), (lock) => {
    let current: Connection.Connection | undefined
    // The writer closes its slots before it interrupts the append fibers: one waking from a
    // reconnect wait in between must not open a stream nobody would close.
    let closed = false
    const locked = lock.withPermits(1)
    const drop = (connection: Connection.Connection, f: Effect.Effect<void>) =>
      locked(Effect.suspend(() => {
        if (current !== connection) return Effect.void
        current = undefined
        return f
      }))
    // `current` changes only in synchronous blocks under the lock, so `ready` reads it without the
    // lock: while the lock's holder opens a new connection, `current` is one it refuses (broken, or
    // of another descriptor)
    const ready = (descriptor: Uint8Array): Connection.Connection | undefined =>
      !closed && current !== undefined && !current.isBroken() && current.descriptor === descriptor ? current : undefined
    return {
      acquire: (descriptor) =>
        locked(Effect.suspend(() => {
          if (closed) return Effect.interrupt
          const healthy = ready(descriptor)
          if (healthy !== undefined) return Effect.succeed(healthy)
          const old = current
          return Effect.tap(
            Effect.andThen(
              old === undefined ? Effect.void : old.close,
              Effect.suspend(() =>
                Connection.open(AppendChannels.of(channel).lease(), writeStream, descriptor, backlog)
              )
            ),
            (connection) => Effect.sync(() => void (current = connection))
          )
        })),
      ready,
      retire: (connection) => drop(connection, connection.close),
      // a retired connection is cancelled too: half-closed, it could still deliver what it holds
      abort: (connection, reason) =>
        locked(Effect.suspend(() => {
          if (current === connection) current = undefined
          return connection.abort(reason)
        })),
      close: locked(Effect.suspend(() => {
        const old = current
        current = undefined
        closed = true
        return old === undefined ? Effect.void : old.close
      }))
    }
  })

/**
 * What a writer's destinations share: the batch buffers, the send backlog of their connections, and
 * the keeper of their appends' response deadlines (one fiber for all of them, on the writer's clock).
 *
 * @internal
 */
export interface Shared {
  readonly pool: Split.Pool
  readonly backlog: SendBacklog
  readonly deadlines: DeadlineKeeper
}

/** One open destination. Mutable fields belong to the writer fiber. @internal */
export interface Destination {
  readonly destination: TableDestination
  readonly key: string
  readonly slot: ConnectionSlot
  /** The writer's keeper of response deadlines (`Shared.deadlines`). */
  readonly deadlines: DeadlineKeeper
  batch: Split.Batch
  schema: TableSchema.TableSchema
  descriptor: Uint8Array
  fingerprint: unknown
  lastUsedMillis: number
  inFlight: number
  /**
   * The appends `appendNow.start` declined, run on fibers, until each is written (or over,
   * unwritten): an append is started at once only while there are none, so none overtakes one.
   */
  onFibers: number
  /** What the rows of `batch` took of the in-flight bytes permit (given back with the batch). */
  permitBytes: number
  /** The projection stamp of `batch`'s rows (projection.ts): an own cut comes off the projection only while it is current. */
  batchStamp: number
  /** The barrier generation of `batch`'s rows (`Accounted.generation`, one per batch), its request's once sealed. */
  batchGeneration: number
  /** The service pushed a new table schema: re-read the serializer's before the next batch. */
  schemaPushed: boolean
}

/** The schema, descriptor and fingerprint a destination's rows are written with. @internal */
export interface PreparedSchema {
  readonly schema: TableSchema.TableSchema
  readonly descriptor: Uint8Array
  readonly fingerprint: unknown
}

/**
 * Prepares a destination's schema: the serializer's, extended with the additional fields
 * (`AdditionalFields.extendSchema`). An additional field colliding with a column of the
 * serializer's schema for this destination is terminal (reference 2.13: a configuration conflict,
 * not routable): a `SchemaMismatch` naming the destination and the field.
 *
 * @internal
 */
export const readSchema = Effect.fnUntraced(function*<A, E, R>(
  settings: Settings<A, E, R>,
  destination: TableDestination
): Effect.fn.Return<PreparedSchema, BigQueryError | SerializerThrew> {
  const serializer = settings.serializer
  const additional = settings.additionalFields
  const base = yield* userCall(
    "tableSchema",
    () => (additional === undefined ? serializer : settings.baseSerializer).tableSchema(destination)
  )
  const schema = additional === undefined
    ? base
    : yield* AdditionalFields.extendSchema(additional, base).pipe(
      Effect.mapError((e) =>
        new BigQueryError({
          reason: new SchemaMismatch({
            destination: destination.toString(),
            detail: e.message,
            cause: e
          })
        })
      )
    )
  if (settings.cdc !== undefined) {
    yield* cdcCollision(destination, schema)
    // a provider that fails is reported by the table's provisioning, with its own method name
    const options = yield* Effect.option(settings.cdc.tableOptions(destination))
    if (Option.isSome(options)) {
      yield* cdcPrimaryKey(destination, options.value, schema)
    }
  }
  return {
    schema,
    descriptor: yield* userCall("descriptor", () => encodeDescriptor(descriptorOf(serializer, destination))),
    fingerprint: yield* userCall("fingerprint", () => serializer.fingerprint?.(destination))
  }
})

/** A physical column named like a CDC pseudocolumn: terminal, as an additional field's collision. */
const cdcCollision = (destination: TableDestination, schema: TableSchema.TableSchema) =>
  Effect.mapError(
    CdcOptions.checkSchema(schema, "serializer"),
    (e) =>
      new BigQueryError({
        reason: new SchemaMismatch({ destination: destination.toString(), detail: e.message, cause: e })
      })
  )

/** A primary-key column the schema lacks: terminal, a `SchemaMismatch` naming the column. */
const cdcPrimaryKey = (destination: TableDestination, options: CdcTableOptions, schema: TableSchema.TableSchema) =>
  Effect.mapError(
    CdcOptions.checkPrimaryKey(options, schema, "writeMethod.cdc.tableOptions.primaryKey"),
    (e) =>
      new BigQueryError({
        reason: new SchemaMismatch({ destination: destination.toString(), detail: e.message, cause: e })
      })
  )

/**
 * A serializer's schema call (`tableSchema`, `descriptor`, `fingerprint`) threw while a destination
 * was opened or its schema re-read: the record that needed it is routed, as a record whose
 * serializer threw is.
 *
 * @internal
 */
export class SerializerThrew extends Data.TaggedError("SerializerThrew")<{
  readonly stage: "tableSchema" | "descriptor" | "fingerprint"
  readonly cause: unknown
}> {}

const userCall = <X>(stage: SerializerThrew["stage"], f: () => X): Effect.Effect<X, SerializerThrew> =>
  Effect.try({ try: f, catch: (cause) => new SerializerThrew({ stage, cause }) })

/**
 * The REST fragments of the creation options for a destination, whose table would have `schema`.
 * The options (a function's result included) are validated with `TableCreateOptions.make` and
 * `TableCreateOptions.checkSchema` first: invalid ones are terminal, a `TableAdminFailed` naming
 * the destination and the option, and no table is requested.
 *
 * @internal
 */
export const createResource = Effect.fnUntraced(
  function*<A, E, R>(settings: Settings<A, E, R>, destination: TableDestination, schema: TableSchema.TableSchema) {
    const options = yield* TableCreateOptions.make(settings.createOptions(destination), "tableCreateOptions")
    yield* TableCreateOptions.checkSchema(options, schema, "tableCreateOptions")
    // a CDC table is created with its primary key and contract label, whichever path creates it
    const cdc = settings.cdc === undefined ? undefined : CdcProvision.createFieldsOf(
      yield* settings.cdc.tableOptions(destination)
    )
    if (settings.cdc !== undefined && cdc === undefined) {
      return yield* O.fail("writeMethod.cdc.tableOptions.primaryKey", "is needed to create a CDC table")
    }
    return { ...TableCreateOptions.toRest(options), ...cdc }
  },
  (effect, _settings, destination): Effect.Effect<tables.CreateResource, BigQueryError> =>
    effect.pipe(
      Effect.mapError((e) =>
        new BigQueryError({
          reason: new TableAdminFailed({
            method: "tables.insert",
            destination: destination.toString(),
            status: 0,
            detail: `invalid creation options: ${e.message}`,
            cause: e
          })
        })
      )
    )
)

/**
 * The repair a verdict asks for on the append path, run by the core's repair engine once per incident.
 *
 * - `createTable`: the table is created unless `tables.get` finds it. NOT_FOUND can outlive a
 *   creation (the service catches up after the insert): such answers are re-appended on the recovery
 *   budget, not met with another insert each. A `tables.get` that fails (a permission the job lacks,
 *   a transport error past the budget) is not an answer: the insert is tried and reports its own error.
 * - `updateSchema` (extra fields, schema updates enabled): the table's schema reconciled with the
 *   rows' (`schema/update.ts`).
 *
 * @internal
 */
export const repairTable = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: TableDestination,
  schema: TableSchema.TableSchema,
  kind: "createTable" | "updateSchema"
): Effect.Effect<void, BigQueryError> => {
  const recovery = settings.stream.recovery
  if (kind === "updateSchema") {
    return Effect.asVoid(schemaUpdate.reconcile({
      rest: client.rest,
      destination,
      desired: schema,
      options: settings.schemaUpdate,
      createDisposition: settings.createDisposition,
      createResource: createResource(settings, destination, schema),
      recovery
    }))
  }
  return Effect.gen(function*() {
    const live = yield* tables.retrying(tables.get(client.rest, destination), recovery, destination).pipe(
      Effect.orElseSucceed(() => undefined)
    )
    if (live !== undefined) return
    const resource = yield* createResource(settings, destination, schema)
    yield* tables.create(client.rest, destination, schema, resource, recovery)
  })
}

/**
 * Opens a destination: `GetWriteStream` on its `_default` stream; a missing table is created
 * under `CREATE_IF_NEEDED` (terminal under `CREATE_NEVER`); transient failures are retried on the
 * recovery budget (`maxAttempts` attempts in all; the attempt right after the creation is not counted).
 *
 * @internal
 */
export const open = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: TableDestination,
  nowMillis: number,
  shared: Shared
): Effect.Effect<Destination, BigQueryError | SerializerThrew> =>
  openWith(
    settings,
    destination,
    nowMillis,
    shared,
    (schema) =>
      provisionCdc(client, settings, destination, schema).pipe(
        Effect.andThen(untilTable(
          client,
          settings,
          destination,
          schema,
          Connection.getWriteStream(client.write, destination.defaultStream)
        )),
        Effect.andThen(makeSlot(client.write, destination.defaultStream, shared.backlog))
      )
  )

/** A CDC table's contract, complete before the appender opens (re-verified on each reopening). */
const provisionCdc = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: TableDestination,
  schema: TableSchema.TableSchema
): Effect.Effect<void, BigQueryError> =>
  settings.cdc === undefined ? Effect.void : CdcProvision.provision(client, settings.cdc, destination, {
    createDisposition: settings.createDisposition,
    recovery: settings.stream.recovery,
    create: (fields) =>
      Effect.flatMap(
        createResource(settings, destination, schema),
        (resource) =>
          tables.create(client.rest, destination, schema, { ...resource, ...fields }, settings.stream.recovery)
      )
  })

/**
 * Opens a destination whose connection `connect` provides, once the schema is read: `open` proves
 * the table and connects to `_default`; the exactly-once mode creates or restores a buffered stream.
 *
 * @internal
 */
export const openWith = Effect.fnUntraced(function*<A, E, R>(
  settings: Settings<A, E, R>,
  destination: TableDestination,
  nowMillis: number,
  shared: Shared,
  connect: (schema: TableSchema.TableSchema) => Effect.Effect<ConnectionSlot, BigQueryError>
): Effect.fn.Return<Destination, BigQueryError | SerializerThrew> {
  const { descriptor, fingerprint, schema } = yield* readSchema(settings, destination)
  const slot = yield* connect(schema)
  return {
    destination,
    key: destination.toString(),
    slot,
    deadlines: shared.deadlines,
    batch: Split.empty(shared.pool),
    schema,
    descriptor,
    fingerprint,
    lastUsedMillis: nowMillis,
    inFlight: 0,
    onFibers: 0,
    permitBytes: 0,
    batchStamp: 0,
    batchGeneration: 0,
    schemaPushed: false
  }
})

const openError = (
  method: string,
  destination: TableDestination,
  failure: Connection.StreamFailure,
  attempts: number | undefined
): BigQueryError => {
  const common = {
    method,
    destination: destination.toString(),
    code: codeName(failure.code),
    detail: failure.message,
    cause: failure.cause
  }
  return new BigQueryError({
    reason: attempts === undefined ? new RequestRejected(common) : new RetriesExhausted({ ...common, attempts })
  })
}

/**
 * Runs `rpc` (`GetWriteStream` on `_default`, or `CreateWriteStream`) until it succeeds: a missing
 * table is created once under `CREATE_IF_NEEDED` (terminal under `CREATE_NEVER`), transient failures
 * retried on the recovery budget, anything else terminal. The attempt after the creation follows at
 * once, outside the budget.
 *
 * @internal
 */
export const untilTable = <A, E, R, X>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: TableDestination,
  schema: TableSchema.TableSchema,
  rpc: Effect.Effect<X, Connection.StreamFailure>,
  method = "GetWriteStream"
): Effect.Effect<X, BigQueryError> =>
  Effect.suspend(() => {
    const context = { schemaUpdatesEnabled: false, createDisposition: settings.createDisposition }
    let created = false
    let attempts = 0
    const attempt: Effect.Effect<X, BigQueryError | Connection.StreamFailure> = Effect.catch(rpc, (failure) => {
      attempts++
      const verdict = classifyOpen(failure.code, context)
      if (verdict._tag === "createTable" && !created) {
        created = true
        // the table is created once, then asked for again at once, outside the budget
        return createResource(settings, destination, schema).pipe(
          Effect.flatMap((resource) =>
            tables.create(client.rest, destination, schema, resource, settings.stream.recovery)
          ),
          Effect.andThen(Effect.suspend(() => attempt))
        )
      }
      if (verdict._tag === "fail" && verdict.kind === "tableNotFound") {
        return Effect.fail(
          tableNotFound(destination.toString(), settings.createDisposition, failure.message, failure.cause)
        )
      }
      if (verdict._tag !== "retry" && verdict._tag !== "createTable") {
        return Effect.fail(openError(method, destination, failure, undefined))
      }
      return Effect.fail(failure)
    })
    // the schedule's input is each failure as the error the open ends with if it stops there
    const typed = (e: BigQueryError | Connection.StreamFailure) =>
      e instanceof BigQueryError ? e : openError(method, destination, e, attempts)
    return attempt.pipe(
      Effect.retry({
        schedule: toScheduleOf(settings.stream.recovery, typed),
        while: (e) => !(e instanceof BigQueryError)
      }),
      Effect.mapError(typed),
      // a table the sink did not create is checked against the serializer's schema (schema/check.ts)
      Effect.tap(() => created ? Effect.void : tables.verify(client.rest, destination, schema, settings))
    )
  })
