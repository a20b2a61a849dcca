/**
 * The two data-path transports (ADR 0036) side by side, for the conformance suites that run one test
 * body on each: the Bigtable data calls (`StartCall`) and the BigQuery AppendRows connections
 * (`AppendChannels` leases) on our HTTP/2 transport or on grpc-js, to a plaintext or TLS target, with
 * the same keepalive and message limits on both.
 */
import * as grpc from "@grpc/grpc-js"
import { Duration, Effect, type Scope } from "effect"
import * as AppendChannels from "../../src/internal/bigquery/transport/appendChannels.ts"
import type { StartCall } from "../../src/internal/bigtable/transport/dataCall.ts"
import { onChannel } from "../../src/internal/bigtable/transport/directCall.ts"
import { overHttp2 } from "../../src/internal/bigtable/transport/http2Call.ts"
import { channelOptions, type HeaderSource } from "../../src/internal/wire/grpcChannel.ts"
import * as DataPath from "../../src/internal/wire/http2/dataPath.ts"

export const transports = DataPath.transports

export type Transport = DataPath.Transport

export interface ClientOptions {
  /** Keepalive interval and timeout (default 30 s / 10 s, as the clients set them). */
  readonly keepalive?: { readonly time: Duration.Duration; readonly timeout: Duration.Duration }
  /** TLS with these extra roots (the server's self-signed certificate). */
  readonly tlsRoots?: ReadonlyArray<Buffer>
  /** Credentials (TLS only). */
  readonly auth?: HeaderSource
}

/** grpc-js channel options as the library sets them, with the test's keepalive and a 64 MiB receive cap. */
const grpcOptions = (options: ClientOptions): grpc.ChannelOptions => ({
  ...channelOptions,
  "grpc.use_local_subchannel_pool": 1,
  "grpc.max_receive_message_length": DataPath.maxReceiveMessageLength,
  ...(options.keepalive === undefined ? {} : {
    "grpc.keepalive_time_ms": Duration.toMillis(options.keepalive.time),
    "grpc.keepalive_timeout_ms": Duration.toMillis(options.keepalive.timeout)
  })
})

const grpcCredentials = (options: ClientOptions): grpc.ChannelCredentials => {
  if (options.tlsRoots === undefined) return grpc.credentials.createInsecure()
  const ssl = grpc.credentials.createSsl(Buffer.concat([...options.tlsRoots]))
  const auth = options.auth
  if (auth === undefined) return ssl
  return grpc.credentials.combineChannelCredentials(
    ssl,
    grpc.credentials.createFromMetadataGenerator((params, callback) => {
      auth.getRequestHeaders(params.service_url).then((headers) => {
        const metadata = new grpc.Metadata()
        headers.forEach((value, key) => metadata.add(key, value))
        callback(null, metadata)
      }, (error: Error) => callback(error))
    })
  )
}

/** A grpc-js client to `target`, closed with the scope. */
export const grpcClient = (
  target: string,
  options: ClientOptions = {}
): Effect.Effect<grpc.Client, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => new grpc.Client(target, grpcCredentials(options), grpcOptions(options))),
    (c) => Effect.sync(() => c.close())
  )

/** Our HTTP/2 channels to `target`, closed with the scope. */
export const http2Opener = (target: string, options: ClientOptions = {}) =>
  DataPath.opener({
    target,
    tls: options.tlsRoots === undefined ? undefined : { extraRoots: options.tlsRoots },
    auth: options.auth === undefined
      ? undefined
      : { source: options.auth, service: "Test", url: `https://${target.split(":")[0]}/test` },
    keepaliveTime: options.keepalive?.time,
    keepaliveTimeout: options.keepalive?.timeout
  })

/** The Bigtable data calls of `transport` to `target`. */
export const startCall = (
  transport: Transport,
  target: string,
  options: ClientOptions = {}
): Effect.Effect<StartCall, never, Scope.Scope> =>
  transport === "http2"
    ? Effect.flatMap(http2Opener(target, options), (open) => overHttp2(open()))
    : Effect.map(grpcClient(target, options), (c) => onChannel(c.getChannel()))

/** The AppendRows stream budget of `transport` to `target` (its unary calls on a grpc-js client). */
export const appendChannels = (
  transport: Transport,
  target: string,
  options: ClientOptions = {}
): Effect.Effect<AppendChannels.AppendChannels, never, Scope.Scope> =>
  Effect.gen(function*() {
    const unary = yield* grpcClient(target, options)
    const channels = transport === "http2"
      ? AppendChannels.makeHttp2(
        unary,
        () => new grpc.Client(target, grpcCredentials(options), grpcOptions(options)),
        yield* http2Opener(target, options),
        AppendChannels.defaultStreamsPerChannel
      )
      : AppendChannels.make(
        unary,
        () => new grpc.Client(target, grpcCredentials(options), grpcOptions(options)),
        AppendChannels.defaultStreamsPerChannel
      )
    yield* Effect.addFinalizer(() => Effect.sync(() => channels.close()))
    return channels
  })
