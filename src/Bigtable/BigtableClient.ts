/**
 * The Bigtable client service: MutateRows over a `@grpc/grpc-js` channel with hand-encoded
 * requests, and the gapic table-admin client (CreateTable, GetTable, ModifyColumnFamilies), for
 * production or the emulator.
 *
 * @since 0.1.0
 */
import type * as grpc from "@grpc/grpc-js"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as clientOptions from "../internal/bigtable/transport/clientOptions.ts"
import * as connect from "../internal/bigtable/transport/connect.ts"
import type { ContactFailed } from "../Sink/ContactFailed.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { BigtableError } from "./BigtableError.ts"
import type { Mutation } from "./Mutation.ts"
import type { RowMutationEntry } from "./RowMutationEntry.ts"
import type { ColumnFamilyType } from "./TableCreateOptions.ts"

/**
 * The settings of the client layer.
 *
 * - `projectId` (required): the default project of the clients.
 * - `emulator`: `{ grpc: "host:port" }` of a Bigtable emulator: plaintext, no credentials, no
 *   metadata-server lookups, no Cloud Monitoring export (BigQuery's is `{ grpc, rest }`). Decoded
 *   when the layer is built: `emulator: null`, `{ grpc: 1 }` are `SinkConfigError`s.
 * - `serviceAccountKeyFile`: path of a service-account JSON key, as `Redacted` (`Redacted.make`,
 *   `Config.Redacted`; a plain string is rejected), instead of application-default credentials;
 *   rejected together with `emulator`. Its path appears in no error or log.
 * - `exportClientMetrics`: record per-RPC client metrics (`bigtable.client.attempts`,
 *   `bigtable.client.latency`, by method and status) through Effect `Metric`; default false.
 * - `exportClientMetricsToCloudMonitoring`: the official client's built-in export to Cloud
 *   Monitoring; default false, and not available in this version (`true` is a `SinkConfigError`).
 *   The sink talks to the Bigtable API directly, without that exporter.
 * - `firstContactTimeout`: how long a writer's first contact with the service may take before the
 *   write fails with a `ContactFailed` reason saying what to do (nothing listening at the endpoint,
 *   an unknown host); default 10 seconds. Missing or refused credentials fail at once. Later
 *   failures of a connection that worked are retried on the write's own budgets.
 * - `transport`: what MutateRows and CheckAndMutateRow run on: `"http2"` (default), the library's own
 *   gRPC data path on `node:http2` (each request encoded once into the buffer it is sent from), or
 *   `"grpc-js"`, `@grpc/grpc-js`, as a fallback. Both do the same on the wire (TLS, credentials,
 *   deadlines, keepalive, proxies from `grpc_proxy`/`https_proxy`/`http_proxy`/`no_proxy`, the same
 *   status codes); the admin calls always use grpc-js.
 *
 * Without `emulator` and `serviceAccountKeyFile`, `BIGTABLE_EMULATOR_HOST` is read through `Config`
 * (the environment by default), as Google's own clients do; an explicit option always wins.
 *
 * @category models
 * @since 0.1.0
 */
export interface BigtableClientConfig {
  readonly projectId: string
  readonly emulator?: { readonly grpc: string } | undefined
  readonly serviceAccountKeyFile?: Redacted.Redacted<string> | undefined
  readonly exportClientMetrics?: boolean | undefined
  readonly exportClientMetricsToCloudMonitoring?: boolean | undefined
  readonly firstContactTimeout?: Duration.Input | undefined
  readonly transport?: "http2" | "grpc-js" | undefined
}

/**
 * The request of one MutateRows call: the table's resource name, the application profile, the
 * entries, and optionally their `RowMutationEntry.byteSize`s when the caller measured them.
 *
 * @category models
 * @since 0.1.0
 */
export interface MutateRowsRequest {
  readonly tableName: string
  readonly appProfileId?: string | undefined
  readonly entries: ReadonlyArray<RowMutationEntry>
  readonly entryByteSizes?: ReadonlyArray<number> | undefined
  /**
   * The call's deadline: unanswered this long, its unanswered entries get `DEADLINE_EXCEEDED`
   * (retried). Default: the sink's `responseTimeout`.
   */
  readonly timeout?: Duration.Duration | undefined
}

