/**
 * One channel of our HTTP/2 transport: `grpc-timeout`'s format, the headers a call sends (its own, then
 * the credentials'), one connection attempt shared by the calls that wait for it, a new connection after
 * `abandon`, a connection attempt that never completes ending UNAVAILABLE within the connect timeout,
 * and a call through an HTTP CONNECT proxy named by the environment (read through the ConfigProvider).
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import { Code } from "../../../../src/internal/wire/grpcStatus.ts"
import type { AccessTokens } from "../../../../src/internal/wire/http2/accessTokens.ts"
import * as Channel from "../../../../src/internal/wire/http2/channel.ts"
import * as DataPath from "../../../../src/internal/wire/http2/dataPath.ts"
import { silentTcp } from "../../../support/blackHole.ts"
import * as Wire from "../../../support/wireServer.ts"

const options = (target: string): Channel.ChannelOptions => ({
  target,
  tls: undefined,
  tokens: undefined,
  proxy: undefined,
  keepaliveTime: Duration.seconds(30),
  keepaliveTimeout: Duration.seconds(10),
  connectTimeout: Duration.millis(500),
  maxReceiveMessageLength: 1024,
  initialWindowSize: 65_535,
  userAgent: DataPath.userAgent
})

/** One call on `channel`: how it ended (its error's code, 0 for OK). */
const call = (channel: Channel.Http2Channel) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<number>()
    const c = yield* channel.call("/t.S/M", { "x-goog-request-params": "a=b" }, Duration.seconds(5), {
      onMessage: () => {},
      onEnd: (error) => Deferred.doneUnsafe(done, Effect.succeed(error?.code ?? 0))
    })
    c.writeLast(new Uint8Array(5))
    return yield* Deferred.await(done)
  })

const answering = Wire.make((c) => c.onEnd = () => c.finish(Code.OK))

