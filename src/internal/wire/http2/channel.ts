/**
 * A channel of our HTTP/2 transport: one target, one connection at a time (a {@link Session}),
 * reconnected on demand, with the request headers every call carries and the credentials' headers
 * from a cache (`accessTokens.ts`). What grpc-js's channel and subchannel do for the calls we make:
 *
 * - A call takes the current session if it still takes calls, else one connection attempt shared by
 *   every call that asks meanwhile (TCP or a proxy tunnel, TLS with ALPN `h2`, the server's
 *   SETTINGS), within `connectTimeout` (20 s, grpc-js's minimum connect timeout) of time this process
 *   ran, on the live clock (`liveClock.ts`).
 *   A failed attempt fails the calls that waited for it `UNAVAILABLE`; the next call tries again,
 *   so the writers' retry schedules pace reconnection (grpc-js backs off on its own as well).
 * - A session that is GOAWAY'd, fails or closes takes no new calls: the next call opens another;
 *   its running calls end as `session.ts` says. {@link Http2Channel.abandon} does the same by
 *   choice (a call unanswered past its deadline: the connection may be black-holed).
 * - Every call carries `content-type: application/grpc`, `te: trailers`, `:authority` (the target,
 *   as grpc-js sends it), `user-agent`, `grpc-accept-encoding: identity` (we decompress nothing),
 *   `grpc-timeout` when it has a deadline, its metadata (`x-goog-request-params`), and the auth
 *   headers when the channel has credentials.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { Code } from "../grpcStatus.ts"
import type { AccessTokens } from "./accessTokens.ts"
import { type Call, type CallHandlers, start } from "./call.ts"
import { type CallError, callError } from "./callError.ts"
import * as LiveClock from "./liveClock.ts"
import type { Proxy } from "./proxy.ts"
import * as Session from "./session.ts"
import * as Socket from "./socket.ts"

/** What a channel is opened with. @internal */
export interface ChannelOptions {
  /** `host:port` */
  readonly target: string
  /** TLS settings, or `undefined` for plaintext h2c (emulators). */
  readonly tls: Socket.TlsSettings | undefined
  /** The credentials' headers, or none (emulators). */
  readonly tokens: AccessTokens | undefined
  /** The proxy to tunnel through (`proxy.ts`), if the environment names one for the target. */
  readonly proxy: Proxy | undefined
  readonly keepaliveTime: Duration.Duration
  readonly keepaliveTimeout: Duration.Duration
  readonly connectTimeout: Duration.Duration
  readonly maxReceiveMessageLength: number
  readonly initialWindowSize: number
  readonly userAgent: string
}

/** @internal */
export interface Http2Channel {
  readonly target: string
  /**
   * Starts a call on `path` with `metadata` and an optional deadline (only sent as `grpc-timeout`:
   * the caller keeps the local timer). A call that cannot start (no connection, no credentials)
   * ends at once through `handlers.onEnd`; the returned call then does nothing.
   */
  readonly call: (
    path: string,
    metadata: Readonly<Record<string, string>>,
    timeout: Duration.Duration | undefined,
    handlers: CallHandlers
  ) => Effect.Effect<Call>
  /**
   * The same call started at once when nothing needs waiting for: a connection that takes calls
   * and, with credentials, cached headers not yet due for a refresh at `now` (epoch milliseconds).
   * `undefined` when something does (then {@link call}, which waits).
   */
  readonly callNow: (
    path: string,
    metadata: Readonly<Record<string, string>>,
    timeout: Duration.Duration | undefined,
    handlers: CallHandlers,
    now: number
  ) => Call | undefined
  /** New calls go on a new connection; the current one closes once its calls ended. */
  readonly abandon: () => void
  /** Connections opened so far (for tests and metrics). */
  readonly connections: () => number
  /** Destroys every connection; their calls end `UNAVAILABLE`. */
  readonly close: () => void
}

const noCall: Call = { write: (_framed, taken) => taken?.(), writeLast: () => {}, end: () => {}, cancel: () => {} }

/**
 * `grpc-timeout`: at most 8 digits and a unit, rounded up so a server never gives a call less time
 * than the client does.
 *
 * @internal
 */
export const grpcTimeout = (timeout: Duration.Duration): string => {
  const millis = Math.max(0, Math.ceil(Duration.toMillis(timeout)))
  if (millis < 100_000_000) return `${millis}m`
  const seconds = Math.ceil(millis / 1000)
  if (seconds < 100_000_000) return `${seconds}S`
  return `${Math.min(99_999_999, Math.ceil(seconds / 3600))}H`
}