/**
 * The outcome of one entry: its gRPC status code (`undefined` when none was reported) and message.
 *
 * @category models
 * @since 0.1.0
 */
export interface EntryStatus {
  readonly code: number | undefined
  readonly message: string
}

/**
 * A garbage-collection rule as the admin API takes it (`google.bigtable.admin.v2.GcRule`): one of
 * `maxNumVersions`, `maxAge` (`{ seconds, nanos }`), or `intersection` / `union` of nested rules.
 * `GcRule` values of `TableCreateOptions` become these.
 *
 * @category models
 * @since 0.1.0
 */
export interface GcRuleProto {
  readonly maxNumVersions?: number | null | undefined
  readonly maxAge?:
    | { readonly seconds?: number | null | undefined; readonly nanos?: number | null | undefined }
    | null
    | undefined
  readonly intersection?: { readonly rules?: ReadonlyArray<GcRuleProto> | null | undefined } | null | undefined
  readonly union?: { readonly rules?: ReadonlyArray<GcRuleProto> | null | undefined } | null | undefined
}

/**
 * A column family's value type as the admin API takes it (`google.bigtable.admin.v2.Type`), the
 * kinds the sink creates: raw bytes, and `aggregateType` over big-endian `int64Type` inputs with
 * one of `sum`, `min`, `max`, `hllppUniqueCount` (an empty object each).
 *
 * @category models
 * @since 0.1.0
 */
export interface ValueTypeProto {
  readonly bytesType?: object | null | undefined
  readonly int64Type?:
    | {
      readonly encoding?: { readonly bigEndianBytes?: object | null | undefined } | null | undefined
    }
    | null
    | undefined
  readonly aggregateType?:
    | {
      readonly inputType?: ValueTypeProto | null | undefined
      readonly sum?: object | null | undefined
      readonly min?: object | null | undefined
      readonly max?: object | null | undefined
      readonly hllppUniqueCount?: object | null | undefined
    }
    | null
    | undefined
}

/**
 * A column family as the admin API takes it: `gcRule` and `valueType` messages, in the plain object
 * form of Google's generated clients (a gapic client accepts it as it is).
 *
 * @category models
 * @since 0.1.0
 */
export interface ColumnFamilyProto {
  readonly gcRule?: GcRuleProto | null | undefined
  readonly valueType?: ValueTypeProto | null | undefined
}

/**
 * The live column families of a table and their value types (`"UNKNOWN"` for a type this version
 * does not know).
 *
 * @category models
 * @since 0.1.0
 */
export interface TableFamilies {
  readonly columnFamilies: ReadonlyMap<string, ColumnFamilyType | "UNKNOWN">
  /** The families that carry a garbage-collection rule (none: every cell is kept). */
  readonly withGcRule?: ReadonlySet<string> | undefined
}

/**
 * One marker-guarded `CheckAndMutateRow` of the exactly-once mode: if the row has no cell
 * `markerFamily:identity`, apply `mutations` and then that marker cell (timestamp 0, value `"1"`)
 * atomically; otherwise apply nothing.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckAndMutateRowRequest {
  readonly tableName: string
  readonly appProfileId?: string | undefined
  readonly rowKey: Uint8Array
  readonly markerFamily: string
  /** 32 lowercase hex characters: the marker's qualifier. */
  readonly identity: string
  readonly mutations: ReadonlyArray<Mutation>
  /** The call's deadline (one attempt). Default: the sink's `responseTimeout`. */
  readonly timeout?: Duration.Duration | undefined
}

/**
 * How an app profile routes writes, as the exactly-once mode checks it: `SingleCluster` with its
 * cluster and whether single-row transactions are allowed, or `Other` (multi-cluster routing).
 *
 * @category models
 * @since 0.1.0
 */
export type AppProfileRouting =
  | { readonly _tag: "SingleCluster"; readonly clusterId: string; readonly allowTransactionalWrites: boolean }
  | { readonly _tag: "Other" }

/**
 * What the service needs of the gapic `v2.BigtableInstanceAdminClient`: `getAppProfile` (the
 * exactly-once mode checks the profile's routing) and `close`.
 *
 * @category models
 * @since 0.1.0
 */
