/**
 * The emulator variables Google's clients and the emulators' own docs use, read through Effect
 * `Config` (the environment by default, or the caller's `ConfigProvider`): the one place the library
 * reads its settings from the environment itself (ADR 0038). A client layer reads them only when it
 * is given neither `emulator` nor `serviceAccountKeyFile`: an explicit option always wins.
 *
 * | variable | service | form |
 * |---|---|---|
 * | `BIGTABLE_EMULATOR_HOST` | Bigtable (`gcloud beta emulators bigtable env-init`) | `host:port` |
 * | `BIGQUERY_EMULATOR_HOST` | BigQuery REST (bqemulator, goccy's bigquery-emulator) | `host:port` or `http://host:port` |
 * | `BIGQUERY_EMULATOR_GRPC_HOST` | BigQuery Storage Write (gRPC); default: the REST host on port 9060, both emulators' default | `host:port` |
 * | `STORAGE_EMULATOR_HOST` | Cloud Storage (fake-gcs-server, `@google-cloud/storage`) | `host:port` or `http://host:port` |
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import { type Endpoint, parse } from "./emulatorEndpoint.ts"

/** The variables' names. @internal */
export const variables = {
  bigtable: "BIGTABLE_EMULATOR_HOST",
  bigqueryRest: "BIGQUERY_EMULATOR_HOST",
  bigqueryGrpc: "BIGQUERY_EMULATOR_GRPC_HOST",
  storage: "STORAGE_EMULATOR_HOST"
} as const

/** The gRPC port bqemulator and goccy's bigquery-emulator listen on by default. @internal */
export const defaultBigQueryGrpcPort = 9060

/**
 * The endpoint a variable's value names: `host:port`, or an `http://` URL of one (with an optional
 * trailing slash), the form the REST emulators document. `undefined` when it is neither.
 *
 * @internal
 */
export const endpointOf = (value: string): Endpoint | undefined => {
  const bare = value.replace(/^http:\/\//i, "").replace(/\/$/, "")
  return parse(bare)
}

const problem = (name: string, value: string) =>
  new SinkConfigError({
    path: name,
    detail: `must be host:port (or http://host:port) of an emulator, was '${value}'`
  })

/**
 * The endpoint in the variable `name`, `undefined` when it is unset or empty; a value that is not an
 * endpoint is a `SinkConfigError` naming the variable.
 *
 * @internal
 */
export const read = (name: string): Effect.Effect<Endpoint | undefined, SinkConfigError> =>
  Config.option(Config.String(name)).pipe(
    Effect.mapError((error) => new SinkConfigError({ path: name, detail: `could not be read: ${error.message}` })),
    Effect.flatMap((value) => {
      const text = Option.getOrUndefined(value)?.trim()
      if (text === undefined || text.length === 0) return Effect.undefined
      const endpoint = endpointOf(text)
      return endpoint === undefined ? Effect.fail(problem(name, text)) : Effect.succeed(endpoint)
    })
  )

/** `BIGTABLE_EMULATOR_HOST`. @internal */
export const bigtable: Effect.Effect<Endpoint | undefined, SinkConfigError> = read(variables.bigtable)

/** `STORAGE_EMULATOR_HOST`. @internal */
export const storage: Effect.Effect<Endpoint | undefined, SinkConfigError> = read(variables.storage)

/**
 * The BigQuery emulator's two endpoints from `BIGQUERY_EMULATOR_HOST` (REST) and
 * `BIGQUERY_EMULATOR_GRPC_HOST` (Storage Write; default: the REST host, port 9060), `undefined`
 * when neither is set. The gRPC variable alone is a `SinkConfigError`: the REST endpoint cannot be
 * guessed from it.
 *
 * @internal
 */
export const bigquery: Effect.Effect<
  { readonly rest: Endpoint; readonly grpc: Endpoint } | undefined,
  SinkConfigError
> = Effect.gen(function*() {
  const rest = yield* read(variables.bigqueryRest)
  const grpc = yield* read(variables.bigqueryGrpc)
  if (rest === undefined) {
    if (grpc === undefined) return undefined
    return yield* new SinkConfigError({
      path: variables.bigqueryGrpc,
      detail: `is set without ${variables.bigqueryRest}: set both, or pass emulator: { grpc, rest }`
    })
  }
  const port = defaultBigQueryGrpcPort
  return {
    rest,
    grpc: grpc ?? { host: rest.host, port, target: `${rest.host}:${port}` }
  }
})
