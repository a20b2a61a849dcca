/**
 * Client layers from the environment with `layerConfig`: the same program runs against the local
 * emulators (`npm run emulators` prints the variables) or against GCP.
 *
 *   EXAMPLE_PROJECT                 GCP project id (required)
 *   EXAMPLE_BIGTABLE_EMULATOR       host:port of a Bigtable emulator (optional)
 *   EXAMPLE_BIGQUERY_EMULATOR_GRPC  host:port of the BigQuery Storage Write emulator (optional, with _REST)
 *   EXAMPLE_BIGQUERY_EMULATOR_REST  host:port of the BigQuery REST emulator
 *   EXAMPLE_KEY_FILE                service-account key file (optional; application default credentials otherwise)
 */
import { Config, Layer } from "effect"
import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
import { BigtableClient } from "effect-gcp-sinks/Bigtable"

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  config.pipe(Config.withDefault(undefined))

export const projectId = Config.String("EXAMPLE_PROJECT")

const keyFile = optional(Config.Redacted("EXAMPLE_KEY_FILE"))

/** Bigtable: the emulator when `EXAMPLE_BIGTABLE_EMULATOR` is set, GCP otherwise. */
export const BigtableLive = BigtableClient.layerConfig({
  projectId,
  emulator: Config.all({ grpc: Config.String("EXAMPLE_BIGTABLE_EMULATOR") }).pipe(Config.withDefault(undefined)),
  serviceAccountKeyFile: keyFile
})

/** BigQuery: the emulator's two endpoints when both are set, GCP otherwise. */
export const BigQueryLive = BigQueryClient.layerConfig({
  projectId,
  serviceAccountKeyFile: keyFile,
  emulator: Config.all({
    grpc: Config.String("EXAMPLE_BIGQUERY_EMULATOR_GRPC"),
    rest: Config.String("EXAMPLE_BIGQUERY_EMULATOR_REST")
  }).pipe(Config.withDefault(undefined))
})

/** Both clients. */
export const ClientsLive = Layer.mergeAll(BigtableLive, BigQueryLive)
