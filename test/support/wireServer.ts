/**
 * A gRPC server written on bare `node:http2`, for the wire faults a grpc-js server cannot be made to
 * commit: each call's handler drives the stream by hand, answering with messages and trailers, or a
 * trailers-only response, a given HTTP status, an `RST_STREAM` of any code, a `GOAWAY` (of any code,
 * with any last stream id) while calls are in flight, an oversized or compressed message, a message
 * split across many DATA frames, or nothing at all; and it can stop reading a stream (so HTTP/2 flow
 * control pushes back on the client). Plaintext (h2c) or TLS with a given certificate.
 *
 * Bound to a free loopback port for the life of the scope; every session is destroyed on close.
 */
import { Effect, type Scope } from "effect"
import * as http2 from "node:http2"

/** One call as the server sees it. */
export interface WireCall {
  readonly headers: http2.IncomingHttpHeaders
  readonly stream: http2.ServerHttp2Stream
  readonly session: http2.ServerHttp2Session
  /** The request messages so far (their bytes). */
  readonly messages: Array<Buffer>
  /** Called with each request message as it arrives (set by the handler). */
  onMessage: (message: Buffer) => void
  /** Called once the client half-closed (set by the handler). */
  onEnd: () => void
  /** Sends the response headers (200, `application/grpc`), once. */
  readonly respond: (extra?: http2.OutgoingHttpHeaders) => void
  /** Sends one message (framed; `compressed` sets the flag without compressing anything). */
  readonly send: (message: Uint8Array, options?: { readonly compressed?: boolean }) => void
  /** Sends raw bytes as DATA (a prefix announcing more than follows, a message in pieces). */
  readonly sendRaw: (bytes: Uint8Array) => void
  /** Ends the call with trailers: `grpc-status`, `grpc-message` as given (already encoded), extras. */
  readonly finish: (code: number, message?: string, extra?: http2.OutgoingHttpHeaders) => void
  /** A trailers-only response: status in the one HEADERS frame, which ends the stream. */
  readonly trailersOnly: (code: number, message?: string, extra?: http2.OutgoingHttpHeaders) => void
  /** Resets the stream with `code`. */
  readonly reset: (code: number) => void
}

export interface WireServer {
  /** `127.0.0.1:<port>` (or `localhost:<port>` for TLS). */
  readonly target: string
  readonly port: number
  /** Calls received so far, in order. */
  readonly calls: Array<WireCall>
  /** Sessions (connections) accepted so far. */
  readonly sessions: Array<http2.ServerHttp2Session>
}

/** The 5-byte gRPC prefix and the message. */
export const framed = (message: Uint8Array, compressed = false): Buffer => {
  const out = Buffer.allocUnsafe(5 + message.length)
  out[0] = compressed ? 1 : 0
  out.writeUInt32BE(message.length, 1)
  out.set(message, 5)
  return out
}

/** Splits a stream of gRPC messages into messages. */
const reader = (onMessage: (message: Buffer) => void) => {
  let pending: Buffer = Buffer.alloc(0)
  return (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      const length = pending.readUInt32BE(1)
      onMessage(Buffer.from(pending.subarray(5, 5 + length)))
      pending = pending.subarray(5 + length)
    }
  }
}

const callOf = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): WireCall => {
  let responded = false
  const respond = (extra: http2.OutgoingHttpHeaders = {}) => {
    if (responded || stream.destroyed) return
    responded = true
    stream.respond({ ":status": 200, "content-type": "application/grpc", ...extra }, { waitForTrailers: true })
  }
  let trailers: http2.OutgoingHttpHeaders | undefined
  stream.on("wantTrailers", () => stream.sendTrailers(trailers ?? { "grpc-status": "0" }))
  const call: WireCall = {
    headers,
    stream,
    session: stream.session as http2.ServerHttp2Session,
    messages: [],
    onMessage: () => {},
    onEnd: () => {},
    respond,
    send: (message, options) => {
      respond()
      if (!stream.destroyed) stream.write(framed(message, options?.compressed === true))
    },
    sendRaw: (bytes) => {
      respond()
      if (!stream.destroyed) stream.write(bytes)
    },
    finish: (code, message, extra = {}) => {
      respond()
      trailers = {
        "grpc-status": String(code),
        ...(message === undefined ? {} : { "grpc-message": message }),
        ...extra
      }
      if (!stream.destroyed) stream.end()
    },
    trailersOnly: (code, message, extra = {}) => {
      if (responded || stream.destroyed) return
      responded = true
      stream.respond({
        ":status": 200,
        "content-type": "application/grpc",
        "grpc-status": String(code),
        ...(message === undefined ? {} : { "grpc-message": message }),
        ...extra
      }, { endStream: true })
    },
    reset: (code) => {
      if (!stream.destroyed) stream.close(code)
    }
  }
  const read = reader((message) => {
    call.messages.push(message)
    call.onMessage(message)
  })
  stream.on("data", read)
  stream.on("end", () => call.onEnd())
  stream.on("error", () => undefined)
  return call
}

/**
 * A server whose every call goes to `handle`; with `tls`, it serves only TLS (ALPN `h2`) with that
 * certificate.
 */
export const make = (
  handle: (call: WireCall) => void,
  options: { readonly tls?: { readonly key: Buffer; readonly cert: Buffer } } = {}
): Effect.Effect<WireServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: WireServer; readonly close: () => void }>((resume) => {
      const calls: Array<WireCall> = []
      const sessions: Array<http2.ServerHttp2Session> = []
      const server = options.tls === undefined
        ? http2.createServer()
        : http2.createSecureServer({ key: options.tls.key, cert: options.tls.cert, allowHTTP1: false })
      server.on("session", (session) => {
        sessions.push(session)
        session.on("error", () => undefined)
      })
      server.on("sessionError", () => undefined)
      server.on("stream", (stream, headers) => {
        const call = callOf(stream, headers)
        calls.push(call)
        handle(call)
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        const host = options.tls === undefined ? "127.0.0.1" : "localhost"
        resume(Effect.succeed({
          server: { target: `${host}:${port}`, port, calls, sessions },
          close: () => {
            for (const session of sessions) session.destroy()
            server.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ server }) => server))
