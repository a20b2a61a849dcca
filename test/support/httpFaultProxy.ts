/**
 * A loopback HTTP/1.1 proxy in front of an emulator's REST port (fake-gcs-server) that injects faults
 * request by request, as the test's `plan` says:
 *
 * - `"forward"`: passed through untouched;
 * - `"unavailable"`: answered `503` by the proxy itself, never forwarded;
 * - `"dropResponse"`: forwarded (so the emulator applies it), then the client's socket is destroyed
 *   before any of the answer reaches it: a request that landed but whose answer was lost;
 * - `"stall"`: read and never answered, never forwarded.
 *
 * The client under test only sees a different `host:port` (its public emulator option): no hooks in the
 * library.
 */
import { Effect, type Scope } from "effect"
import * as http from "node:http"
import type * as net from "node:net"

export type Fault = "forward" | "unavailable" | "dropResponse" | "stall"

export interface HttpRequestInfo {
  readonly method: string
  readonly url: string
  /** 1-based number of this request through the proxy. */
  readonly index: number
}

export interface HttpFaultProxy {
  /** `127.0.0.1:<port>` */
  readonly target: string
  /** Every request seen, with the fault applied to it. */
  readonly log: ReadonlyArray<HttpRequestInfo & { readonly fault: Fault }>
}

export const start = (options: {
  readonly upstreamPort: number
  readonly plan: (request: HttpRequestInfo) => Fault
}): Effect.Effect<HttpFaultProxy, never, Scope.Scope> =>
  Effect.suspend(() => {
    const log: Array<HttpRequestInfo & { readonly fault: Fault }> = []
    const sockets = new Set<net.Socket>()
    const server = http.createServer((req, res) => {
      const info = { method: req.method ?? "GET", url: req.url ?? "/", index: log.length + 1 }
      const fault = options.plan(info)
      log.push({ ...info, fault })
      switch (fault) {
        case "stall": {
          req.resume()
          return
        }
        case "unavailable": {
          req.resume()
          req.on("end", () => {
            res.writeHead(503, { "content-type": "application/json" })
            res.end(JSON.stringify({ error: { code: 503, message: "injected by the fault proxy" } }))
          })
          return
        }
        case "forward":
        case "dropResponse": {
          const upstream = http.request({
            host: "127.0.0.1",
            port: options.upstreamPort,
            method: req.method,
            path: req.url,
            headers: req.headers
          }, (answer) => {
            if (fault === "dropResponse") {
              answer.resume()
              answer.on("end", () => req.socket.destroy())
              return
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(res)
          })
          upstream.on("error", () => req.socket.destroy())
          req.pipe(upstream)
          return
        }
      }
    })
    server.on("connection", (socket: net.Socket) => {
      sockets.add(socket)
      socket.on("error", () => undefined)
      socket.on("close", () => sockets.delete(socket))
    })
    return Effect.acquireRelease(
      Effect.callback<HttpFaultProxy>((resume) => {
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          const port = typeof address === "object" && address !== null ? address.port : 0
          resume(Effect.succeed({ target: `127.0.0.1:${port}`, log }))
        })
      }),
      () =>
        Effect.sync(() => {
          for (const socket of sockets) socket.destroy()
          server.close()
        })
    )
  })
