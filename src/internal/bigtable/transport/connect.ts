/**
 * Creating the clients (emulator or production, credentials, channel options) and wrapping them
 * into the service shape, with optional per-RPC client metrics: a `@grpc/grpc-js` channel for
 * the data calls, made straight on it (ADR 0010, 0027), and the gapic table-admin client for the
 * admin calls, created on the first admin call ({@link lazyClient}).
 *
 * @internal
 */
import type { Client as GrpcClient } from "@grpc/grpc-js"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import type {
  AdminClient,
  BigtableClientConfig,
  BigtableClientService,
  EntryStatus,
  InstanceAdminClient
} from "../../../Bigtable/BigtableClient.ts"
import type * as BigtableClient from "../../../Bigtable/BigtableClient.ts"
import type { BigtableError } from "../../../Bigtable/BigtableError.ts"
import { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { Endpoint } from "../../wire/emulatorEndpoint.ts"
import type { HeaderSource } from "../../wire/grpcChannel.ts"
import * as grpc from "../../wire/grpcStatus.ts"
import * as DataPath from "../../wire/http2/dataPath.ts"
import * as metrics from "../metrics.ts"
import * as channel from "./channel.ts"
import * as client from "./client.ts"
import * as clientOptions from "./clientOptions.ts"
import * as dataCall from "./dataCall.ts"
import type { StartCall } from "./dataCall.ts"
import * as http2Call from "./http2Call.ts"

/** The service shape, without the service tag. @internal */
export type Service = BigtableClientService

const instrumentStatuses = (method: string) => <R>(self: Effect.Effect<ReadonlyArray<EntryStatus>, never, R>) =>
  Effect.gen(function*() {
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
      metrics.clientCall(method, e.reason._tag === "RpcFailed" ? e.reason.status : "UNCLASSIFIED", undefined)
    )
  )

/** What the service is made of: the data calls, and the admin clients as effects giving them (created on first use by `make`). */
interface Clients {
  readonly projectId: string
  readonly start: StartCall
  readonly admin: Effect.Effect<AdminClient>
  readonly instanceAdmin?: Effect.Effect<InstanceAdminClient> | undefined
  readonly exportClientMetrics?: boolean | undefined
}

const service = (options: Clients): Service => {
  const { admin, instanceAdmin } = options
  const base: Service = {
    projectId: options.projectId,
    mutateRows: client.mutateRows(options.start),
    getTable: (name) => Effect.flatMap(admin, (raw) => client.getTable(raw)(name)),
    createTable: (request) => Effect.flatMap(admin, (raw) => client.createTable(raw)(request)),
    modifyColumnFamilies: (request) => Effect.flatMap(admin, (raw) => client.modifyColumnFamilies(raw)(request)),
    checkAndMutateRow: client.checkAndMutateRow(options.start),
    getAppProfile: instanceAdmin === undefined
      ? () => Effect.succeed(undefined)
      : (name) => Effect.flatMap(instanceAdmin, (raw) => client.getAppProfile(raw)(name))
  }
  if (options.exportClientMetrics !== true) return base
  return {
    projectId: base.projectId,
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
export const fromClients = (options: Parameters<typeof BigtableClient.fromClients>[0]): Service => {
  const instanceAdmin = options.instanceAdmin
  return service({
    projectId: options.projectId,
    start: dataCall.overClient(options.data),
    admin: Effect.succeed(options.admin),
    instanceAdmin: instanceAdmin === undefined ? undefined : Effect.succeed(instanceAdmin),
    exportClientMetrics: options.exportClientMetrics
  })
}

/** @internal */
export const settings = clientOptions.settings

const scopes = ["https://www.googleapis.com/auth/bigtable.data", "https://www.googleapis.com/auth/bigtable.admin.table"]

const keyFileAuth = (path: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const fs = yield* Effect.promise(() => import("node:fs/promises"))
    const text = yield* Effect.tryPromise({
      try: () => fs.readFile(Redacted.value(path), "utf8"),
      // The cause names the path (ENOENT, EACCES): it is dropped, like the path itself.
      catch: () => new SinkConfigError({ path: "serviceAccountKeyFile", message: "cannot read the key file" })
    })
    const key = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: () => new SinkConfigError({ path: "serviceAccountKeyFile", message: "the key file is not JSON" })
    })
    const email = typeof key === "object" && key !== null && "client_email" in key ? key.client_email : undefined
    const privateKey = typeof key === "object" && key !== null && "private_key" in key ? key.private_key : undefined
    if (typeof email !== "string" || typeof privateKey !== "string") {
      return yield* new SinkConfigError({
        path: "serviceAccountKeyFile",
        message: "the key file has no client_email and private_key (is it a service-account key?)"
      })
    }
    const auth = yield* Effect.promise(() => import("google-auth-library"))
    // A JWT client, not `keyFilename`: google-auth-library 11 logs a deprecation warning for the latter.
    return new auth.JWT({ email, key: privateKey, scopes })
  })

