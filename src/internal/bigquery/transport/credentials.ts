/**
 * The driver objects behind `BigQueryClient`: credentials, the Storage Write gRPC channel and the
 * REST client, for production (ADC or a service-account key file) and for emulators (plaintext,
 * a static token, no metadata-server lookups).
 *
 * The key file's path and contents never reach an error message or a log: a read or parse failure
 * reports only that the option could not be used.
 *
 * @internal
 */
import type { BigQuery } from "@google-cloud/bigquery"
import type * as grpc from "@grpc/grpc-js"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import { GoogleAuth, JWT, OAuth2Client } from "google-auth-library"
import * as fs from "node:fs"
import type { EmulatorEndpoint } from "../../../Sink/EmulatorEndpoint.ts"
import { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as channels from "../../wire/grpcChannel.ts"
import type * as DataPath from "../../wire/http2/dataPath.ts"
import * as optionalPackage from "../../wire/optionalPackage.ts"

/** @internal */
export const scopes = ["https://www.googleapis.com/auth/cloud-platform"]

/** The production Storage Write endpoint. @internal */
export const storageWriteTarget = "bigquerystorage.googleapis.com:443"

/** Stops gax/auth from asking the metadata server for the universe domain. @internal */
export const universeDomain = "googleapis.com"

type AuthClient = JWT | GoogleAuth

const keyFileError = new SinkConfigError({
  path: "serviceAccountKeyFile",
  detail: "could not be read as a service-account JSON key file"
})

/**
 * Reads a service-account key file into a JWT client. Fails with a `SinkConfigError` that names
 * the option only.
 *
 * @internal
 */
export const loadKeyFile = (path: Redacted.Redacted<string>): Effect.Effect<JWT, SinkConfigError> =>
  Effect.try({
    try: () => {
      const json: unknown = JSON.parse(fs.readFileSync(Redacted.value(path), "utf8"))
      if (
        !Predicate.isObject(json) || !Predicate.isString(json["client_email"]) ||
        !Predicate.isString(json["private_key"])
      ) {
        throw keyFileError
      }
      return new JWT({ email: json["client_email"], key: json["private_key"], scopes })
    },
    catch: () => keyFileError
  })

/** Application default credentials, resolved lazily on the first call. @internal */
export const applicationDefault = (projectId: string): AuthClient => new GoogleAuth({ scopes, projectId })

const storageWrite = channels.serviceChannels(storageWriteTarget, "BigQuery")

/** The production channel (TLS + call credentials); `separate`: on an HTTP/2 connection of its own. @internal */
export const productionChannel: (auth: AuthClient, separate?: boolean) => grpc.Client = storageWrite.production

/** A plaintext channel to an emulator or fake; `separate`: on an HTTP/2 connection of its own. @internal */
export const emulatorChannel: (endpoint: EmulatorEndpoint, separate?: boolean) => grpc.Client = storageWrite.emulator

/**
 * A TLS channel without credentials to `target`, trusting `roots` (PEM) besides the default ones:
 * a local server with a self-signed certificate (tests and the TLS benchmarks).
 *
 * @internal
 */
export const tlsChannel = (target: string, roots: ReadonlyArray<string | Buffer>, separate = false): grpc.Client =>
  channels.tlsChannel(target, roots, separate ? channels.separateConnection : channels.channelOptions)

/** The gRPC service whose URL call credentials are asked for (as grpc-js builds it). */
const serviceUrl = "https://bigquerystorage.googleapis.com/google.cloud.bigquery.storage.v1.BigQueryWrite"

/** Where the AppendRows streams of our HTTP/2 transport go in production: TLS, the default roots, `auth`. @internal */
export const productionDataPath = (auth: AuthClient): DataPath.Destination => ({
  target: storageWriteTarget,
  tls: { extraRoots: [] },
  auth: { source: auth, service: "BigQuery", url: serviceUrl }
})

/**
 * An auth client that always answers one fixed bearer token: the emulator ignores it, and the
 * REST client then never looks for credentials or a metadata server.
 *
 * @internal
 */
export const staticTokenAuth = (): OAuth2Client => {
  const auth = new OAuth2Client()
  auth.setCredentials({ access_token: "emulator" })
  return auth
}

/**
 * `@google-cloud/bigquery`, an optional peer dependency: loaded when a client is built, a
 * `SinkConfigError` naming the package when it is not installed.
 *
 * @internal
 */
export const restModule = optionalPackage.load(() => import("@google-cloud/bigquery"), {
  needs: ["@google-cloud/bigquery"],
  path: "BigQueryClient"
})

/**
 * The REST client. Its own retries are off (`retryOptions.autoRetry: false`): the library would
 * otherwise send each call up to four times before the sink sees a failure, multiplying the sink's
 * recovery budget (one counted attempt, four `tables.insert` calls). The sink's budget is the only one.
 *
 * @internal
 */
export const restClient = (options: {
  readonly projectId: string
  readonly location: string | undefined
  /** `undefined`: application default credentials, resolved by the REST client itself. */
  readonly auth: JWT | OAuth2Client | undefined
  readonly apiEndpoint?: string | undefined
}): Effect.Effect<BigQuery, SinkConfigError> =>
  Effect.map(restModule, (module) => {
    const apiEndpoint = options.apiEndpoint ?? `https://bigquery.${universeDomain}`
    const client = new module.BigQuery({
      projectId: options.projectId,
      universeDomain,
      retryOptions: { autoRetry: false, maxRetries: 0 },
      apiEndpoint,
      ...(options.auth === undefined ? {} : { authClient: options.auth }),
      ...(options.location === undefined ? {} : { location: options.location })
    })
    // `@google-cloud/bigquery` takes BIGQUERY_EMULATOR_HOST from the environment verbatim as its base
    // URL (no scheme added, no /bigquery/v2), over any apiEndpoint: the endpoint chosen here wins.
    client.baseUrl = `${apiEndpoint}/bigquery/v2`
    return client
  })
