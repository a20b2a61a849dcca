/**
 * A loopback TCP proxy that resets every open connection on demand: both sides see a connection reset (RST),
 * as after a network fault or a load-balancer restart. Unlike `faultProxy.ts` (per-gRPC-call faults, which
 * fire when a call ends), this one cuts long-lived bidi streams such as AppendRows in the middle.
 */
import { Effect, type Scope } from "effect"
import * as net from "node:net"

export interface ResetProxy {
  /** `127.0.0.1:<port>` to give to the client. */
  readonly endpoint: string
  /** Resets every open connection; returns how many were reset. */
  readonly resetAll: Effect.Effect<number>
  readonly stats: { connections: number; resets: number }
}

/** Starts a proxy to `target` (`host:port`); it stops with the scope. */
export const make = (target: string): Effect.Effect<ResetProxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    const colon = target.lastIndexOf(":")
    const host = target.slice(0, colon)
    const port = Number(target.slice(colon + 1))
    const pairs = new Set<readonly [net.Socket, net.Socket]>()
    const stats = { connections: 0, resets: 0 }
    const server = net.createServer((client) => {
      stats.connections++
      const upstream = net.connect({ host, port })
      const pair = [client, upstream] as const
      pairs.add(pair)
      const close = () => {
        pairs.delete(pair)
        client.destroy()
        upstream.destroy()
      }
      client.on("error", close)
      upstream.on("error", close)
      client.on("close", close)
      upstream.on("close", close)
      client.pipe(upstream)
      upstream.pipe(client)
    })
    const listening = yield* Effect.acquireRelease(
      Effect.callback<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as net.AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          for (const [a, b] of pairs) {
            a.destroy()
            b.destroy()
          }
          server.close(() => resume(Effect.void))
        })
    )
    return {
      endpoint: `127.0.0.1:${listening}`,
      resetAll: Effect.sync(() => {
        let n = 0
        for (const pair of Array.from(pairs)) {
          pairs.delete(pair)
          pair[0].resetAndDestroy()
          pair[1].resetAndDestroy()
          n++
        }
        stats.resets += n
        return n
      }),
      stats
    }
  })
