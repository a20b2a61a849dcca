/**
 * The driver edge of the Bigtable client: the gapic data and table-admin clients turned into
 * Effects. MutateRows (server streaming, one status per entry) folds every outcome into per-entry
 * statuses; admin calls fail with a classified `BigtableError`.
 *
 * @internal
 */
import type { protos } from "@google-cloud/bigtable"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { BigtableError, RpcFailed } from "../../Bigtable/BigtableError.ts"
import type { ColumnFamilyType } from "../../Bigtable/TableCreateOptions.ts"
import * as grpc from "../grpcStatus.ts"
import type { ProtoEntry } from "./mutationProto.ts"

/**
 * The call options every MutateRows carries. gax wraps server-streaming calls in `retry-request`,
 * which by default re-sends the whole request twice on any stream error (after ~6 s of backoff),
 * invisibly: the writer owns retries (per entry, by status), so that layer is switched off.
 *
 * @internal
 */
export interface CallOptions {
  readonly retryRequestOptions?: { readonly retries?: number; readonly noResponseRetries?: number } | undefined
}

/** @internal */
export const mutateRowsCallOptions: CallOptions = { retryRequestOptions: { retries: 0, noResponseRetries: 0 } }

/** A readable stream as gax returns it for server-streaming calls. @internal */
export interface RawStream {
  on(event: "data", listener: (response: unknown) => void): unknown
  on(event: "error", listener: (error: unknown) => void): unknown
  on(event: "end", listener: () => void): unknown
  removeAllListeners(event: "data" | "end"): unknown
  cancel?: (() => void) | undefined
}

/** What the sink needs of the gapic `v2.BigtableClient`. @internal */
export interface RawDataClient {
  mutateRows(request: protos.google.bigtable.v2.IMutateRowsRequest, options?: CallOptions): RawStream
  close(): Promise<void>
}

/** What the sink needs of the gapic `v2.BigtableTableAdminClient`. @internal */
export interface RawAdminClient {
  getTable(request: protos.google.bigtable.admin.v2.IGetTableRequest): Promise<ReadonlyArray<unknown>>
  createTable(request: protos.google.bigtable.admin.v2.ICreateTableRequest): Promise<ReadonlyArray<unknown>>
  modifyColumnFamilies(
    request: protos.google.bigtable.admin.v2.IModifyColumnFamiliesRequest
  ): Promise<ReadonlyArray<unknown>>
  close(): Promise<void>
}

/** @internal */
export interface RawMutateRowsRequest {
  readonly tableName: string
  readonly appProfileId?: string | undefined
  readonly entries: ReadonlyArray<ProtoEntry>
}

/** A column family as the admin API takes it (GC rule, value type). @internal */
export type ColumnFamilyProto = protos.google.bigtable.admin.v2.IColumnFamily

/** The outcome of one entry of a MutateRows call. `code` is `undefined` when none was reported. @internal */
export interface EntryStatus {
  readonly code: number | undefined
  readonly message: string
}

/** The live families of a table and their value types. @internal */
export interface TableSchema {
  readonly columnFamilies: ReadonlyMap<string, ColumnFamilyType | "UNKNOWN">
}

const missing: EntryStatus = { code: undefined, message: "MutateRows ended without a status for this entry" }

/**
 * One MutateRows call. An entry gets the status the server streamed for it; entries left without
 * one when the call fails get the call's status (so a reset connection reads as `UNAVAILABLE` for
 * exactly the unanswered entries). Interruption cancels the call.
 *
 * @internal
 */
export const mutateRows = (raw: RawDataClient) => (request: RawMutateRowsRequest): Effect.Effect<Array<EntryStatus>> =>
  Effect.callback<Array<EntryStatus>>((resume) => {
    const statuses: Array<EntryStatus | undefined> = Array.from({ length: request.entries.length })
    let done = false
    const finish = (fill: EntryStatus) => {
      if (done) return
      done = true
      resume(Effect.succeed(statuses.map((status) => status ?? fill)))
    }
    let stream: RawStream
    try {
      stream = raw.mutateRows({
        tableName: request.tableName,
        entries: [...request.entries],
        ...(request.appProfileId === undefined ? {} : { appProfileId: request.appProfileId })
      }, mutateRowsCallOptions)
    } catch (cause) {
      finish(grpc.fromError(cause))
      return
    }
    stream.on("data", (response) => readEntries(response, statuses))
    // Stays attached after completion: a cancelled gax stream may still emit 'error' (CANCELLED),
    // which must not become an unhandled error event; once `done` it has no one left to tell.
    stream.on("error", (error) => finish(grpc.fromError(error)))
    stream.on("end", () => finish(missing))
    return Effect.sync(() => {
      if (done) return
      done = true
      stream.removeAllListeners("data")
      stream.removeAllListeners("end")
      stream.cancel?.()
    })
  })

