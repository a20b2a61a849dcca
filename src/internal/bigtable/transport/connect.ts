/**
 * Creating the clients (emulator or production, credentials, channel options) and wrapping them
 * into the service shape, with optional per-RPC client metrics: a `@grpc/grpc-js` channel for
 * the data calls, made straight on it, and one for the admin calls, whose requests are encoded by
 * hand too (`admin/adminCalls.ts`): no Google client package is loaded.
 *
 * @internal
 */
import type { Client as GrpcClient } from "@grpc/grpc-js"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { BigtableClientConfig, BigtableClientService, EntryStatus } from "../../../Bigtable/BigtableClient.ts"
import type * as BigtableClient from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, RpcFailed } from "../../../Bigtable/BigtableError.ts"
import type { ContactFailed } from "../../../Sink/ContactFailed.ts"
import { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as advice from "../../wire/advice.ts"
import type { Endpoint } from "../../wire/emulatorEndpoint.ts"
import * as emulatorEnv from "../../wire/emulatorEnv.ts"
import * as firstContact from "../../wire/firstContact.ts"
import * as grpcChannel from "../../wire/grpcChannel.ts"
import type { HeaderSource } from "../../wire/grpcChannel.ts"
import * as grpcProbe from "../../wire/grpcProbe.ts"
import * as grpc from "../../wire/grpcStatus.ts"
import * as DataPath from "../../wire/http2/dataPath.ts"
import * as adminCalls from "../admin/adminCalls.ts"
import * as metrics from "../metrics.ts"
import * as channel from "./channel.ts"
import * as client from "./client.ts"
import * as clientOptions from "./clientOptions.ts"
import * as dataCall from "./dataCall.ts"
import type { StartCall } from "./dataCall.ts"
import { onChannel } from "./directCall.ts"
import * as http2Call from "./http2Call.ts"

/** The service shape, without the service tag. @internal */
export type Service = BigtableClientService

const instrumentStatuses = (method: string) =>
  Effect.fnUntraced(function*<R>(self: Effect.Effect<ReadonlyArray<EntryStatus>, never, R>) {
    const [duration, statuses] = yield* Effect.timed(self)
    const code = statuses.find((s) => s.code !== 0)?.code ?? 0
    yield* metrics.clientCall(method, grpc.name(code), duration)
    return statuses
  })

const instrumentAdmin = (method: string) => <A, R>(self: Effect.Effect<A, BigtableError, R>) =>
  Effect.timed(self).pipe(
    Effect.tap(([duration]) => metrics.clientCall(method, "OK", duration)),
    Effect.map(([, a]) => a),
    Effect.tapError((e) =>
      metrics.clientCall(method, e.reason._tag === "BigtableRpcFailed" ? e.reason.status : "UNCLASSIFIED", undefined)
    )
  )

/** What the service is made of: the data calls and the admin calls. */
interface Clients {
  readonly projectId: string
  readonly start: StartCall
  readonly admin: adminCalls.AdminCalls
  readonly exportClientMetrics?: boolean | undefined
  readonly firstContact?: Effect.Effect<void, ContactFailed> | undefined
}

/** A refused permission's status with what to grant appended. */
const advisedStatus = (status: EntryStatus): EntryStatus =>
  status.code === grpc.Code.PERMISSION_DENIED
    ? { code: status.code, message: advice.append(status.message, advice.bigtablePermission) }
    : status

/** A failed call with what to do appended: refused permissions, or (`missing`) a `NOT_FOUND` answer. */
const advised = (missing?: (reason: RpcFailed) => string) => (error: BigtableError): BigtableError => {
  const reason = error.reason
  if (reason._tag !== "BigtableRpcFailed") return error
  const what = reason.code === grpc.Code.PERMISSION_DENIED
    ? advice.bigtablePermission
    : reason.code === grpc.Code.NOT_FOUND && missing !== undefined
    ? missing(reason)
    : undefined
  return what === undefined
    ? error
    : new BigtableError({
      reason: new RpcFailed({
        method: reason.method,
        table: reason.table,
        code: reason.code,
        description: advice.append(reason.description, what),
        attempts: reason.attempts,
        cause: reason.cause
      })
    })
}

/** Statuses with advice appended to refused permissions. */
const advisedStatuses = (statuses: Array<EntryStatus>): Array<EntryStatus> =>
  statuses.some((s) => s.code === grpc.Code.PERMISSION_DENIED) ? statuses.map(advisedStatus) : statuses

/** The fiber-less MutateRows of the services this module built (without exported client metrics). */
const startsNow = new WeakMap<Service, client.MutateRowsNow>()

/**
 * `service`'s MutateRows started on no fiber of its own (`client.mutateRowsNow`), giving the statuses its
 * `mutateRows` gives: `undefined` for a service this module did not build (a caller's, a test's
 * wrapper), one exporting client metrics, or one whose transport cannot start a call synchronously.
 *
 * @internal
 */
export const mutateRowsNowOf = (service: Service): client.MutateRowsNow | undefined => startsNow.get(service)

const service = (options: Clients): Service => {
  const { admin } = options
  const getAppProfile = admin.getAppProfile
  const checkAndMutate = client.checkAndMutateRow(options.start)
  const mutate = client.mutateRows(options.start)
  const base: Service = {
    projectId: options.projectId,
    mutateRows: (request) => Effect.map(mutate(request), advisedStatuses),
    getTable: (name) => Effect.mapError(admin.getTable(name), advised()),
    createTable: (request) =>
      Effect.mapError(
        admin.createTable(request),
        advised(() => advice.bigtableInstanceMissing(request.instanceName))
      ),
    modifyColumnFamilies: (request) => Effect.mapError(admin.modifyColumnFamilies(request), advised()),
    checkAndMutateRow: (request) => Effect.mapError(checkAndMutate(request), advised()),
    getAppProfile: getAppProfile === undefined
      ? () => Effect.undefined
      : (name) => Effect.mapError(getAppProfile(name), advised()),
    firstContact: options.firstContact
  }
  if (options.exportClientMetrics !== true) {
    const now = client.mutateRowsNow(options.start)
    if (now !== undefined) {
      startsNow.set(
        base,
        (request, limit, at, deliver) =>
          now(request, limit, at, (statuses, expired) => deliver(advisedStatuses(statuses), expired))
      )
    }
    return base
  }
  return {
    projectId: base.projectId,
    firstContact: base.firstContact,
    mutateRows: (request) => instrumentStatuses("MutateRows")(base.mutateRows(request)),
    getTable: (name) => instrumentAdmin("GetTable")(base.getTable(name)),
    createTable: (request) => instrumentAdmin("CreateTable")(base.createTable(request)),
    modifyColumnFamilies: (request) => instrumentAdmin("ModifyColumnFamilies")(base.modifyColumnFamilies(request)),
    checkAndMutateRow: (request) => instrumentAdmin("CheckAndMutateRow")(base.checkAndMutateRow(request)),
    getAppProfile: (name) => instrumentAdmin("GetAppProfile")(base.getAppProfile(name))
  }
}

/**
 * The service over clients the caller has (`BigtableClient.fromClients`): the data calls through
 * `data.makeServerStreamRequest`, so a grpc-js `Client`'s interceptors and a fake's behaviour apply.
 *
 * @internal
 */
export const fromClients = (options: Parameters<typeof BigtableClient.fromClients>[0]): Service =>
  service({
    projectId: options.projectId,
    start: dataCall.overClient(options.data),
    admin: adminCalls.fromClients(options.admin, options.instanceAdmin),
    exportClientMetrics: options.exportClientMetrics
  })

/** @internal */
export const settings = clientOptions.settings

// data, table admin, and instance admin (GetAppProfile) under one token
const scopes = [
  "https://www.googleapis.com/auth/bigtable.data",
  "https://www.googleapis.com/auth/bigtable.admin.table",
  "https://www.googleapis.com/auth/bigtable.admin.instance"
]

const keyFileAuth = Effect.fnUntraced(function*(path: Redacted.Redacted<string>) {
  const fs = yield* Effect.promise(() => import("node:fs/promises"))
  const text = yield* Effect.tryPromise({
    try: () => fs.readFile(Redacted.value(path), "utf8"),
    // The cause names the path (ENOENT, EACCES): it is dropped, like the path itself.
    catch: () => new SinkConfigError({ path: "serviceAccountKeyFile", detail: "cannot read the key file" })
  })
  const key = yield* Effect.try({
    try: (): unknown => JSON.parse(text),
    catch: () => new SinkConfigError({ path: "serviceAccountKeyFile", detail: "the key file is not JSON" })
  })
  const email = typeof key === "object" && key !== null && "client_email" in key ? key.client_email : undefined
  const privateKey = typeof key === "object" && key !== null && "private_key" in key ? key.private_key : undefined
  if (typeof email !== "string" || typeof privateKey !== "string") {
    return yield* new SinkConfigError({
      path: "serviceAccountKeyFile",
      detail: "the key file has no client_email and private_key (is it a service-account key?)"
    })
  }
  const auth = yield* Effect.promise(() => import("google-auth-library"))
  // A JWT client, not `keyFilename`: google-auth-library 11 logs a deprecation warning for the latter.
  return new auth.JWT({ email, key: privateKey, scopes })
})

/** The production admin endpoint (table and instance admin). @internal */
export const adminTarget = "bigtableadmin.googleapis.com:443"

const adminChannels = grpcChannel.serviceChannels(adminTarget, "Bigtable admin")

/** A channel closed with the scope (creating one connects nothing: it connects on its first call). */
const scopedChannel = (open: () => GrpcClient): Effect.Effect<GrpcClient, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(open), (c) => Effect.sync(() => c.close()))

