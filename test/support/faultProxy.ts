/**
 * A loopback HTTP/2 (h2c) proxy between a gRPC client and an emulator that injects faults on the wire:
 *
 * - every `unavailableEvery`-th request is answered by the proxy itself with a trailers-only gRPC response
 *   `grpc-status: 14` (UNAVAILABLE) and never reaches the emulator;
 * - every `resetEvery`-th request is forwarded, and the client's TCP connection is destroyed once the emulator
 *   has answered it, so the client loses the response of a request that was applied (and every other call on
 *   that connection).
 *
 * - with `latencyMillis: d`, every message of a stream reaches the other side `d / 2` ms later in each
 *   direction (a round trip of `d`, as to a service in another region), in order and without limiting
 *   the rate;
 * - with `blackHoleFirstConnectionAfter: n`, the first client connection forwards its first `n` requests and
 *   swallows every later one: never forwarded, never answered, the connection kept open (a black-holed
 *   path: packets dropped, nothing reset); later connections are served normally.
 *
 * The client under test only sees a different `host:port` (its public emulator endpoint option): no hooks in the
 * library. gRPC frames are forwarded untouched; only HTTP/2 streams, headers and trailers are handled here.
 */
import { Effect, type Scope } from "effect"
import * as http2 from "node:http2"
import type * as net from "node:net"
import * as nodeStream from "node:stream"

/**
 * A line of `delay` ms: each chunk is pushed `delay` ms after it arrived, the end after the last
 * chunk; chunks keep their order (equal timers fire in order) and never wait for each other.
 */
const delayLine = (delay: number): nodeStream.Transform =>
  new nodeStream.Transform({
    transform(chunk, _encoding, done) {
      setTimeout(() => this.push(chunk), delay)
      done()
    },
    flush(done) {
      setTimeout(done, delay)
    }
  })

/** Pipes `from` into `to`, through a delay line when `delay` is positive. */
const forward = (from: nodeStream.Readable, to: nodeStream.Writable, delay: number): void => {
  if (delay <= 0) {
    from.pipe(to)
    return
  }
  const line = delayLine(delay)
  from.pipe(line)
  line.pipe(to)
}

export interface FaultProxyOptions {
  readonly upstreamHost: string
  readonly upstreamPort: number
  /** Answer UNAVAILABLE to one request in this many (0 = never). Default 10. */
  readonly unavailableEvery?: number
  /** Reset the client connection after one request in this many (0 = never). Default 0. */
  readonly resetEvery?: number
  /** Stop resetting after this many resets (then every response is delivered). Default: never stop. */
  readonly maxResets?: number
  /** A round trip added to every message: half of it each way. Default 0. */
  readonly latencyMillis?: number
  /** Swallow every request of the first client connection after its first `n` (undefined = never). */
  readonly blackHoleFirstConnectionAfter?: number
  /**
   * With `blackHoleFirstConnectionAfter`: only streams of this gRPC method path count and are
   * swallowed, on the first connection that carries one (a client may open a connection for its
   * unary calls first, and one of its own for a streaming call).
   */
  readonly blackHolePath?: string
}

export interface FaultProxy {
  readonly host: string
  readonly port: number
  /** `127.0.0.1:<port>`: what the client is pointed at. */
  readonly target: string
  readonly stats: {
    requests: number
    unavailable: number
    resets: number
    forwarded: number
    /** Client TCP connections accepted. */
    connections: number
    /** Requests swallowed by the black hole. */
    swallowed: number
  }
}

const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "http2-settings"])

const forwardable = (headers: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders => {
  const out: http2.OutgoingHttpHeaders = {}
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined && !hopByHop.has(key) && key !== ":scheme") out[key] = value
  }
  return out
}

const responseHeaders = (headers: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders => {
  const out: http2.OutgoingHttpHeaders = {}
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined && !hopByHop.has(key)) out[key] = value
  }
  return out
}

