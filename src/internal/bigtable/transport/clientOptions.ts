/**
 * `BigtableClientConfig` decoded with `Schema` (from untyped JavaScript or `Config` too), every
 * failure a `SinkConfigError` naming the option as written (`emulator.grpc`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { BigtableClientConfig } from "../../../Bigtable/BigtableClient.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as O from "../../options/schema.ts"
import type { Endpoint } from "../../wire/emulatorEndpoint.ts"

const Emulator = Schema.Struct({ grpc: O.requiredValue(O.Endpoint("emulator.grpc")) })

const Config = Schema.Struct({
  projectId: O.requiredValue(O.Component),
  emulator: O.maybe(Emulator),
  serviceAccountKeyFile: O.maybe(O.RedactedPath),
  exportClientMetrics: O.Bool.pipe(O.withDefault(false)),
  exportClientMetricsToCloudMonitoring: O.Bool.pipe(O.withDefault(false))
})

/** @internal */
export interface Settings {
  readonly projectId: string
  readonly endpoint: Endpoint | undefined
  readonly keyFile: Redacted.Redacted<string> | undefined
  readonly exportClientMetrics: boolean
}

/** @internal */
export const settings = (config: BigtableClientConfig): Effect.Effect<Settings, SinkConfigError> =>
  Effect.gen(function*() {
    const c = yield* O.decode(Config)(config)
    const endpoint = c.emulator?.grpc
    if (c.serviceAccountKeyFile !== undefined && endpoint !== undefined) {
      return yield* O.fail(
        "serviceAccountKeyFile",
        "cannot be combined with emulator: the emulator channel is plaintext and carries no credentials"
      )
    }
    if (c.exportClientMetricsToCloudMonitoring) {
      return yield* O.fail(
        "exportClientMetricsToCloudMonitoring",
        endpoint !== undefined
          ? "must be false with emulator: the emulator has no Cloud Monitoring"
          : "is not supported yet: the sink talks to the Bigtable API directly, without the official client's " +
            "Cloud Monitoring exporter; " +
            "use exportClientMetrics and an Effect metrics exporter"
      )
    }
    return {
      projectId: c.projectId,
      endpoint,
      keyFile: c.serviceAccountKeyFile,
      exportClientMetrics: c.exportClientMetrics
    }
  })

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
