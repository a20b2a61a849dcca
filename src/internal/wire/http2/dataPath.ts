/**
 * The data path of a client (ADR 0043): which transport its streaming calls (BigQuery AppendRows,
 * Bigtable MutateRows and CheckAndMutateRow) run on, and the channels of our own HTTP/2 transport
 * with the settings grpc-js's channels had (`wire/grpcChannel.ts`): keepalive 30 s / 10 s, no cap on
 * what is sent (the writers bound their requests), TLS with the default roots, the proxy the
 * environment names, the credentials' headers from one cache per client.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as AccessTokens from "./accessTokens.ts"
import * as Channel from "./channel.ts"
import * as Proxy from "./proxy.ts"
import type { TlsSettings } from "./socket.ts"

/**
 * The transport of the data calls: `"http2"`, our own on `node:http2` (the default), or
 * `"grpc-js"`, the official clients' (the fallback). Unary and admin calls always use grpc-js.
 *
 * @internal
 */
export type Transport = "http2" | "grpc-js"

/** @internal */
export const transports: ReadonlyArray<Transport> = ["http2", "grpc-js"]

/** @internal */
export const defaultTransport: Transport = "http2"

/** The `user-agent` our transport sends (grpc-js sends `grpc-node-js/<version>`). @internal */
export const userAgent = "effect-gcp-sinks/0.1.0 grpc-node-http2"

/**
 * The largest response message accepted (a `MutateRowsResponse` for 100,000 entries is about 1 MB;
 * an `AppendRowsResponse` is small): a larger one ends the call `RESOURCE_EXHAUSTED`.
 *
 * @internal
 */
export const maxReceiveMessageLength = 64 * 1024 * 1024

/** Where the channels of one client go and how. @internal */
export interface Destination {
  /** `host:port` */
  readonly target: string
  /** `undefined`: plaintext h2c (an emulator). */
  readonly tls: TlsSettings | undefined
  /** The credentials, for production: their headers are cached per client (`accessTokens.ts`). */
  readonly auth?: {
    readonly source: AccessTokens.HeaderSource
    /** The API's name in a credentials failure ("BigQuery"). */
    readonly service: string
    /** The URL the headers are asked for: `https://<host>/<gRPC service>`, as grpc-js asks. */
    readonly url: string
  } | undefined
  /** Overrides of the defaults, for tests. */
  readonly keepaliveTime?: Duration.Duration | undefined
  readonly keepaliveTimeout?: Duration.Duration | undefined
}

/**
 * Opens channels to `destination`, each on a connection of its own, all sharing one credentials
 * cache; the proxy is chosen once from the environment (`proxy.ts`). Channels and background work
 * live in the current scope (each channel is closed by its owner, or with the scope).
 *
 * @internal
 */
export const opener = Effect.fnUntraced(function*(destination: Destination) {
  const scope = yield* Effect.scope
  const env = yield* Proxy.environment
  const host = destination.target.slice(0, destination.target.lastIndexOf(":"))
  const auth = destination.auth
  const tokens = auth === undefined ? undefined : AccessTokens.make(auth.source, auth.url, auth.service, scope)
  const options: Channel.ChannelOptions = {
    target: destination.target,
    tls: destination.tls,
    tokens,
    proxy: Proxy.proxyFor(env, host),
    keepaliveTime: destination.keepaliveTime ?? Duration.seconds(30),
    keepaliveTimeout: destination.keepaliveTimeout ?? Duration.seconds(10),
    connectTimeout: Duration.seconds(20),
    maxReceiveMessageLength,
    initialWindowSize: 65_535,
    userAgent
  }
  const opened = new Set<Channel.Http2Channel>()
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      for (const channel of opened) channel.close()
    })
  )
  return () => {
    const made = Channel.make(options, scope)
    const channel: Channel.Http2Channel = {
      ...made,
      close: () => {
        opened.delete(channel)
        made.close()
      }
    }
    opened.add(channel)
    return channel
  }
})