export const start = (options: FaultProxyOptions): Effect.Effect<FaultProxy, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ proxy: FaultProxy; close: () => void }>((resume) => {
      const unavailableEvery = options.unavailableEvery ?? 10
      const resetEvery = options.resetEvery ?? 0
      const oneWay = (options.latencyMillis ?? 0) / 2
      const stats = { requests: 0, unavailable: 0, resets: 0, forwarded: 0, connections: 0, swallowed: 0 }
      const sockets = new Set<net.Socket>()
      // per client session: its 1-based order and requests so far
      const sessions = new WeakMap<http2.Http2Session, { readonly order: number; requests: number }>()
      const blackHoleAfter = options.blackHoleFirstConnectionAfter
      const swallowed = new Set<http2.ServerHttp2Stream>()
      let holed: http2.Http2Session | undefined
      let sessionCount = 0
      let upstream: http2.ClientHttp2Session | undefined
      const session = (): http2.ClientHttp2Session => {
        if (upstream === undefined || upstream.closed || upstream.destroyed) {
          const s = http2.connect(`http://${options.upstreamHost}:${options.upstreamPort}`)
          s.on("error", () => undefined) // surfaced on the streams that use it
          s.on("close", () => {
            if (upstream === s) upstream = undefined
          })
          upstream = s
        }
        return upstream
      }

      const server = http2.createServer()
      server.on("connection", (socket: net.Socket) => {
        stats.connections++
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      })
      server.on("sessionError", () => undefined)
      server.on("session", (clientSession) => {
        sessions.set(clientSession, { order: ++sessionCount, requests: 0 })
      })
      server.on("stream", (stream, headers) => {
        const n = ++stats.requests
        stream.on("error", () => undefined) // the client went away (or we reset it)
        const client = stream.session === undefined ? undefined : sessions.get(stream.session)
        const counted = options.blackHolePath === undefined || headers[":path"] === options.blackHolePath
        if (client !== undefined && counted) client.requests++
        if (counted && holed === undefined && stream.session !== undefined) {
          if (options.blackHolePath !== undefined || client?.order === 1) holed = stream.session
        }
        if (
          blackHoleAfter !== undefined && client !== undefined && counted && holed === stream.session &&
          client.requests > blackHoleAfter
        ) {
          stats.swallowed++
          swallowed.add(stream) // kept referenced and open: no answer, no reset
          stream.on("close", () => swallowed.delete(stream))
          stream.resume()
          return
        }
        if (unavailableEvery > 0 && n % unavailableEvery === 0) {
          stats.unavailable++
          stream.resume()
          stream.respond({
            ":status": 200,
            "content-type": "application/grpc",
            "grpc-status": "14",
            "grpc-message": "injected by the fault proxy"
          }, { endStream: true })
          return
        }
        stats.forwarded++
        const reset = resetEvery > 0 && n % resetEvery === 0 && stats.resets < (options.maxResets ?? Infinity)
        const up = session().request(forwardable(headers))
        let trailers: http2.OutgoingHttpHeaders = {}
        up.on("error", () => stream.destroyed || stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR))
        stream.on("close", () => up.destroyed || up.close(http2.constants.NGHTTP2_CANCEL))
        up.on("response", (h, flags) => {
          if (stream.destroyed) return
          // Trailers-only response: the status is in the headers.
          if ((flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0) {
            stream.respond(responseHeaders(h), { endStream: true })
            return
          }
          stream.respond(responseHeaders(h), { waitForTrailers: true })
          forward(up, stream, oneWay)
        })
        up.on("trailers", (t) => {
          trailers = responseHeaders(t)
        })
        stream.on("wantTrailers", () => {
          if (reset) {
            // The emulator applied the request; the client never learns it.
            stats.resets++
            stream.session?.destroy()
            return
          }
          stream.sendTrailers(trailers)
        })
        forward(stream, up, oneWay)
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({
          proxy: { host: "127.0.0.1", port, target: `127.0.0.1:${port}`, stats },
          close: () => {
            for (const socket of sockets) socket.destroy()
            upstream?.destroy()
            server.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ proxy }) => proxy))
