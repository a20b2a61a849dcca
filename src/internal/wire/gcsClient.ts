/**
 * `GcsClient.make` and `fromStorage`: the settings decoded with `Schema` (from untyped JavaScript or
 * `Config` too), then a `@google-cloud/storage` client for an emulator (plain HTTP; a custom
 * endpoint turns authentication off, so no credentials and no metadata server) or for production.
 *
 * @internal
 */
import type { Storage } from "@google-cloud/storage"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { GcsClientConfig, GcsClientService } from "../../Sink/GcsClient.ts"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as O from "../options/schema.ts"
import type { Endpoint } from "./emulatorEndpoint.ts"
import * as emulatorEnv from "./emulatorEnv.ts"
import * as optionalPackage from "./optionalPackage.ts"

const Emulator = Schema.Struct({ rest: O.requiredValue(O.Endpoint) })

/** @internal */
export interface Settings {
  readonly projectId: string
  readonly serviceAccountKeyFile: Redacted.Redacted<string> | undefined
  readonly endpoint: Endpoint | undefined
}

/** `GcsClientConfig` decoded to the settings; a key file with an emulator is rejected. */
const SettingsSchema = Schema.Struct({
  projectId: O.requiredValue(O.Component),
  serviceAccountKeyFile: O.maybe(O.RedactedPath),
  emulator: O.maybe(Emulator)
}).check(O.noKeyFileWithEmulator("emulators take no credentials")).pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is Settings => O.isRecord(u) && Predicate.isString(u.projectId)),
  SchemaTransformation.transform({
    decode: (c): Settings => ({
      projectId: c.projectId,
      serviceAccountKeyFile: c.serviceAccountKeyFile,
      endpoint: c.emulator?.rest
    }),
    encode: (s: Settings) => ({
      projectId: s.projectId,
      serviceAccountKeyFile: s.serviceAccountKeyFile,
      emulator: s.endpoint === undefined ? undefined : { rest: s.endpoint }
    })
  })
))

/** Decodes the settings; a key file with an emulator is rejected. @internal */
export const settings = (config: GcsClientConfig): Effect.Effect<Settings, SinkConfigError> =>
  O.decode(SettingsSchema)(config)

const keyFileError = (message: string) => new SinkConfigError({ path: "serviceAccountKeyFile", detail: message })

const scopes = ["https://www.googleapis.com/auth/devstorage.read_write"]

// The key file as a JWT client (not `keyFilename`, which google-auth-library 11 logs as deprecated).
// Read errors name the path (ENOENT, EACCES): they are dropped, like the path itself.
const keyFileAuth = Effect.fnUntraced(function*(path: Redacted.Redacted<string>) {
  const fs = yield* Effect.promise(() => import("node:fs/promises"))
  const text = yield* Effect.tryPromise({
    try: () => fs.readFile(Redacted.value(path), "utf8"),
    catch: () => keyFileError("cannot read the key file")
  })
  const key = yield* Effect.try({
    try: (): unknown => JSON.parse(text),
    catch: () => keyFileError("the key file is not JSON")
  })
  const email = Predicate.isObject(key) && "client_email" in key ? key.client_email : undefined
  const privateKey = Predicate.isObject(key) && "private_key" in key ? key.private_key : undefined
  if (!Predicate.isString(email) || !Predicate.isString(privateKey)) {
    return yield* keyFileError("the key file has no client_email and private_key (is it a service-account key?)")
  }
  const auth = yield* Effect.promise(() => import("google-auth-library"))
  return new auth.JWT({ email, key: privateKey, scopes })
})

/** `GcsClient.make`. @internal */
export const make: (config: GcsClientConfig) => Effect.Effect<GcsClientService, SinkConfigError> = Effect.fn(
  "GcsClient.make"
)(function*(config: GcsClientConfig) {
  const { projectId, serviceAccountKeyFile, ...given } = yield* settings(config)
  // the standard variable, read only when no option says where to go
  const endpoint = given.endpoint ?? (serviceAccountKeyFile === undefined ? yield* emulatorEnv.storage : undefined)
  const authClient = serviceAccountKeyFile === undefined ? undefined : yield* keyFileAuth(serviceAccountKeyFile)
  // Loaded when a client is built (about 200 ms), not when the package is imported: an optional peer.
  const { Storage } = yield* optionalPackage.load(() => import("@google-cloud/storage"), {
    needs: ["@google-cloud/storage"],
    path: "GcsClient"
  })
  const apiEndpoint = endpoint === undefined ? "https://storage.googleapis.com" : `http://${endpoint.target}`
  const storage = new Storage({
    projectId,
    // One retry budget: the store's own schedule (the client would retry conditional uploads itself).
    retryOptions: { autoRetry: false, maxRetries: 0 },
    apiEndpoint,
    // a STORAGE_EMULATOR_HOST in the environment would otherwise turn authentication off in production
    useAuthWithCustomEndpoint: endpoint === undefined,
    ...(authClient === undefined ? {} : { authClient })
  })
  // `@google-cloud/storage` takes STORAGE_EMULATOR_HOST from the environment verbatim as its base URL
  // (no /storage/v1, which fake-gcs-server answers 404), over any apiEndpoint: the endpoint chosen here wins.
  storage.baseUrl = `${apiEndpoint}/storage/v1`
  return { projectId, storage }
})

const isStorage = (u: unknown): u is Storage => Predicate.isObject(u) && "bucket" in u && Predicate.isFunction(u.bucket)

const Clients = Schema.Struct({
  projectId: O.requiredValue(O.Component),
  storage: O.requiredValue(O.guard(isStorage, "a Storage client (@google-cloud/storage)"))
})

/** `GcsClient.fromStorage`: the caller's client, checked. @internal */
export const fromStorage = (
  clients: { readonly projectId: string; readonly storage: Storage }
): Effect.Effect<GcsClientService, SinkConfigError> =>
  Effect.map(O.decode(Clients)(clients), () => ({ projectId: clients.projectId, storage: clients.storage }))
