/**
 * The admin calls the sink makes (CreateTable, GetTable, ModifyColumnFamilies, GetAppProfile), two
 * ways: {@link onChannel} sends hand-encoded requests (`adminProto.ts`) straight on a grpc-js channel
 * in the unary-as-streaming call shape of the data calls (`transport/dataCall.ts`), so the library
 * needs no Google client package for the admin API; {@link fromClients} calls the gapic-shaped
 * clients a caller hands to `BigtableClient.fromClients` (a gapic client, or an in-process fake).
 * Either fails with an `RpcFailed` `BigtableError` naming the method and the resource.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import type {
  AdminClient,
  AppProfileRouting,
  BigtableClientService,
  InstanceAdminClient,
  TableFamilies
} from "../../../Bigtable/BigtableClient.ts"
import type { BigtableError } from "../../../Bigtable/BigtableError.ts"
import type { ColumnFamilyType } from "../../../Bigtable/TableCreateOptions.ts"
import * as deadline from "../../wire/deadline.ts"
import { rpcError } from "../transport/client.ts"
import { encoded, type StartCall } from "../transport/dataCall.ts"
import * as proto from "./adminProto.ts"

/** What the service asks of the admin API: its table calls, and the app profile's routing. @internal */
export interface AdminCalls extends Pick<BigtableClientService, "getTable" | "createTable" | "modifyColumnFamilies"> {
  /** `undefined` without an instance admin API (the emulator; `fromClients` without `instanceAdmin`). */
  readonly getAppProfile: ((name: string) => Effect.Effect<AppProfileRouting, BigtableError>) | undefined
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

/** Whether a `GcRule` message sets a rule (an unset or empty message keeps every cell). */
const hasGcRule = (rule: unknown): boolean => {
  if (!Predicate.isObject(rule)) return false
  const versions = rule["maxNumVersions"]
  return (typeof versions === "number" && versions !== 0) || Predicate.isObject(rule["maxAge"]) ||
    Predicate.isObject(rule["intersection"]) || Predicate.isObject(rule["union"])
}

/** The families of a `Table` message (decoded here, or a gapic client's object). @internal */
export const tableSchema = (table: unknown): TableFamilies => {
  const columnFamilies = new Map<string, ColumnFamilyType | "UNKNOWN">()
  const withGcRule = new Set<string>()
  const families = Predicate.isObject(table) ? table["columnFamilies"] : undefined
  if (Predicate.isObject(families)) {
    for (const [name, family] of Object.entries(families)) {
      columnFamilies.set(name, aggregateType(Predicate.isObject(family) ? family["valueType"] : undefined))
      if (Predicate.isObject(family) && hasGcRule(family["gcRule"])) withGcRule.add(name)
    }
  }
  return { columnFamilies, withGcRule }
}

/** The routing of an `AppProfile` message. @internal */
export const appProfileRouting = (profile: unknown): AppProfileRouting => {
  const single = Predicate.isObject(profile) ? profile["singleClusterRouting"] : undefined
  if (Predicate.isObject(single)) {
    const clusterId = single["clusterId"]
    return {
      _tag: "SingleCluster",
      clusterId: typeof clusterId === "string" ? clusterId : "",
      allowTransactionalWrites: single["allowTransactionalWrites"] === true
    }
  }
  return { _tag: "Other" }
}

/** One admin RPC of a gapic-shaped client: its rejection as the `BigtableError` naming `method` and `target`. */
const promised = <A>(method: string, target: string, call: () => Promise<A>): Effect.Effect<A, BigtableError> =>
  Effect.tryPromise({ try: call, catch: (cause) => rpcError(method, target, cause) })

/** The calls of the clients a caller hands to `BigtableClient.fromClients`. @internal */
export const fromClients = (admin: AdminClient, instanceAdmin: InstanceAdminClient | undefined): AdminCalls => ({
  getTable: (tableName) =>
    promised("GetTable", tableName, () => admin.getTable({ name: tableName, view: "SCHEMA_VIEW" })).pipe(
      Effect.map((response) => tableSchema(response[0]))
    ),
  createTable: (request) =>
    promised("CreateTable", `${request.instanceName}/tables/${request.tableId}`, () =>
      admin.createTable({
        parent: request.instanceName,
        tableId: request.tableId,
        table: { columnFamilies: { ...request.columnFamilies } }
      })).pipe(Effect.asVoid),
  modifyColumnFamilies: (request) =>
    promised("ModifyColumnFamilies", request.tableName, () =>
      admin.modifyColumnFamilies({
        name: request.tableName,
        modifications: Object.entries(request.create).map(([id, create]) => ({ id, create }))
      })).pipe(Effect.map((response) => tableSchema(response[0]))),
  getAppProfile: instanceAdmin === undefined ?
    undefined :
    (name) =>
      promised("GetAppProfile", name, () => instanceAdmin.getAppProfile({ name })).pipe(
        Effect.map((response) => appProfileRouting(response[0]))
      )
})

const tableAdmin = "/google.bigtable.admin.v2.BigtableTableAdmin/"
const instanceAdmin = "/google.bigtable.admin.v2.BigtableInstanceAdmin/"

/**
 * One unary admin call in the data calls' shape: the request bytes, the routing header Google's
 * clients send (`x-goog-request-params`, the resource the call is about), the last response
 * decoded. Interruption cancels the call; its grpc-js deadline is the fiber's `AdminTimeout`.
 */
const unary = <A>(
  start: StartCall,
  method: string,
  resource: { readonly param: "parent" | "name"; readonly value: string; readonly target: string },
  request: Uint8Array,
  decode: (response: Uint8Array) => A
): Effect.Effect<A, BigtableError> =>
  Effect.flatMap(deadline.adminTimeout(undefined), (limit) =>
    Effect.suspend(() => {
      const name = method.slice(method.lastIndexOf("/") + 1)
      const done = Deferred.makeUnsafe<A, BigtableError>()
      const fail = (cause: unknown) => void Deferred.doneUnsafe(done, Exit.fail(rpcError(name, resource.target, cause)))
      let last: Uint8Array | undefined
      const listener = {
        onMessage: (response: Uint8Array) => {
          last = response
        },
        onEnd: (error: unknown) => {
          if (error !== undefined) return fail(error)
          if (last === undefined) return fail(new Error(`${name} ended without a response`))
          try {
            Deferred.doneUnsafe(done, Exit.succeed(decode(last)))
          } catch (cause) {
            fail(cause)
          }
        }
      }
      const routing = `${resource.param}=${encodeURIComponent(resource.value)}`
      return Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(start(method, encoded(request), routing, limit, listener), (cancel) =>
          restore(Deferred.await(done)).pipe(
            Effect.onInterrupt(() => Effect.sync(() => cancel("interrupted")))
          ))
      )
    }))