const hostAndPort = (target: string): { readonly host: string; readonly port: number } => {
  const colon = target.lastIndexOf(":")
  const host = target.slice(0, colon)
  return { host: host.startsWith("[") ? host.slice(1, -1) : host, port: Number(target.slice(colon + 1)) }
}

/**
 * A call's headers as Node's raw list (name, value, name, value, ...; `session.request` takes it since
 * Node 22.17, and skips the per-call copy and checks of a headers object): the pseudo-headers first,
 * as HTTP/2 requires, `:path` last of them.
 */
type RawHeaders = Array<string>

/**
 * The headers every call of a channel sends (the path, metadata, deadline and token come per call): its
 * pseudo-headers before `:path`, and its own headers after the pseudo-headers.
 */
interface BaseHeaders {
  readonly pseudo: ReadonlyArray<string>
  readonly regular: ReadonlyArray<string>
}

const baseHeaders = (options: ChannelOptions): BaseHeaders => ({
  pseudo: [":method", "POST", ":scheme", options.tls === undefined ? "http" : "https", ":authority", options.target],
  regular: [
    "content-type",
    "application/grpc",
    "te",
    "trailers",
    "user-agent",
    options.userAgent,
    "grpc-accept-encoding",
    "identity"
  ]
})

/** Appends `headers` (the call's metadata, or its credentials) to a raw list. */
const appendHeaders = (raw: RawHeaders, headers: Readonly<Record<string, string>> | undefined): RawHeaders => {
  if (headers !== undefined) { for (const name in headers) raw.push(name, headers[name] as string) }
  return raw
}

/** A session's settings; a server's `too_many_pings` doubles the channel's keepalive interval. */
const sessionSettings = (options: ChannelOptions): Session.SessionSettings => {
  let keepaliveTime = options.keepaliveTime
  return {
    origin: `${options.tls === undefined ? "http" : "https"}://${options.target}`,
    keepaliveTime: () => keepaliveTime,
    keepaliveTimeout: options.keepaliveTimeout,
    onTooManyPings: () => {
      keepaliveTime = Duration.times(keepaliveTime, 2)
    },
    initialWindowSize: options.initialWindowSize
  }
}

/** The sessions of a channel: the current one, opened on demand (callers at once share one attempt). */
interface Sessions {
  readonly session: Effect.Effect<Session.Session, CallError>
  /** The current session if it takes calls (no waiting), else `undefined`. */
  readonly ready: () => Session.Session | undefined
  readonly abandon: () => void
  readonly connections: () => number
  readonly close: () => void
}

/** One connection attempt within `connectTimeout`: a socket (through the proxy, if any), then its session. */
const connect = (options: ChannelOptions, scope: Scope.Scope, open: Set<Session.Session>) => {
  const { host, port } = hostAndPort(options.target)
  const endpoint: Socket.Endpoint = { host, port, tls: options.tls }
  const settings = sessionSettings(options)
  return Effect.gen(function*() {
    const socket = yield* Socket.open(endpoint, options.proxy)
    const session = yield* Session.open(socket, settings, scope)
    open.add(session)
    yield* Effect.forkIn(Effect.andThen(session.closed, Effect.sync(() => open.delete(session))), scope)
    return session
  }).pipe(
    (attempt) =>
      LiveClock.timeoutOrElse(attempt, options.connectTimeout, () =>
        Effect.fail(callError(
          Code.UNAVAILABLE,
          `no HTTP/2 connection to ${options.target} within ${Duration.format(options.connectTimeout)}`
        ))),
    LiveClock.onLiveClock
  )
}