/** A probe's unary call in the data calls' shape (`grpcProbe.ts`): the request after the free bytes. */
const overStart = (start: StartCall): grpcProbe.StartUnary => (method, request, routing, timeout, onEnd) =>
  Effect.map(
    start(method, dataCall.encoded(request), routing, timeout, { onMessage: () => {}, onEnd }),
    (cancel) => cancel
  )

/** Where the channels go: plaintext to an emulator, or TLS with call credentials to Google. */
type Destination =
  | { readonly _tag: "Emulator"; readonly endpoint: Endpoint }
  | { readonly _tag: "Production"; readonly auth: channel.HeaderSource }

const destination = Effect.fnUntraced(function*(
  s: clientOptions.Settings
): Effect.fn.Return<Destination, SinkConfigError> {
  if (s.endpoint !== undefined) return { _tag: "Emulator", endpoint: s.endpoint }
  if (s.serviceAccountKeyFile !== undefined) {
    return { _tag: "Production", auth: yield* keyFileAuth(s.serviceAccountKeyFile) }
  }
  // the standard variable, read only when no option says where to go
  const fromEnv = yield* emulatorEnv.bigtable
  if (fromEnv !== undefined) return { _tag: "Emulator", endpoint: fromEnv }
  const library = yield* Effect.promise(() => import("google-auth-library"))
  return { _tag: "Production", auth: new library.GoogleAuth({ scopes, projectId: s.projectId }) }
})

