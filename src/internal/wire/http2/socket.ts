/**
 * The byte stream under an HTTP/2 session: TCP to the target, or through an HTTP proxy's `CONNECT`
 * tunnel (`proxy.ts`), then TLS with ALPN `h2` for production, or nothing more for an emulator's
 * plaintext h2c. The same order as grpc-js: TCP (proxied or not), then the secure handshake.
 *
 * Every failure is a {@link CallError} `UNAVAILABLE` with the reason (grpc-js fails a call on a
 * channel that cannot connect `UNAVAILABLE`): a refused or reset connection, a proxy that refuses
 * the tunnel, a certificate the roots do not trust, a server that does not speak `h2`.
 * Interruption destroys the socket.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as http from "node:http"
import * as net from "node:net"
import * as tls from "node:tls"
import { Code } from "../grpcStatus.ts"
import { type CallError, callError } from "./callError.ts"
import type { Proxy } from "./proxy.ts"

/** TLS settings: the trust store and the name the certificate must carry. @internal */
export interface TlsSettings {
  /**
   * The trusted roots: Node's default store (its bundled Mozilla roots, `NODE_EXTRA_CA_CERTS`, and
   * the OS store under `--use-system-ca`), the trust grpc-js gives a channel, plus these PEM roots.
   */
  readonly extraRoots: ReadonlyArray<string | Buffer>
  /** The server name to verify (and send as SNI); default the target's host. */
  readonly serverName?: string | undefined
}

/** Where a session connects. @internal */
export interface Endpoint {
  readonly host: string
  readonly port: number
  /** TLS, or `undefined` for plaintext h2c (emulators). */
  readonly tls: TlsSettings | undefined
}

/**
 * `what` failed because of `cause`; a message that already names `address` (node's own: "connect
 * ECONNREFUSED 127.0.0.1:9", as grpc-js reports it) is not prefixed with it again.
 */
const unavailable = (what: string, cause: unknown, address?: string): CallError => {
  const message = cause instanceof Error ? cause.message : String(cause)
  const named = address !== undefined && message.includes(address)
  return callError(Code.UNAVAILABLE, named ? message : `${what}: ${message}`, cause)
}

/**
 * Waits for `socket` to emit `ready` (a connection) or fail; on interruption the socket is
 * destroyed. The listeners are removed once it settled.
 */
const settle = <S extends net.Socket>(
  socket: S,
  readyEvent: "connect" | "secureConnect",
  what: string,
  check: (socket: S) => CallError | undefined = () => undefined,
  address?: string
): Effect.Effect<S, CallError> =>
  Effect.callback<S, CallError>((resume) => {
    const onReady = () => {
      detach()
      const failure = check(socket)
      if (failure === undefined) return resume(Effect.succeed(socket))
      socket.destroy()
      resume(Effect.fail(failure))
    }
    const onError = (error: Error) => {
      detach()
      socket.destroy()
      resume(Effect.fail(unavailable(what, error, address)))
    }
    const onClose = () => onError(new Error("connection closed"))
    const detach = () => {
      socket.off(readyEvent, onReady)
      socket.off("error", onError)
      socket.off("close", onClose)
    }
    socket.once(readyEvent, onReady)
    socket.once("error", onError)
    socket.once("close", onClose)
    return Effect.sync(() => {
      detach()
      socket.destroy()
    })
  })

const tcp = (host: string, port: number): Effect.Effect<net.Socket, CallError> =>
  Effect.suspend(() =>
    settle(net.connect({ host, port }), "connect", `connecting to ${host}:${port}`, undefined, `${host}:${port}`)
  )

/** A tunnel to `host:port` through `proxy` (HTTP `CONNECT`), as a connected socket. */
const tunnel = (proxy: Proxy, host: string, port: number): Effect.Effect<net.Socket, CallError> =>
  Effect.callback<net.Socket, CallError>((resume) => {
    const authority = `${host}:${port}`
    const headers: Record<string, string> = { Host: authority }
    if (proxy.credentials !== undefined) {
      headers["Proxy-Authorization"] = `Basic ${Buffer.from(proxy.credentials).toString("base64")}`
    }
    const request = http.request({ host: proxy.host, port: proxy.port, method: "CONNECT", path: authority, headers })
    const via = `connecting to ${authority} through the proxy ${proxy.host}:${proxy.port} (${proxy.variable})`
    request.once("connect", (response: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      request.removeAllListeners()
      request.on("error", () => undefined)
      if (response.statusCode !== 200) {
        socket.destroy()
        return resume(Effect.fail(unavailable(via, new Error(`the proxy answered ${response.statusCode}`))))
      }
      // bytes the proxy sent after its answer belong to the tunnelled connection
      if (head.length > 0) socket.unshift(head)
      resume(Effect.succeed(socket))
    })
    request.once("error", (error) => {
      request.removeAllListeners()
      request.on("error", () => undefined)
      resume(Effect.fail(unavailable(via, error)))
    })
    request.end()
    return Effect.sync(() => request.destroy())
  })

const alpnIsH2 = (socket: tls.TLSSocket): CallError | undefined =>
  socket.alpnProtocol === "h2"
    ? undefined
    : callError(Code.UNAVAILABLE, `the server did not negotiate HTTP/2 (ALPN ${String(socket.alpnProtocol)})`)

/** Node's default trust store (`tls.getCACertificates` where the runtime has it). */
const defaultRoots = (): ReadonlyArray<string> =>
  typeof tls.getCACertificates === "function" ? tls.getCACertificates("default") : tls.rootCertificates

/** TLS over `socket` with ALPN `h2`, verifying the certificate against the roots and the name. */
const secure = (socket: net.Socket, host: string, settings: TlsSettings): Effect.Effect<tls.TLSSocket, CallError> =>
  Effect.suspend(() => {
    const serverName = settings.serverName ?? host
    const secured = tls.connect({
      socket,
      servername: net.isIP(serverName) === 0 ? serverName : undefined,
      host: serverName,
      ALPNProtocols: ["h2"],
      ca: settings.extraRoots.length === 0 ? undefined : [...defaultRoots(), ...settings.extraRoots]
    })
    return settle(secured, "secureConnect", `the TLS handshake with ${host}`, alpnIsH2)
  })

/**
 * A connected byte stream to `endpoint`, through `proxy` when given, secured when the endpoint has
 * TLS settings. The socket has no delay (a request goes out as it is written).
 *
 * @internal
 */
export const open = Effect.fnUntraced(function*(endpoint: Endpoint, proxy: Proxy | undefined) {
  const raw = proxy === undefined
    ? yield* tcp(endpoint.host, endpoint.port)
    : yield* tunnel(proxy, endpoint.host, endpoint.port)
  raw.setNoDelay(true)
  if (endpoint.tls === undefined) return raw
  return yield* Effect.onInterrupt(
    secure(raw, endpoint.host, endpoint.tls),
    () => Effect.sync(() => raw.destroy())
  )
})
