/**
 * Client layers from the environment with `layerConfig`: the same program runs against the local
 * emulators or against GCP. The clients read the emulator variables Google's own clients read
 * (`npm run emulators` prints them), so nothing here names an endpoint:
 *
 *   GOOGLE_CLOUD_PROJECT            project id (required)
 *   BIGTABLE_EMULATOR_HOST          host:port of a Bigtable emulator (unset on GCP)
 *   BIGQUERY_EMULATOR_HOST          host:port of the BigQuery emulator's REST API (unset on GCP)
 *   BIGQUERY_EMULATOR_GRPC_HOST     host:port of its Storage Write API (default: that host, port 9060)
 *   STORAGE_EMULATOR_HOST           http://host:port of a Cloud Storage emulator (file loads; unset on GCP)
 *   EXAMPLE_KEY_FILE                service-account key file (optional; application default credentials otherwise)
 */
import { Config, Layer } from "effect"
import { BigQueryClient } from "effect-gcp-sinks/BigQuery"
import { BigtableClient } from "effect-gcp-sinks/Bigtable"
import { GcsClient } from "effect-gcp-sinks/Sink"

export const projectId = Config.String("GOOGLE_CLOUD_PROJECT")

const keyFile = Config.Redacted("EXAMPLE_KEY_FILE").pipe(Config.withDefault(undefined))

/** Bigtable: the emulator when `BIGTABLE_EMULATOR_HOST` is set, GCP otherwise. */
export const BigtableLive = BigtableClient.layerConfig({ projectId, serviceAccountKeyFile: keyFile })

/** BigQuery: the emulator when `BIGQUERY_EMULATOR_HOST` is set, GCP otherwise. */
export const BigQueryLive = BigQueryClient.layerConfig({ projectId, serviceAccountKeyFile: keyFile })

/** Cloud Storage (file loads, the GCS checkpoint store): the emulator when `STORAGE_EMULATOR_HOST` is set. */
export const GcsLive = GcsClient.layerConfig({ projectId, serviceAccountKeyFile: keyFile })

/** Both clients. */
export const ClientsLive = Layer.mergeAll(BigtableLive, BigQueryLive)