/** Where a client's data calls go: an emulator (plaintext, no credentials) or production (TLS, `auth`). @internal */
export type DataTarget =
  | { readonly _tag: "emulator"; readonly endpoint: Endpoint }
  | { readonly _tag: "production"; readonly auth: HeaderSource }

/**
 * The data calls of a client made here, on `transport` (ADR 0043): our HTTP/2 data path, or grpc-js
 * straight on a channel that is renewed after a call past its deadline (`channel.ts`). The channels
 * are closed with the scope.
 *
 * @internal
 */
export const dataCalls = (
  transport: DataPath.Transport,
  target: DataTarget
): Effect.Effect<StartCall, never, Scope.Scope> => {
  // After a call past its deadline, later calls go on a new channel of its own connection (channel.ts).
  const opener = (separate: boolean): GrpcClient =>
    target._tag === "emulator"
      ? channel.emulatorChannel(target.endpoint, separate)
      : channel.productionChannel(target.auth, separate)
  return Effect.gen(function*() {
    if (transport === "http2") {
      const open = yield* DataPath.opener(
        target._tag === "emulator"
          ? { target: target.endpoint.target, tls: undefined }
          : {
            target: channel.dataTarget,
            tls: { extraRoots: [] },
            auth: { source: target.auth, service: "Bigtable", url: serviceUrl }
          }
      )
      return yield* http2Call.overHttp2(open())
    }
    const data = yield* Effect.acquireRelease(
      Effect.sync(() => channel.renewing(opener(false), () => opener(true))),
      (c) => Effect.sync(() => c.close())
    )
    return data.start
  })
}

/** The gRPC service whose URL call credentials are asked for (as grpc-js builds it). */
const serviceUrl = "https://bigtable.googleapis.com/google.bigtable.v2.Bigtable"

/** @internal */
export const make = Effect.fnUntraced(function*(
  config: BigtableClientConfig
): Effect.fn.Return<Service, SinkConfigError, Scope.Scope> {
  const s = yield* settings(config)
  const to = yield* destination(s)
  const start = yield* dataCalls(
    s.transport,
    to._tag === "Emulator" ? { _tag: "emulator", endpoint: to.endpoint } : { _tag: "production", auth: to.auth }
  )
  const admin = yield* scopedChannel(() =>
    to._tag === "Emulator" ? adminChannels.emulator(to.endpoint) : adminChannels.production(to.auth)
  )
  const target: firstContact.Target = {
    service: "Bigtable",
    destination: to._tag === "Emulator" ? to.endpoint.target : channel.dataTarget,
    emulator: to._tag === "Emulator"
      ? { option: "emulator.grpc", variable: emulatorEnv.variables.bigtable }
      : undefined
  }
  const ping = grpcProbe.bigtable(overStart(start), s.projectId)
  // production: the credentials are proved before any network call
  const probe = to._tag === "Emulator" ? ping : firstContact.andThen(
    firstContact.credentialsAttempt(to.auth, "Bigtable"),
    ping
  )
  return service({
    projectId: s.projectId,
    start,
    // The emulator has no instance admin API (pinned by a test): app profiles are not checked there.
    admin: adminCalls.onChannel(onChannel(admin.getChannel()), to._tag === "Production"),
    exportClientMetrics: s.exportClientMetrics,
    firstContact: yield* firstContact.once(firstContact.probe(target, probe, s.firstContactTimeout))
  })
})