const readEntries = (response: unknown, statuses: Array<EntryStatus | undefined>): void => {
  if (!Predicate.isObject(response) || !Array.isArray(response["entries"])) return
  for (const entry of response["entries"] as ReadonlyArray<unknown>) {
    if (!Predicate.isObject(entry)) continue
    const index = Number(entry["index"] ?? 0)
    if (!Number.isInteger(index) || index < 0 || index >= statuses.length) continue
    const status = entry["status"]
    if (Predicate.isObject(status)) {
      const code = Predicate.isNumber(status["code"]) ? status["code"] : 0
      const message = Predicate.isString(status["message"]) ? status["message"] : ""
      statuses[index] = { code, message }
    } else {
      statuses[index] = { code: 0, message: "" }
    }
  }
}

/** @internal */
export const rpcError = (method: string, table: string, cause: unknown, attempts = 1): BigtableError => {
  const status = grpc.fromError(cause)
  return new BigtableError({
    reason: new RpcFailed({ method, table, code: status.code, description: status.message, attempts, cause })
  })
}

const aggregateType = (valueType: unknown): ColumnFamilyType | "UNKNOWN" => {
  if (!Predicate.isObject(valueType)) return "RAW"
  const aggregate = valueType["aggregateType"]
  if (!Predicate.isObject(aggregate)) return Object.keys(valueType).length === 0 ? "RAW" : "UNKNOWN"
  if (aggregate["sum"] != null) return "INT64_SUM"
  if (aggregate["min"] != null) return "INT64_MIN"
  if (aggregate["max"] != null) return "INT64_MAX"
  if (aggregate["hllppUniqueCount"] != null) return "INT64_HLL"
  return "UNKNOWN"
}

/** The families of a `Table` message. @internal */
export const tableSchema = (table: unknown): TableSchema => {
  const columnFamilies = new Map<string, ColumnFamilyType | "UNKNOWN">()
  const families = Predicate.isObject(table) ? table["columnFamilies"] : undefined
  if (Predicate.isObject(families)) {
    for (const [name, family] of Object.entries(families)) {
      columnFamilies.set(name, aggregateType(Predicate.isObject(family) ? family["valueType"] : undefined))
    }
  }
  return { columnFamilies }
}

/** @internal */
export const getTable = (raw: RawAdminClient) => (tableName: string): Effect.Effect<TableSchema, BigtableError> =>
  Effect.tryPromise({
    try: () => raw.getTable({ name: tableName, view: "SCHEMA_VIEW" }),
    catch: (cause) => rpcError("GetTable", tableName, cause)
  }).pipe(Effect.map((response) => tableSchema(response[0])))

/** @internal */
export const createTable = (raw: RawAdminClient) =>
(request: {
  readonly instanceName: string
  readonly tableId: string
  readonly columnFamilies: { readonly [family: string]: ColumnFamilyProto }
}): Effect.Effect<void, BigtableError> =>
  Effect.tryPromise({
    try: () =>
      raw.createTable({
        parent: request.instanceName,
        tableId: request.tableId,
        table: { columnFamilies: { ...request.columnFamilies } }
      }),
    catch: (cause) => rpcError("CreateTable", `${request.instanceName}/tables/${request.tableId}`, cause)
  }).pipe(Effect.asVoid)

/** @internal */
export const modifyColumnFamilies = (raw: RawAdminClient) =>
(request: {
  readonly tableName: string
  readonly create: { readonly [family: string]: ColumnFamilyProto }
}): Effect.Effect<TableSchema, BigtableError> =>
  Effect.tryPromise({
    try: () =>
      raw.modifyColumnFamilies({
        name: request.tableName,
        modifications: Object.entries(request.create).map(([id, create]) => ({ id, create }))
      }),
    catch: (cause) => rpcError("ModifyColumnFamilies", request.tableName, cause)
  }).pipe(Effect.map((response) => tableSchema(response[0])))