const close = (name: string, c: { close(): Promise<void> }) =>
  Effect.tryPromise(() => c.close()).pipe(
    Effect.catch((cause) => Effect.logWarning(`closing the Bigtable ${name} client failed`, cause))
  )

/**
 * A client created by `create` on the first evaluation of the returned effect, once: concurrent
 * first calls share one creation and every later call gets the same client (a creation that dies
 * is not retried). The creation runs in a fiber of the current scope, so a caller interrupted
 * while it runs leaves it to finish for the next. A created client is closed when that scope
 * closes (at once if it closed during the creation); one never created costs nothing and is not
 * closed.
 *
 * `make` creates the admin clients this way: their modules (google-gax, protobufjs and the admin
 * API's descriptors) add 45-55 MB of RSS at load and held the sink's peak RSS while streaming
 * some 150 MB higher (BENCHMARKS.md, "Bigtable sink"), though the at-least-once sink calls the
 * admin API only to repair a missing table or family.
 *
 * @internal
 */
export const lazyClient = <C extends { close(): Promise<void> }>(
  name: string,
  create: Effect.Effect<C>
): Effect.Effect<Effect.Effect<C>, never, Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) =>
    Effect.map(
      Effect.cached(
        Effect.forkIn(Scope.provide(Effect.acquireRelease(create, (c) => close(name, c)), scope), scope)
      ),
      (creation) => Effect.flatMap(creation, Fiber.join)
    ))

/**
 * The gapic clients alone (`@google-cloud/bigtable`'s `v2`, generated by gapic-generator-typescript):
 * the package's main module also loads its handwritten wrapper with googleapis, the Cloud Monitoring
 * exporter and the OpenTelemetry SDK, another ~25 MB of RSS and ~0.4 s the sink never uses. The
 * path is a file inside the package (it has no `exports` map), so a test pins it: a version that
 * moves it fails the unit tests, not a user's first admin call.
 *
 * @internal
 */
export const gapic = Effect.map(
  Effect.promise(() => import("@google-cloud/bigtable/build/src/v2/index.js")),
  (module) => module.default
)

/** Where a client's data calls go: an emulator (plaintext, no credentials) or production (TLS, `auth`). @internal */
export type DataTarget =
  | { readonly _tag: "emulator"; readonly endpoint: Endpoint }
  | { readonly _tag: "production"; readonly auth: HeaderSource }

/**
 * The data calls of a client made here, on `transport` (ADR 0036): our HTTP/2 data path, or grpc-js
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
      return http2Call.overHttp2(open())
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
export const make = (config: BigtableClientConfig): Effect.Effect<Service, SinkConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const s = yield* settings(config)
    const grpcJs = yield* Effect.promise(() => import("@grpc/grpc-js"))
    const base = {
      projectId: s.projectId,
      // Fixed, so that no client asks the metadata server for its universe.
      universeDomain: "googleapis.com",
      "grpc.keepalive_time_ms": 30_000,
      "grpc.keepalive_timeout_ms": 10_000
    }
    const endpoint = s.endpoint
    const jwt = s.serviceAccountKeyFile === undefined ? undefined : yield* keyFileAuth(s.serviceAccountKeyFile)
    const adminOptions = endpoint !== undefined
      ? {
        ...base,
        servicePath: endpoint.host,
        apiEndpoint: endpoint.host,
        port: endpoint.port,
        sslCreds: grpcJs.credentials.createInsecure()
      }
      : jwt !== undefined
      ? { ...base, authClient: jwt }
      : base
    const target: DataTarget = endpoint !== undefined ? { _tag: "emulator", endpoint } : {
      _tag: "production",
      auth: jwt ?? (yield* Effect.map(
        Effect.promise(() => import("google-auth-library")),
        (library) => new library.GoogleAuth({ scopes, projectId: s.projectId })
      ))
    }
    const start = yield* dataCalls(s.transport, target)
    const admin = yield* lazyClient(
      "table admin",
      Effect.map(gapic, (v2) => new v2.BigtableTableAdminClient(adminOptions))
    )
    // The emulator has no instance admin API (pinned by a test): app profiles are not checked there.
    const instanceAdmin = endpoint !== undefined ? undefined : yield* lazyClient(
      "instance admin",
      Effect.map(gapic, (v2) => new v2.BigtableInstanceAdminClient(adminOptions))
    )
    return service({
      projectId: s.projectId,
      start,
      admin,
      instanceAdmin,
      exportClientMetrics: s.exportClientMetrics
    })
  })