export interface InstanceAdminClient {
  getAppProfile(request: { readonly name: string }): Promise<ReadonlyArray<unknown>>
  close(): Promise<void>
}

/**
 * A server-streaming call as `@grpc/grpc-js` returns it (`ClientReadableStream`), reduced to what
 * the sink uses: `data` with response bytes, `error`, `end`, and `cancel`.
 *
 * @category models
 * @since 0.1.0
 */
export interface DataCall {
  on(event: "data", listener: (response: Buffer) => void): unknown
  on(event: "error", listener: (error: unknown) => void): unknown
  on(event: "end", listener: () => void): unknown
  removeAllListeners(event: "data" | "end"): unknown
  cancel(): void
}

/**
 * What the service needs of the data channel: a `@grpc/grpc-js` `Client` (`new grpc.Client(target,
 * credentials)`) is one. MutateRows is one `makeServerStreamRequest` on
 * `/google.bigtable.v2.Bigtable/MutateRows` whose request and responses are wire bytes (the
 * serializers are the identity); a fake implements the same call in process, answering encoded
 * `MutateRowsResponse` messages.
 *
 * @category models
 * @since 0.1.0
 */
export interface DataClient {
  makeServerStreamRequest(
    method: string,
    serialize: (value: Buffer) => Buffer,
    deserialize: (value: Buffer) => Buffer,
    argument: Buffer,
    metadata: grpc.Metadata,
    options: grpc.CallOptions
  ): DataCall
  close(): void
}

/**
 * What the service needs of the gapic `v2.BigtableTableAdminClient`: `getTable`, `createTable`,
 * `modifyColumnFamilies` and `close`.
 *
 * @category models
 * @since 0.1.0
 */
export interface AdminClient {
  getTable(request: { readonly name: string; readonly view: "SCHEMA_VIEW" }): Promise<ReadonlyArray<unknown>>
  createTable(request: {
    readonly parent: string
    readonly tableId: string
    readonly table: { readonly columnFamilies: { readonly [family: string]: ColumnFamilyProto } }
  }): Promise<ReadonlyArray<unknown>>
  modifyColumnFamilies(request: {
    readonly name: string
    readonly modifications: ReadonlyArray<{ readonly id: string; readonly create: ColumnFamilyProto }>
  }): Promise<ReadonlyArray<unknown>>
  close(): Promise<void>
}

/**
 * What the {@link BigtableClient} service offers the sink: MutateRows and the admin calls table
 * creation needs.
 *
 * @category models
 * @since 0.1.0
 */
export interface BigtableClientService {
  readonly projectId: string
  readonly mutateRows: (request: MutateRowsRequest) => Effect.Effect<ReadonlyArray<EntryStatus>>
  readonly getTable: (tableName: string) => Effect.Effect<TableFamilies, BigtableError>
  readonly createTable: (request: {
    readonly instanceName: string
    readonly tableId: string
    readonly columnFamilies: { readonly [family: string]: ColumnFamilyProto }
  }) => Effect.Effect<void, BigtableError>
  readonly modifyColumnFamilies: (request: {
    readonly tableName: string
    readonly create: { readonly [family: string]: ColumnFamilyProto }
  }) => Effect.Effect<TableFamilies, BigtableError>
  /** One marker-guarded CheckAndMutateRow: `true` when the marker was already there (nothing applied). */
  readonly checkAndMutateRow: (request: CheckAndMutateRowRequest) => Effect.Effect<boolean, BigtableError>
  /**
   * The routing of an app profile (`projects/p/instances/i/appProfiles/a`), or `undefined` when this
   * client cannot ask (the emulator has no instance admin API; `fromClients` without `instanceAdmin`).
   */
  readonly getAppProfile: (name: string) => Effect.Effect<AppProfileRouting | undefined, BigtableError>
  /**
   * Proves the service reachable and the credentials accepted, once per client (a success is kept):
   * every writer runs it before its first request. Absent for clients given to `fromClients`.
   */
  readonly firstContact?: Effect.Effect<void, ContactFailed> | undefined
}

