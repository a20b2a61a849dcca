/**
 * The BigQuery clients a sink writes through: the Storage Write API gRPC channel and the REST
 * client, for production (ADC or a key file) or for an emulator.
 *
 * @since 0.1.0
 */
import type { BigQuery } from "@google-cloud/bigquery"
import type * as grpc from "@grpc/grpc-js"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as datasets from "../internal/bigquery/schema/datasets.ts"
import * as internal from "../internal/bigquery/transport/client.ts"
import type { ContactFailed } from "../Sink/ContactFailed.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"
import type { BigQueryError } from "./BigQueryError.ts"
import * as TableDestination from "./TableDestination.ts"

/**
 * The settings of a {@link BigQueryClient}.
 *
 * - `projectId`: the project the clients bill to and whose tables are named without one.
 * - `location`: the BigQuery location (`US`, `europe-west1`); optional, forwarded to the REST client.
 * - `serviceAccountKeyFile`: path of a service-account JSON key, as `Redacted` (`Redacted.make`,
 *   `Config.Redacted`; a plain string is rejected); default application credentials. It is read
 *   when the layer is built; neither its path nor its contents appear in errors or logs.
 * - `emulator`: `{ grpc, rest }` endpoints as `host:port` (parsed with `EmulatorEndpoint.parse`):
 *   plaintext gRPC, REST with a static token, no metadata-server lookups. Rejected together with a
 *   key file.
 * - `appendStreamsPerChannel`: how many AppendRows streams (one per live destination) one HTTP/2
 *   connection carries before another is opened; default 90, below the 100 concurrent streams
 *   Google's front ends allow (a stream past the server's limit would wait forever).
 * - `firstContactTimeout`: how long a writer's first contact with the service may take before the
 *   write fails with a `ContactFailed` reason saying what to do (nothing listening at the endpoint,
 *   an unknown host); default 10 seconds. Missing or refused credentials fail at once. Later
 *   failures of a connection that worked are retried on the write's own budgets.
 * - `transport`: what the AppendRows streams run on: `"http2"` (default), the library's own gRPC
 *   data path on `node:http2` (each request framed once, in the buffer it is sent from), or
 *   `"grpc-js"`, `@grpc/grpc-js`, as a fallback. Both do the same on the wire (TLS, credentials,
 *   keepalive, proxies from `grpc_proxy`/`https_proxy`/`http_proxy`/`no_proxy`, the same status codes);
 *   unary calls (`GetWriteStream`, `FlushRows`, ...) always use grpc-js. `fromClients` uses the
 *   caller's channel, so grpc-js.
 *
 * Without `emulator` and `serviceAccountKeyFile`, the standard emulator variables are read through
 * `Config` (the environment by default): `BIGQUERY_EMULATOR_HOST` (the REST endpoint, `host:port`
 * or `http://host:port`) and `BIGQUERY_EMULATOR_GRPC_HOST` (Storage Write; default: that host on
 * port 9060, the emulators' default). An explicit option always wins.
 *
 * @category models
 * @since 0.1.0
 */
export interface BigQueryClientConfig {
  readonly projectId: string
  readonly location?: string | undefined
  readonly serviceAccountKeyFile?: Redacted.Redacted<string> | undefined
  readonly emulator?: {
    readonly grpc: string
    readonly rest: string
  } | undefined
  readonly appendStreamsPerChannel?: number | undefined
  readonly firstContactTimeout?: Duration.Input | undefined
  readonly transport?: "http2" | "grpc-js" | undefined
}

/**
 * The clients of one project: `write` is the Storage Write API channel (`@grpc/grpc-js`), `rest`
 * the `@google-cloud/bigquery` client used for tables and jobs. `emulator` is true when they talk to
 * bqemulator (`layer({ emulator })`): the exactly-once writer then allows for its known deviations
 * (its `FlushRows` offset is exclusive, making the rows below it visible where BigQuery's is
 * inclusive, and a repeated flush answers `OUT_OF_RANGE`).
 *
 * @category models
 * @since 0.1.0
 */
export interface BigQueryClientService {
  readonly projectId: string
  readonly location: string | undefined
  readonly write: grpc.Client
  readonly rest: BigQuery
  readonly emulator?: boolean | undefined
  /**
   * Proves the service reachable and the credentials accepted, once per client (a success is kept):
   * every writer runs it before its first request. Absent for clients given to `fromClients`.
   */
  readonly firstContact?: Effect.Effect<void, ContactFailed> | undefined
}