describe("channel", () => {
  it("formats grpc-timeout in at most 8 digits, rounding up", () => {
    assert.strictEqual(Channel.grpcTimeout(Duration.millis(1500)), "1500m")
    assert.strictEqual(Channel.grpcTimeout(Duration.nanos(1n)), "1m")
    assert.strictEqual(Channel.grpcTimeout(Duration.days(2)), "172800S")
    assert.strictEqual(Channel.grpcTimeout(Duration.days(20_000)), "480000H")
  })

  it.live("calls waiting for a connection share one attempt; the headers are grpc-js's", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* answering
      const channel = Channel.make(options(server.target), yield* Effect.scope)
      yield* Effect.addFinalizer(() => Effect.sync(channel.close))
      const codes = yield* Effect.all(Array.from({ length: 10 }, () => call(channel)), { concurrency: "unbounded" })
      assert.deepStrictEqual(codes, Array.from({ length: 10 }, () => 0))
      assert.strictEqual(channel.connections(), 1)
      assert.strictEqual(server.sessions.length, 1)
      const headers = server.calls[0]?.headers
      assert.strictEqual(headers?.[":method"], "POST")
      assert.strictEqual(headers?.[":scheme"], "http")
      assert.strictEqual(headers?.[":path"], "/t.S/M")
      assert.strictEqual(headers?.["content-type"], "application/grpc")
      assert.strictEqual(headers?.["te"], "trailers")
      assert.strictEqual(headers?.[":authority"], server.target)
      assert.strictEqual(headers?.["user-agent"], DataPath.userAgent)
      assert.strictEqual(headers?.["grpc-accept-encoding"], "identity")
      assert.strictEqual(headers?.["x-goog-request-params"], "a=b")
      assert.match(String(headers?.["grpc-timeout"]), /^\d+m$/)
    })))

  it.live("after abandon, calls go on a new connection; the old one closes once idle", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* answering
      const channel = Channel.make(options(server.target), yield* Effect.scope)
      yield* Effect.addFinalizer(() => Effect.sync(channel.close))
      assert.strictEqual(yield* call(channel), 0)
      channel.abandon()
      assert.strictEqual(yield* call(channel), 0)
      assert.strictEqual(channel.connections(), 2)
      assert.strictEqual(server.sessions.length, 2)
      for (let i = 0; i < 500 && !server.sessions[0]?.closed; i++) yield* Effect.sleep("10 millis")
      assert.isTrue(server.sessions[0]?.closed)
    })))

  it.effect("callNow starts a call only when nothing needs waiting for: a connection up, credentials fresh", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* answering
      let fresh: Readonly<Record<string, string>> | undefined = { authorization: "Bearer cached" }
      const tokens: AccessTokens = {
        headers: Effect.succeed({ authorization: "Bearer fetched" }),
        fresh: () => fresh,
        fetches: () => 0
      }
      const channel = Channel.make({ ...options(server.target), tokens }, yield* Effect.scope)
      yield* Effect.addFinalizer(() => Effect.sync(channel.close))
      const now = (handlers: { onEnd: (error: { code: number } | undefined) => void }) =>
        channel.callNow("/t.S/M", { "x-goog-request-params": "a=b" }, Duration.seconds(5), {
          onMessage: () => {},
          onEnd: handlers.onEnd
        }, 0)
      assert.isUndefined(now({ onEnd: () => {} }), "no connection yet")
      assert.strictEqual(yield* call(channel), 0)
      const done = yield* Deferred.make<number>()
      const started = now({ onEnd: (error) => Deferred.doneUnsafe(done, Effect.succeed(error?.code ?? 0)) })
      assert.isDefined(started)
      started?.writeLast(new Uint8Array(5))
      assert.strictEqual(yield* Deferred.await(done), 0)
      assert.strictEqual(server.calls[1]?.headers["authorization"], "Bearer cached")
      assert.match(String(server.calls[1]?.headers["grpc-timeout"]), /^\d+m$/)
      fresh = undefined
      assert.isUndefined(now({ onEnd: () => {} }), "credentials due for a refresh")
      fresh = { authorization: "Bearer cached" }
      channel.abandon()
      assert.isUndefined(now({ onEnd: () => {} }), "the connection was abandoned")
      assert.strictEqual(channel.connections(), 1)
    })))

  it.effect("credentials' headers follow the call's own; a capitalised name arrives lower-cased", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* answering
      const tokens: AccessTokens = {
        headers: Effect.succeed({ Authorization: "Bearer fetched", "x-goog-user-project": "billing" }),
        fresh: () => undefined,
        fetches: () => 0
      }
      const channel = Channel.make({ ...options(server.target), tokens }, yield* Effect.scope)
      yield* Effect.addFinalizer(() => Effect.sync(channel.close))
      assert.strictEqual(yield* call(channel), 0)
      const headers = server.calls[0]?.headers
      assert.strictEqual(headers?.["authorization"], "Bearer fetched")
      assert.strictEqual(headers?.["x-goog-user-project"], "billing")
      assert.strictEqual(headers?.["x-goog-request-params"], "a=b")
    })))

  it.live("an endpoint that never speaks HTTP/2 fails the call UNAVAILABLE within the connect timeout", () =>
    Effect.scoped(Effect.gen(function*() {
      const hole = yield* silentTcp
      const channel = Channel.make(options(hole.target), yield* Effect.scope)
      yield* Effect.addFinalizer(() => Effect.sync(channel.close))
      const started = Date.now()
      assert.strictEqual(yield* call(channel), Code.UNAVAILABLE)
      assert.isBelow(Date.now() - started, 3_000)
    })))

  it.live("tunnels through the HTTP CONNECT proxy the environment names, with its credentials", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* answering
      const proxy = yield* connectProxy
      const open = yield* DataPath.opener({ target: server.target, tls: undefined }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ grpc_proxy: `http://user:pw@127.0.0.1:${proxy.port}` })
        )
      )
      assert.strictEqual(yield* call(open()), 0)
      assert.deepStrictEqual(proxy.tunnels, [{
        to: server.target,
        auth: `Basic ${Buffer.from("user:pw").toString("base64")}`
      }])
    })))

  it.live("a proxy that refuses the tunnel fails the call UNAVAILABLE; no_proxy bypasses it", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* answering
      const proxy = yield* connectProxy
      const through = (env: Record<string, string>) =>
        Effect.map(
          DataPath.opener({ target: server.target, tls: undefined }).pipe(
            Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))
          ),
          (open) => open()
        )
      proxy.refuse = true
      assert.strictEqual(
        yield* call(yield* through({ https_proxy: `http://127.0.0.1:${proxy.port}` })),
        Code.UNAVAILABLE
      )
      assert.strictEqual(
        yield* call(yield* through({ https_proxy: `http://127.0.0.1:${proxy.port}`, no_proxy: "127.0.0.0/8" })),
        0
      )
      assert.strictEqual(proxy.tunnels.length, 1)
    })))
})

/** An HTTP proxy answering CONNECT (or refusing it with 403), recording each tunnel. */
const connectProxy = Effect.acquireRelease(
  Effect.callback<{ port: number; refuse: boolean; tunnels: Array<{ to: string; auth: unknown }>; close: () => void }>(
    (resume) => {
      const sockets = new Set<net.Socket>()
      const server = http.createServer()
      const state = { port: 0, refuse: false, tunnels: [] as Array<{ to: string; auth: unknown }>, close: () => {} }
      server.on("connect", (request: http.IncomingMessage, client: net.Socket) => {
        sockets.add(client)
        client.on("error", () => undefined)
        state.tunnels.push({ to: request.url ?? "", auth: request.headers["proxy-authorization"] })
        if (state.refuse) return client.end("HTTP/1.1 403 Forbidden\r\n\r\n")
        const [host, port] = (request.url ?? "").split(":")
        const upstream = net.connect({ host, port: Number(port) }, () => {
          client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
          upstream.pipe(client)
          client.pipe(upstream)
        })
        sockets.add(upstream)
        upstream.on("error", () => client.destroy())
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        state.port = typeof address === "object" && address !== null ? address.port : 0
        state.close = () => {
          for (const s of sockets) s.destroy()
          server.close()
        }
        resume(Effect.succeed(state))
      })
    }
  ),
  (proxy) => Effect.sync(() => proxy.close())
)
