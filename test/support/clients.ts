/**
 * The official Google clients, pointed at the emulators: loopback only, no credentials, no metadata-server
 * probes, closed when the scope closes. For smoke tests and for setting up or inspecting state around the
 * library under test (the library itself is always built through its public constructors).
 */
import { BigQuery } from "@google-cloud/bigquery"
import { managedwriter } from "@google-cloud/bigquery-storage"
import { Bigtable } from "@google-cloud/bigtable"
import { Storage } from "@google-cloud/storage"
import * as grpc from "@grpc/grpc-js"
import { Effect, type Scope } from "effect"
import { OAuth2Client } from "google-auth-library"
import type { BigQueryEndpoint, BigtableEndpoint, GcsEndpoint } from "./emulators.ts"

// Belt and braces next to globalSetup: google-auth-library must not look for a GCE metadata server.
process.env.METADATA_SERVER_DETECTION ??= "none"

/** Stops gax clients from asking the auth library (and so the metadata server) for the universe domain. */
const UNIVERSE_DOMAIN = "googleapis.com"

/** A short unique suffix for resource names, so concurrent tests never share a table, dataset or bucket. */
export const uniqueId = (prefix: string): string => `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`

/** Bigtable data + admin client on the emulator. Client-side metrics are off: they export to production. */
export const bigtable = (
  endpoint: BigtableEndpoint,
  options?: { readonly projectId?: string; readonly appProfileId?: string }
): Effect.Effect<Bigtable, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new Bigtable({
        projectId: options?.projectId ?? "test-project",
        apiEndpoint: endpoint.emulatorHost,
        metricsEnabled: false,
        universeDomain: UNIVERSE_DOMAIN,
        ...(options?.appProfileId === undefined ? {} : { appProfileId: options.appProfileId })
      })
    ),
    (client) => Effect.promise(() => client.close()).pipe(Effect.ignore)
  )

/**
 * An auth client that always returns a fixed bearer token: the BigQuery REST client sends it, the emulator
 * ignores it. No `expiry_date`, so it never expires (and never depends on the TestClock of `it.effect`).
 */
export const staticTokenAuth: Effect.Effect<OAuth2Client> = Effect.sync(() => {
  const auth = new OAuth2Client()
  auth.setCredentials({ access_token: "emulator" })
  return auth
})

/** BigQuery REST client on the emulator (`apiEndpoint` http://127.0.0.1:<rest>). */
export const bigQuery = (endpoint: BigQueryEndpoint): Effect.Effect<BigQuery> =>
  Effect.map(staticTokenAuth, (authClient) =>
    new BigQuery({
      projectId: endpoint.projectId,
      apiEndpoint: endpoint.restUrl,
      authClient,
      universeDomain: UNIVERSE_DOMAIN
    }))

/** Storage Write API client (managedwriter) on the emulator's plaintext gRPC port. */
export const bigQueryWriter = (
  endpoint: BigQueryEndpoint
): Effect.Effect<managedwriter.WriterClient, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new managedwriter.WriterClient({
        projectId: endpoint.projectId,
        apiEndpoint: endpoint.grpcHost,
        port: endpoint.grpcPort,
        // the same @grpc/grpc-js copy as google-gax's (one copy in node_modules), so the instanceof check holds
        sslCreds: grpc.credentials.createInsecure(),
        universeDomain: UNIVERSE_DOMAIN
      })
    ),
    (client) => Effect.sync(() => client.close())
  )

/** Cloud Storage client on the emulator (a custom `apiEndpoint` also turns authentication off). */
export const storage = (endpoint: GcsEndpoint, options?: { readonly projectId?: string }): Effect.Effect<Storage> =>
  Effect.sync(() =>
    new Storage({
      projectId: options?.projectId ?? "test-project",
      apiEndpoint: endpoint.url
    })
  )
