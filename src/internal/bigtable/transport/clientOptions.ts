/**
 * `BigtableClientConfig` decoded with `Schema` (from untyped JavaScript or `Config` too), every
 * failure a `SinkConfigError` naming the option as written (`emulator.grpc`).
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { BigtableClientConfig } from "../../../Bigtable/BigtableClient.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as O from "../../options/schema.ts"
import type { Endpoint } from "../../wire/emulatorEndpoint.ts"
import * as firstContact from "../../wire/firstContact.ts"
import * as DataPath from "../../wire/http2/dataPath.ts"

const Emulator = Schema.Struct({ grpc: O.requiredValue(O.Endpoint) })

/** @internal */
export interface Settings {
  readonly projectId: string
  readonly endpoint: Endpoint | undefined
  readonly serviceAccountKeyFile: Redacted.Redacted<string> | undefined
  readonly exportClientMetrics: boolean
  readonly firstContactTimeout: Duration.Duration
  readonly transport: DataPath.Transport
}

/** Cloud Monitoring export is refused: not built yet, and without meaning against the emulator. */
const noCloudMonitoring = Schema.makeFilter(
  (c: { readonly exportClientMetricsToCloudMonitoring: boolean; readonly emulator: unknown }) =>
    !c.exportClientMetricsToCloudMonitoring || {
      path: ["exportClientMetricsToCloudMonitoring"],
      issue: c.emulator !== undefined
        ? "must be false with emulator: the emulator has no Cloud Monitoring"
        : "is not supported yet: the sink talks to the Bigtable API directly, without the official client's " +
          "Cloud Monitoring exporter; " +
          "use exportClientMetrics and an Effect metrics exporter"
    }
)

const Config = Schema.Struct({
  projectId: O.requiredValue(O.Component),
  emulator: O.maybe(Emulator),
  serviceAccountKeyFile: O.maybe(O.RedactedPath),
  exportClientMetrics: O.Bool.pipe(O.withDefault(false)),
  exportClientMetricsToCloudMonitoring: O.Bool.pipe(O.withDefault(false)),
  firstContactTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(firstContact.defaultTimeout)),
  transport: O.literals(DataPath.transports).pipe(O.withDefault(DataPath.defaultTransport))
})

/** `BigtableClientConfig` decoded to the settings, the rules across options checked. */
const SettingsSchema = Config.check(
  O.noKeyFileWithEmulator("the emulator channel is plaintext and carries no credentials"),
  noCloudMonitoring
).pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is Settings => O.isRecord(u) && Predicate.isString(u.projectId)),
  SchemaTransformation.transform({
    decode: (c): Settings => ({
      projectId: c.projectId,
      endpoint: c.emulator?.grpc,
      serviceAccountKeyFile: c.serviceAccountKeyFile,
      exportClientMetrics: c.exportClientMetrics,
      firstContactTimeout: c.firstContactTimeout,
      transport: c.transport
    }),
    encode: (s: Settings): typeof Config.Type => ({
      projectId: s.projectId,
      emulator: s.endpoint === undefined ? undefined : { grpc: s.endpoint },
      serviceAccountKeyFile: s.serviceAccountKeyFile,
      exportClientMetrics: s.exportClientMetrics,
      exportClientMetricsToCloudMonitoring: false,
      firstContactTimeout: s.firstContactTimeout,
      transport: s.transport
    })
  })
))

/** @internal */
export const settings = (config: BigtableClientConfig): Effect.Effect<Settings, SinkConfigError> =>
  O.decode(SettingsSchema)(config)

const isObject = (u: unknown): u is object => O.isRecord(u)

const Clients = Schema.Struct({
  projectId: O.requiredValue(O.Component),
  data: O.requiredValue(O.guard(isObject, "a DataClient (a grpc-js Client)")),
  admin: O.requiredValue(O.guard(isObject, "an AdminClient (the gapic BigtableTableAdminClient)")),
  instanceAdmin: O.maybe(O.guard(isObject, "an InstanceAdminClient (the gapic BigtableInstanceAdminClient)")),
  exportClientMetrics: O.Bool.pipe(O.withDefault(false))
})

/** Checks the arguments of `BigtableClient.fromClients`. @internal */
export const checkClients = (options: unknown): Effect.Effect<void, SinkConfigError> =>
  Effect.asVoid(O.decode(Clients)(options))