/**
 * The client service.
 *
 * **Details**
 *
 * - `mutateRows`: one call; never fails: every outcome, including a failed or reset call, becomes
 *   a status per entry (unanswered entries get the call's status). Interruption cancels the call.
 * - `getTable`, `createTable`, `modifyColumnFamilies`: the admin calls the sink uses for table
 *   creation, failing with a `BigtableError` whose reason is `RpcFailed`.
 * - `checkAndMutateRow`, `getAppProfile`: what the exactly-once mode sends and checks.
 *
 * **Example** (Providing the client)
 * ```ts
 * import { Effect } from "effect"
 * import { BigtableClient } from "effect-gcp-sinks/Bigtable"
 * declare const program: Effect.Effect<void, never, BigtableClient.BigtableClient>
 * program.pipe(Effect.provide(BigtableClient.layer({ projectId: "p", emulator: { grpc: "127.0.0.1:8086" } })))
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class BigtableClient
  extends Context.Service<BigtableClient, BigtableClientService>()("effect-gcp-sinks/Bigtable/BigtableClient")
{}

/**
 * The service as a layer from clients the caller already has (and closes): a `@grpc/grpc-js`
 * channel and a gapic table-admin client built with custom options, or in-process fakes speaking
 * the same protocol. `projectId` is validated when the layer is built.
 *
 * **Example** (A fake that accepts everything)
 * ```ts
 * import { BigtableClient } from "effect-gcp-sinks/Bigtable"
 * declare const data: BigtableClient.DataClient
 * declare const admin: BigtableClient.AdminClient
 * const layer = BigtableClient.fromClients({ projectId: "p", data, admin })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const fromClients = (options: {
  readonly projectId: string
  readonly data: DataClient
  readonly admin: AdminClient
  readonly instanceAdmin?: InstanceAdminClient | undefined
  readonly exportClientMetrics?: boolean | undefined
}): Layer.Layer<BigtableClient, SinkConfigError> =>
  Layer.effect(
    BigtableClient,
    Effect.map(
      clientOptions.checkClients(options),
      () => BigtableClient.of(connect.fromClients(options))
    )
  )

/**
 * Validates the settings, creates the data channel (plaintext without credentials to an emulator;
 * TLS with Google call credentials to `bigtable.googleapis.com:443` otherwise) in the current scope,
 * and closes it when the scope closes. The gapic admin clients (table admin; instance admin in
 * production) are loaded and created on the first admin call, once, and closed with the same scope:
 * a sink that never calls the admin API (at least once, with its tables in place) never loads them,
 * which keeps their modules out of the process's memory.
 *
 * **Example** (A scoped client)
 * ```ts
 * import { Effect } from "effect"
 * import { BigtableClient } from "effect-gcp-sinks/Bigtable"
 * const client = BigtableClient.make({ projectId: "p", emulator: { grpc: "127.0.0.1:8086" } })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  config: BigtableClientConfig
): Effect.Effect<BigtableClient["Service"], SinkConfigError, Scope.Scope> =>
  Effect.map(connect.make(config), (service) => BigtableClient.of(service))

/**
 * The client as a layer, from plain settings.
 *
 * **Example** (Against the emulator)
 * ```ts
 * import { BigtableClient } from "effect-gcp-sinks/Bigtable"
 * const layer = BigtableClient.layer({ projectId: "p", emulator: { grpc: "127.0.0.1:8086" } })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: BigtableClientConfig): Layer.Layer<BigtableClient, SinkConfigError> =>
  Layer.effect(BigtableClient, make(config))

/**
 * The client as a layer, reading its settings through `Config` (the key file path as `Redacted`).
 *
 * **Example** (From the environment)
 * ```ts
 * import { Config } from "effect"
 * import { BigtableClient } from "effect-gcp-sinks/Bigtable"
 * const layer = BigtableClient.layerConfig({
 *   projectId: Config.String("GCP_PROJECT"),
 *   serviceAccountKeyFile: Config.Redacted("BIGTABLE_KEY_FILE").pipe(Config.withDefault(undefined))
 * })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (
  config: Config.Wrap<BigtableClientConfig>
): Layer.Layer<BigtableClient, Config.ConfigError | SinkConfigError> =>
  Layer.effect(BigtableClient, Effect.flatMap(Config.unwrap(config), make))