/**
 * The calls straight on an admin channel (`start`); `withInstanceAdmin` false where no instance
 * admin API exists (the emulator answers UNIMPLEMENTED).
 *
 * @internal
 */
export const onChannel = (start: StartCall, withInstanceAdmin: boolean): AdminCalls => ({
  getTable: (tableName) =>
    unary(
      start,
      `${tableAdmin}GetTable`,
      { param: "name", value: tableName, target: tableName },
      proto.encodeGetTable(tableName),
      (bytes) => tableSchema(proto.decodeTable(bytes))
    ),
  createTable: (request) =>
    unary(
      start,
      `${tableAdmin}CreateTable`,
      {
        param: "parent",
        value: request.instanceName,
        target: `${request.instanceName}/tables/${request.tableId}`
      },
      proto.encodeCreateTable({
        parent: request.instanceName,
        tableId: request.tableId,
        columnFamilies: request.columnFamilies
      }),
      proto.decodeTable
    ).pipe(Effect.asVoid),
  modifyColumnFamilies: (request) =>
    unary(
      start,
      `${tableAdmin}ModifyColumnFamilies`,
      { param: "name", value: request.tableName, target: request.tableName },
      proto.encodeModifyColumnFamilies({ name: request.tableName, create: request.create }),
      (bytes) => tableSchema(proto.decodeTable(bytes))
    ),
  getAppProfile: withInstanceAdmin
    ? (name) =>
      unary(
        start,
        `${instanceAdmin}GetAppProfile`,
        { param: "name", value: name, target: name },
        proto.encodeGetAppProfile(name),
        (bytes) => appProfileRouting(proto.decodeAppProfile(bytes))
      )
    : undefined
})
