/**
 * Loopback servers that never answer, for deadline tests:
 *
 * - `silentTcp`: accepts TCP connections and never writes a byte (no HTTP/2 preface, no TLS), as a
 *   black-holed load balancer or a wrong port behind a firewall does;
 * - `unansweringGrpc`: a real gRPC server whose methods accept the call and never answer;
 * - `unansweringHttp`: an HTTP server that reads each request and never responds.
 *
 * Each is bound to a free port on 127.0.0.1 for the life of the scope.
 */
import * as grpc from "@grpc/grpc-js"
import { Effect, type Scope } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import { bytesMethod, serve } from "./grpcServer.ts"

export interface BlackHole {
  /** `127.0.0.1:<port>` */
  readonly target: string
  /** Connections (or calls, for the gRPC server) accepted so far. */
  readonly accepted: () => number
}

const portOf = (server: net.Server | http.Server): number => {
  const address = server.address()
  return typeof address === "object" && address !== null ? address.port : 0
}

/**
 * Listens on a free loopback port for the life of the scope; on close, destroys every socket still
 * open (so the server's `close` does not wait on them). `accepted` counts what the server counts.
 */
const listening = (
  server: net.Server | http.Server,
  accepted: () => number
): Effect.Effect<BlackHole, never, Scope.Scope> => {
  const sockets = new Set<net.Socket>()
  server.on("connection", (socket: net.Socket) => {
    sockets.add(socket)
    socket.on("error", () => undefined)
    socket.on("close", () => sockets.delete(socket))
  })
  return Effect.acquireRelease(
    Effect.callback<BlackHole>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        resume(Effect.succeed({ target: `127.0.0.1:${portOf(server)}`, accepted }))
      })
    }),
    () =>
      Effect.sync(() => {
        for (const socket of sockets) socket.destroy()
        server.close()
      })
  )
}

/** Accepts TCP and stays silent; every socket is destroyed with the scope. */
export const silentTcp: Effect.Effect<BlackHole, never, Scope.Scope> = Effect.suspend(() => {
  let accepted = 0
  const server = net.createServer((socket) => {
    accepted++
    socket.resume() // read and drop whatever the client sends
  })
  return listening(server, () => accepted)
})

/** A gRPC server whose `methods` (unary or server-streaming paths) accept every call and never answer. */
export const unansweringGrpc = (
  methods: ReadonlyArray<{ readonly path: string; readonly kind: "unary" | "serverStream" | "bidi" }>
): Effect.Effect<BlackHole, never, Scope.Scope> =>
  Effect.gen(function*() {
    let accepted = 0
    const server = new grpc.Server()
    const definitions: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {}
    const handlers: grpc.UntypedServiceImplementation = {}
    for (const [i, method] of methods.entries()) {
      const definition = bytesMethod(method.path, method.kind === "unary" ? "unary" : "bidi")
      definitions[`m${i}`] = method.kind === "serverStream"
        ? { ...definition, requestStream: false, responseStream: true }
        : definition
      handlers[`m${i}`] = (call: { on?: (event: string, f: () => void) => void }) => {
        accepted++
        call.on?.("error", () => undefined)
      }
    }
    server.addService(definitions, handlers)
    const port = yield* serve(server, grpc.ServerCredentials.createInsecure())
    return { target: `127.0.0.1:${port}`, accepted: () => accepted }
  })

/** An HTTP server that reads each request and never responds. */
export const unansweringHttp: Effect.Effect<BlackHole, never, Scope.Scope> = Effect.suspend(() => {
  let accepted = 0
  const server = http.createServer((req) => {
    accepted++
    req.resume()
  })
  return listening(server, () => accepted)
})