const sessionsOf = (options: ChannelOptions, scope: Scope.Scope): Sessions => {
  const open = new Set<Session.Session>()
  let current: Session.Session | undefined
  let connecting: Deferred.Deferred<Session.Session, CallError> | undefined
  let connections = 0
  let closed = false
  const connectOnce = Effect.andThen(Effect.sync(() => void connections++), connect(options, scope, open))

  const settle =
    (attempt: Deferred.Deferred<Session.Session, CallError>) => (exit: Exit.Exit<Session.Session, CallError>) =>
      Effect.sync(() => {
        connecting = undefined
        if (Exit.isSuccess(exit)) current = exit.value
        Deferred.doneUnsafe(
          attempt,
          Exit.isSuccess(exit) || Exit.hasFails(exit)
            ? exit
            : Exit.fail(callError(Code.UNAVAILABLE, `connecting to ${options.target} was interrupted`))
        )
      })

  const ready = (): Session.Session | undefined =>
    !closed && current !== undefined && current.usable() ? current : undefined

  return {
    ready,
    session: Effect.suspend(() => {
      if (closed) return Effect.fail(callError(Code.UNAVAILABLE, `the channel to ${options.target} is closed`))
      const s = ready()
      if (s !== undefined) return Effect.succeed(s)
      if (connecting !== undefined) return Deferred.await(connecting)
      const attempt = Deferred.makeUnsafe<Session.Session, CallError>()
      connecting = attempt
      return Effect.andThen(Effect.forkIn(Effect.onExit(connectOnce, settle(attempt)), scope), Deferred.await(attempt))
    }),
    abandon: () => {
      const s = current
      current = undefined
      s?.drain()
    },
    connections: () => connections,
    close: () => {
      closed = true
      current = undefined
      for (const s of open) s.raw.destroy()
      open.clear()
    }
  }
}

/** A call's headers: the channel's, its path and metadata, and `grpc-timeout` when it has a deadline. */
const callHeaders = (
  base: BaseHeaders,
  path: string,
  metadata: Readonly<Record<string, string>>,
  timeout: Duration.Duration | undefined
): RawHeaders => {
  const raw = base.pseudo.concat(":path", path, base.regular)
  appendHeaders(raw, metadata)
  if (timeout !== undefined) raw.push("grpc-timeout", grpcTimeout(timeout))
  return raw
}

/**
 * A call started on `session`, or `undefined` when it stopped taking streams between the check and the
 * request (then drained, the next call opens another, and `refused` has the cause).
 */
const startOn = (
  session: Session.Session,
  headers: ReadonlyArray<string>,
  options: ChannelOptions,
  handlers: CallHandlers,
  refused: (cause: unknown) => void = () => {}
): Call | undefined => {
  try {
    return start(session, headers, options.maxReceiveMessageLength, handlers)
  } catch (cause) {
    session.drain()
    refused(cause)
    return undefined
  }
}

/**
 * A channel to `options.target`; connections are opened on the first call and their keepalive and
 * connection attempts run in `scope`.
 *
 * @internal
 */
export const make = (options: ChannelOptions, scope: Scope.Scope): Http2Channel => {
  const base = baseHeaders(options)
  const sessions = sessionsOf(options, scope)
  const headersOf = (
    path: string,
    metadata: Readonly<Record<string, string>>,
    timeout: Duration.Duration | undefined
  ): Effect.Effect<ReadonlyArray<string>, CallError> => {
    const headers = callHeaders(base, path, metadata, timeout)
    if (options.tokens === undefined) return Effect.succeed(headers)
    return Effect.map(options.tokens.headers, (auth) => appendHeaders(headers, auth))
  }
  return {
    target: options.target,
    callNow: (path, metadata, timeout, handlers, now) => {
      const s = sessions.ready()
      const auth = options.tokens?.fresh(now)
      if (s === undefined || (options.tokens !== undefined && auth === undefined)) return undefined
      return startOn(s, appendHeaders(callHeaders(base, path, metadata, timeout), auth), options, handlers)
    },
    call: (path, metadata, timeout, handlers) =>
      Effect.flatMap(
        Effect.result(Effect.zip(sessions.session, headersOf(path, metadata, timeout))),
        (result) =>
          Effect.sync(() => {
            if (result._tag === "Failure") {
              handlers.onEnd(result.failure)
              return noCall
            }
            const [s, headers] = result.success
            return startOn(
              s,
              headers,
              options,
              handlers,
              (cause) =>
                handlers.onEnd(callError(Code.UNAVAILABLE, "the HTTP/2 connection takes no new streams", cause))
            ) ??
              noCall
          })
      ),
    abandon: sessions.abandon,
    connections: sessions.connections,
    close: sessions.close
  }
}

/** A channel closed with the scope. @internal */
export const scoped = (options: ChannelOptions): Effect.Effect<Http2Channel, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.map(Effect.scope, (scope) => make(options, scope)),
    (channel) => Effect.sync(() => channel.close())
  )
