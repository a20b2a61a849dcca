/**
 * The `@grpc/grpc-js` channels both sinks send on: plaintext without credentials to an emulator,
 * TLS with google-auth-library call credentials in production.
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { EmulatorEndpoint } from "../../Sink/EmulatorEndpoint.ts"
import { caught, DriverFailure } from "./driverFailure.ts"
import { credentialProblem, credentialsAdvice } from "./firstContact.ts"

/**
 * Channel options: no client-side message caps (the writers bound their requests), keepalive as the
 * official clients set it, and a short reconnect backoff (200 ms to 5 s instead of 1 s to 120 s):
 * the writers' retry schedules pace re-sends, and a channel still backing off would spend that
 * budget on instant failures.
 *
 * @internal
 */
export const channelOptions: grpc.ChannelOptions = {
  "grpc.max_send_message_length": -1,
  "grpc.max_receive_message_length": -1,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 10_000,
  "grpc.initial_reconnect_backoff_ms": 200,
  "grpc.max_reconnect_backoff_ms": 5_000
}

/**
 * Options of a channel that must have an HTTP/2 connection of its own (grpc-js otherwise shares one
 * between channels to the same target): more room for streams (bigquery/appendChannels.ts).
 *
 * @internal
 */
export const separateConnection: grpc.ChannelOptions = { ...channelOptions, "grpc.use_local_subchannel_pool": 1 }

/**
 * What a channel needs of a google-auth-library client (`GoogleAuth`, `JWT`): headers as the
 * `Headers` object of google-auth-library 10+, which grpc-js's own helper does not read.
 *
 * @internal
 */
export interface HeaderSource {
  getRequestHeaders(url?: string): Promise<{ forEach(f: (value: string, key: string) => void): void }>
}

/**
 * Call credentials from an auth client: each call asks it for its headers (a cached, refreshed
 * access token). When there are no credentials, or Google refuses them, the call ends
 * `UNAUTHENTICATED` with a message saying how to provide them (waiting would not help: the writer
 * fails at once); when the token endpoint cannot be reached it ends `UNAVAILABLE`, so the writer
 * retries it within its budget. The cause is never put in the message, which could carry key material.
 *
 * @internal
 */
export const callCredentials = (auth: HeaderSource, service: string): grpc.CallCredentials =>
  grpc.credentials.createFromMetadataGenerator((options, callback) => {
    Effect.runCallback(Effect.tryPromise({ try: () => auth.getRequestHeaders(options.service_url), catch: caught }), {
      onExit: (exit) => {
        if (Exit.isFailure(exit)) {
          const failure = Cause.squash(exit.cause)
          const problem = credentialProblem(failure instanceof DriverFailure ? failure.cause : failure)
          callback(
            problem === undefined
              ? Object.assign(new Error(`could not obtain Google credentials for ${service}`), {
                code: grpc.status.UNAVAILABLE
              })
              : Object.assign(new Error(credentialsAdvice(service, problem)), { code: grpc.status.UNAUTHENTICATED })
          )
          return
        }
        const metadata = new grpc.Metadata()
        exit.value.forEach((value, key) => metadata.add(key, value))
        callback(null, metadata)
      }
    })
  })

/**
 * A production channel to `target`: TLS plus call credentials. `rootCerts` (PEM) replaces the
 * system trust store; it is for tests against a local TLS server and for private CAs, and the
 * sinks leave it out.
 *
 * @internal
 */
export const productionChannel = (
  target: string,
  auth: HeaderSource,
  service: string,
  rootCerts?: Buffer,
  options: grpc.ChannelOptions = channelOptions
): grpc.Client =>
  new grpc.Client(
    target,
    grpc.credentials.combineChannelCredentials(grpc.credentials.createSsl(rootCerts), callCredentials(auth, service)),
    options
  )

/**
 * A TLS channel without credentials to `target`, trusting only `roots` (PEM; grpc-js replaces the
 * default roots with them): a local server with a self-signed certificate, in tests and benchmarks.
 *
 * @internal
 */
export const tlsChannel = (
  target: string,
  roots: ReadonlyArray<string | Buffer>,
  options: grpc.ChannelOptions = channelOptions
): grpc.Client =>
  new grpc.Client(
    target,
    grpc.credentials.createSsl(Buffer.concat(roots.map((r) => typeof r === "string" ? Buffer.from(r) : r))),
    options
  )

/** A plaintext channel without credentials to an emulator or fake. @internal */
export const emulatorChannel = (
  endpoint: EmulatorEndpoint,
  options: grpc.ChannelOptions = channelOptions
): grpc.Client => new grpc.Client(endpoint.target, grpc.credentials.createInsecure(), options)

/**
 * The two channels of one service: `production(auth)` to `target` (TLS plus call credentials named
 * after `service`) and `emulator(endpoint)` (plaintext); with `separate`, each on an HTTP/2
 * connection of its own ({@link separateConnection}).
 *
 * @internal
 */
export const serviceChannels = (target: string, service: string): {
  readonly production: (auth: HeaderSource, separate?: boolean) => grpc.Client
  readonly emulator: (endpoint: EmulatorEndpoint, separate?: boolean) => grpc.Client
} => ({
  production: (auth, separate = false) =>
    productionChannel(target, auth, service, undefined, separate ? separateConnection : channelOptions),
  emulator: (endpoint, separate = false) => emulatorChannel(endpoint, separate ? separateConnection : channelOptions)
})
