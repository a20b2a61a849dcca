/**
 * The Cloud Storage client that `CheckpointStore.gcs` keeps checkpoints with: production
 * (application default credentials or a key file) or an emulator such as fake-gcs-server.
 *
 * @since 0.1.0
 */
import type { Storage } from "@google-cloud/storage"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as internal from "../internal/wire/gcsClient.ts"
import type { SinkConfigError } from "./SinkConfigError.ts"

/**
 * The settings of a {@link GcsClient}.
 *
 * - `projectId`: the project the client bills to.
 * - `serviceAccountKeyFile`: path of a service-account JSON key, as `Redacted`; default application
 *   credentials. Read when the layer is built; its path and contents appear in no error or log.
 * - `emulator`: `{ rest }`, the emulator's `host:port` (parsed with `EmulatorEndpoint.parse`): plain
 *   HTTP, no credentials, no metadata-server lookups. Rejected together with a key file.
 *
 * @category models
 * @since 0.1.0
 */
export interface GcsClientConfig {
  readonly projectId: string
  readonly serviceAccountKeyFile?: Redacted.Redacted<string> | undefined
  readonly emulator?: {
    readonly rest: string
  } | undefined
}

/**
 * The client of one project: a `@google-cloud/storage` `Storage`.
 *
 * @category models
 * @since 0.1.0
 */
export interface GcsClientService {
  readonly projectId: string
  readonly storage: Storage
}

/**
 * The Cloud Storage client as a service; `CheckpointStore.gcs` requires it.
 *
 * **Example** (Against fake-gcs-server)
 * ```ts
 * import { GcsClient } from "effect-gcp-sinks/Sink"
 * const layer = GcsClient.layer({ projectId: "test-project", emulator: { rest: "127.0.0.1:4443" } })
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class GcsClient extends Context.Service<GcsClient, GcsClientService>()("effect-gcp-sinks/Sink/GcsClient") {}

/**
 * Builds the client after validating `config`.
 *
 * **Details**
 *
 * Fails with a `SinkConfigError` before any I/O: a blank or malformed `projectId`, an endpoint that is
 * not `host:port` (`emulator.rest`), a key file together with an emulator, an unreadable key file.
 * The client's own retries are off: `CheckpointStore.gcs` retries on its own schedule.
 *
 * **Example** (Building the service)
 * ```ts
 * import { Effect } from "effect"
 * import { GcsClient } from "effect-gcp-sinks/Sink"
 * const program = GcsClient.make({ projectId: "my-project" })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: GcsClientConfig): Effect.Effect<GcsClientService, SinkConfigError> =>
  Effect.map(internal.make(config), (service) => GcsClient.of(service))

/**
 * The service from plain settings.
 *
 * **Example** (Production with application default credentials)
 * ```ts
 * import { GcsClient } from "effect-gcp-sinks/Sink"
 * const layer = GcsClient.layer({ projectId: "my-project" })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: GcsClientConfig): Layer.Layer<GcsClient, SinkConfigError> =>
  Layer.effect(GcsClient, make(config))

/**
 * The service from `Config`s (environment by default).
 *
 * **Example** (From the environment)
 * ```ts
 * import { Config } from "effect"
 * import { GcsClient } from "effect-gcp-sinks/Sink"
 * const layer = GcsClient.layerConfig({ projectId: Config.String("GCP_PROJECT") })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (
  config: Config.Wrap<GcsClientConfig>
): Layer.Layer<GcsClient, Config.ConfigError | SinkConfigError> =>
  Layer.effect(GcsClient, Effect.flatMap(Config.unwrap(config), make))

/**
 * The service from a `Storage` client the caller built (its own retries, credentials and endpoint
 * stay as the caller set them).
 *
 * **Example** (A client you already have)
 * ```ts
 * import { Storage } from "@google-cloud/storage"
 * import { GcsClient } from "effect-gcp-sinks/Sink"
 * const layer = GcsClient.fromStorage({ projectId: "p", storage: new Storage({ projectId: "p" }) })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const fromStorage = (
  clients: { readonly projectId: string; readonly storage: Storage }
): Layer.Layer<GcsClient, SinkConfigError> =>
  Layer.effect(GcsClient, Effect.map(internal.fromStorage(clients), (service) => GcsClient.of(service)))