/**
 * The BigQuery clients as a service; sinks require it.
 *
 * **Example** (Against the emulator)
 * ```ts
 * import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
 * const layer = BigQueryClient.layer({
 *   projectId: "test-project",
 *   emulator: { grpc: "127.0.0.1:9060", rest: "127.0.0.1:9050" }
 * })
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class BigQueryClient extends Context.Service<BigQueryClient, BigQueryClientService>()(
  "effect-gcp-sinks/BigQuery/BigQueryClient"
) {}

/**
 * Builds the clients after validating `config`; the gRPC channel is closed with the scope.
 *
 * **Details**
 *
 * Fails with a `SinkConfigError` before any I/O: a blank or malformed `projectId`, a blank
 * `location`, an endpoint that is not `host:port` (`emulator.grpc`, `emulator.rest`), a key file
 * together with an emulator, an unreadable key file.
 *
 * **Example** (Building the service)
 * ```ts
 * import { Effect } from "effect"
 * import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
 * const program = Effect.scoped(BigQueryClient.make({ projectId: "my-project", location: "EU" }))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  config: BigQueryClientConfig
): Effect.Effect<BigQueryClientService, SinkConfigError, Scope.Scope> =>
  Effect.map(internal.make(config), (service) => BigQueryClient.of(service))

/**
 * The service from plain settings.
 *
 * **Example** (Production with a key file)
 * ```ts
 * import { Redacted } from "effect"
 * import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
 * const layer = BigQueryClient.layer({ projectId: "p", serviceAccountKeyFile: Redacted.make("/secrets/sa.json") })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: BigQueryClientConfig): Layer.Layer<BigQueryClient, SinkConfigError> =>
  Layer.effect(BigQueryClient, make(config))

/**
 * The service from `Config`s (environment by default); read the key file path with
 * `Config.Redacted`.
 *
 * **Example** (From the environment)
 * ```ts
 * import { Config } from "effect"
 * import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
 * const layer = BigQueryClient.layerConfig({
 *   projectId: Config.String("GCP_PROJECT"),
 *   serviceAccountKeyFile: Config.Redacted("GCP_KEY_FILE")
 * })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (
  config: Config.Wrap<BigQueryClientConfig>
): Layer.Layer<BigQueryClient, Config.ConfigError | SinkConfigError> =>
  Layer.effect(BigQueryClient, Effect.flatMap(Config.unwrap(config), make))

/**
 * The service from clients the caller built: a `@grpc/grpc-js` `Client` for the Storage Write API
 * (a plaintext one to an in-process fake, say) and a `@google-cloud/bigquery` client. The caller
 * keeps ownership: they are not closed with the layer.
 *
 * **Example** (A fake server)
 * ```ts
 * import { BigQuery } from "@google-cloud/bigquery"
 * import * as grpc from "@grpc/grpc-js"
 * import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
 * const layer = BigQueryClient.fromClients({
 *   projectId: "p",
 *   write: new grpc.Client("127.0.0.1:50051", grpc.credentials.createInsecure()),
 *   rest: new BigQuery({ projectId: "p", apiEndpoint: "http://127.0.0.1:9050" })
 * })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const fromClients = (clients: {
  readonly projectId: string
  readonly location?: string | undefined
  readonly write: grpc.Client
  readonly rest: BigQuery
}): Layer.Layer<BigQueryClient, SinkConfigError> =>
  Layer.effect(BigQueryClient, Effect.map(internal.fromClients(clients), (service) => BigQueryClient.of(service)))

/**
 * Creates a dataset of the client's project unless it exists (another creator winning the race is
 * success), in `location` or else the client's. The sinks create tables but never datasets.
 *
 * **When to use**
 *
 * Once, before a first write to a new dataset: in a setup step, a test, or a quick start.
 *
 * **Example** (Creating the dataset a sink writes to)
 * ```ts
 * import { Effect } from "effect"
 * import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
 * const setup = BigQueryClient.createDataset("web").pipe(
 *   Effect.provide(BigQueryClient.layer({ projectId: "my-project" }))
 * )
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const createDataset = (
  datasetId: string,
  options?: { readonly location?: string | undefined } | undefined
): Effect.Effect<void, BigQueryError | SinkConfigError, BigQueryClient> =>
  Effect.flatMap(
    TableDestination.make({ projectId: "p", datasetId, tableId: "t" }, "createDataset"),
    () =>
      BigQueryClient.use((client) =>
        datasets.create(client.rest, client.projectId, datasetId, options?.location ?? client.location)
      )
  )
