/**
 * Wire faults on the Bigtable data calls, one test body on each transport (ADR 0036): a bare
 * `node:http2` gRPC server (`wireServer.ts`) commits each fault, and both transports must end the
 * call with the code the classifiers expect: trailers-only errors with status details, HTTP statuses,
 * every RST_STREAM code, GOAWAY with calls in flight, a dropped connection, oversized and split
 * messages, a deadline, a server gone silent (keepalive), and TLS with a self-signed root.
 *
 * Where grpc-js 1.14 gives another code for the same fault, the row says so (ADR 0036 lists them).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as http2 from "node:http2"
import * as net from "node:net"
import { Mutation, RowMutationEntry } from "../../../../src/Bigtable/index.ts"
import * as client from "../../../../src/internal/bigtable/transport/client.ts"
import type { StartCall } from "../../../../src/internal/bigtable/transport/dataCall.ts"
import { Code, fromError } from "../../../../src/internal/wire/grpcStatus.ts"
import { selfSigned } from "../../../support/selfSigned.ts"
import { startCall, type Transport, transports } from "../../../support/transports.ts"
import * as Wire from "../../../support/wireServer.ts"

const path = "/google.bigtable.v2.Bigtable/MutateRows"

interface Ended {
  readonly messages: Array<Buffer>
  readonly error: unknown
}

/** One call: its messages and its end. */
const call = (start: StartCall, timeout = Duration.seconds(10)) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<Ended>()
    const messages: Array<Buffer> = []
    const cancel = yield* start(path, (reserve) => Buffer.alloc(reserve + 4, 7), "table_name=t", timeout, {
      onMessage: (m) => messages.push(Buffer.from(m)),
      onEnd: (error) => Deferred.doneUnsafe(done, Effect.succeed({ messages, error }))
    })
    return yield* Deferred.await(done).pipe(Effect.onInterrupt(() => Effect.sync(() => cancel("interrupted"))))
  })

const codeOf = (ended: Ended) => fromError(ended.error).code

const entry = RowMutationEntry.make(
  "k",
  Mutation.setCell({ family: "cf", qualifier: "q", value: "v", timestampMicros: 1000 })
)

const { constants } = http2

/** The status details of a `google.rpc.Status` (code 14, "slow down", no details), as -bin trailers carry it. */
const statusDetails = Buffer.from([0x08, 0x0e, 0x12, 0x09, ...Buffer.from("slow down")])

describe.each(transports)("Bigtable data call wire faults on %s", (transport: Transport) => {
  const against = (handle: (c: Wire.WireCall) => void) =>
    Effect.gen(function*() {
      const server = yield* Wire.make(handle)
      return { server, start: yield* startCall(transport, server.target) }
    })

  it.live("a trailers-only error: code, percent-decoded message, -bin trailers decoded", () =>
    Effect.scoped(Effect.gen(function*() {
      const { start } = yield* against((c) =>
        c.trailersOnly(Code.RESOURCE_EXHAUSTED, "quota%20exceeded%20%C3%BC", {
          "grpc-status-details-bin": statusDetails.toString("base64")
        })
      )
      const ended = yield* call(start)
      assert.deepStrictEqual(fromError(ended.error), { code: Code.RESOURCE_EXHAUSTED, message: "quota exceeded ü" })
      const metadata = (ended.error as { metadata: { get: (k: string) => Array<unknown> } }).metadata
      assert.deepStrictEqual(metadata.get("grpc-status-details-bin"), [statusDetails])
    })))

  it.live("messages split across many DATA frames, and a message in the same frame as the next", () =>
    Effect.scoped(Effect.gen(function*() {
      const { start } = yield* against((c) => {
        const big = Wire.framed(Buffer.alloc(100_000, 1))
        for (let i = 0; i < big.length; i += 7_000) c.sendRaw(big.subarray(i, i + 7_000))
        c.sendRaw(
          Buffer.concat([Wire.framed(Buffer.from("a")), Wire.framed(Buffer.alloc(0)), Wire.framed(Buffer.from("b"))])
        )
        c.finish(Code.OK)
      })
      const ended = yield* call(start)
      assert.isUndefined(ended.error)
      assert.deepStrictEqual(ended.messages.map((m) => m.length), [100_000, 1, 0, 1])
      assert.isTrue(ended.messages[0]?.every((b) => b === 1))
    })))

  for (
    const [status, code] of [
      [503, Code.UNAVAILABLE],
      [429, Code.UNAVAILABLE],
      [404, Code.UNIMPLEMENTED],
      [
        401,
        Code.UNAUTHENTICATED
      ],
      [403, Code.PERMISSION_DENIED],
      [400, Code.INTERNAL],
      [500, Code.UNKNOWN]
    ] as const
  ) {
    it.live(`an HTTP ${status} without a gRPC status ends ${code}`, () =>
      Effect.scoped(Effect.gen(function*() {
        const { start } = yield* against((c) => {
          c.stream.respond({ ":status": status, "content-type": "text/html" })
          c.stream.end("<html>an error page</html>")
        })
        const ended = yield* call(start)
        assert.deepStrictEqual(fromError(ended.error), { code, message: `Received HTTP status code ${status}` })
      })))
  }

  for (
    const [rst, code] of [
      [constants.NGHTTP2_REFUSED_STREAM, Code.UNAVAILABLE],
      [constants.NGHTTP2_CANCEL, Code.CANCELLED],
      [constants.NGHTTP2_ENHANCE_YOUR_CALM, Code.RESOURCE_EXHAUSTED],
      [constants.NGHTTP2_INADEQUATE_SECURITY, Code.PERMISSION_DENIED],
      [constants.NGHTTP2_INTERNAL_ERROR, Code.INTERNAL],
      [constants.NGHTTP2_PROTOCOL_ERROR, Code.INTERNAL],
      [constants.NGHTTP2_NO_ERROR, Code.INTERNAL]
    ] as const
  ) {
    it.live(`RST_STREAM ${rst} in the middle of the call ends it ${code}`, () =>
      Effect.scoped(Effect.gen(function*() {
        const { start } = yield* against((c) => {
          c.send(Buffer.from("partial"))
          setImmediate(() => c.reset(rst))
        })
        const ended = yield* call(start)
        assert.strictEqual(codeOf(ended), code)
      })))
  }

  it.live("a graceful GOAWAY with a call in flight: the call finishes, the next goes on a new connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const { server, start } = yield* against((c) => {
        if (server.calls.length === 1) {
          c.respond()
          c.session.goaway(constants.NGHTTP2_NO_ERROR)
          setTimeout(() => c.finish(Code.OK), 50)
        } else c.finish(Code.OK)
      })
      assert.isUndefined((yield* call(start)).error)
      assert.isUndefined((yield* call(start)).error)
      assert.strictEqual(server.sessions.length, 2)
    })))

  for (
    const [goaway, code] of [
      [constants.NGHTTP2_ENHANCE_YOUR_CALM, Code.RESOURCE_EXHAUSTED],
      [constants.NGHTTP2_INTERNAL_ERROR, Code.INTERNAL]
    ] as const
  ) {
    it.live(`a GOAWAY ${goaway} with a call in flight ends it ${code}; the next call reconnects`, () =>
      Effect.scoped(Effect.gen(function*() {
        const { server, start } = yield* against((c) => {
          c.respond()
          if (server.calls.length === 1) c.session.goaway(goaway)
          else c.finish(Code.OK)
        })
        assert.strictEqual(codeOf(yield* call(start)), code)
        assert.isUndefined((yield* call(start)).error)
        assert.strictEqual(server.sessions.length, 2)
      })))
  }

  it.live("a connection dropped with a call in flight ends it UNAVAILABLE; the next call reconnects", () =>
    Effect.scoped(Effect.gen(function*() {
      const { server, start } = yield* against((c) => {
        c.respond()
        if (server.calls.length === 1) setTimeout(() => c.session.destroy(), 20)
        else c.finish(Code.OK)
      })
      const dropped = yield* call(start)
      assert.strictEqual(codeOf(dropped), Code.UNAVAILABLE)
      assert.isUndefined((yield* call(start)).error)
      assert.strictEqual(server.sessions.length, 2)
    })))

  it.live("a message larger than 64 MiB ends the call RESOURCE_EXHAUSTED without reading it", () =>
    Effect.scoped(Effect.gen(function*() {
      const { start } = yield* against((c) => {
        c.sendRaw(Buffer.from([0, 0x04, 0, 0, 1])) // 64 MiB + 1 announced
        c.sendRaw(Buffer.alloc(1000))
      })
      const ended = yield* call(start)
      assert.strictEqual(codeOf(ended), Code.RESOURCE_EXHAUSTED)
      assert.include(fromError(ended.error).message, "larger than max")
    })))

  it.live("a server that never answers: past the deadline, DEADLINE_EXCEEDED; grpc-timeout reached the server", () =>
    Effect.scoped(Effect.gen(function*() {
      const { server, start } = yield* against(() => {})
      const statuses = yield* client.mutateRows(start)({
        tableName: "projects/p/instances/i/tables/t",
        entries: [],
        timeout: Duration.millis(300)
      }).pipe(Effect.timed)
      assert.isAtLeast(Duration.toMillis(statuses[0]), 250)
      assert.match(String(server.calls[0]?.headers["grpc-timeout"]), /^\d+m$/)
    })))

  it.live("keepalive: a call on a connection gone silent ends UNAVAILABLE within interval + timeout", () =>
    Effect.scoped(Effect.gen(function*() {
      const arrived = yield* Deferred.make<void>()
      const server = yield* Wire.make((c) => {
        c.respond()
        Deferred.doneUnsafe(arrived, Effect.void)
      })
      const proxy = yield* freezingProxy(server.port)
      const start = yield* startCall(transport, `127.0.0.1:${proxy.port}`, {
        keepalive: { time: Duration.millis(300), timeout: Duration.millis(300) }
      })
      const fiber = yield* Effect.forkChild(call(start, Duration.seconds(30)))
      // frozen once the call is on a connection: frozen before it (a fixed 100 ms did that once on a
      // loaded machine), the connection attempt's 20 s timeout ends the call, not keepalive
      yield* Deferred.await(arrived)
      proxy.freeze()
      const started = Date.now()
      const ended = yield* Fiber.join(fiber)
      assert.strictEqual(codeOf(ended), Code.UNAVAILABLE)
      assert.isBelow(Date.now() - started, 5_000)
    })))

  it.live("TLS with a self-signed root: trusted with the extra root, refused UNAVAILABLE without it", () =>
    Effect.scoped(Effect.gen(function*() {
      const { cert, key } = yield* selfSigned
      const server = yield* Wire.make((c) => {
        c.send(Buffer.from(String(c.headers["authorization"])))
        c.finish(Code.OK)
      }, { tls: { key, cert } })
      const auth = { getRequestHeaders: () => Promise.resolve(new Headers({ authorization: "Bearer t" })) }
      const trusted = yield* call(yield* startCall(transport, server.target, { tlsRoots: [cert], auth }))
      assert.isUndefined(trusted.error)
      assert.deepStrictEqual(trusted.messages.map(String), ["Bearer t"])
      const refused = yield* call(yield* startCall(transport, server.target, { tlsRoots: [], auth }))
      assert.strictEqual(codeOf(refused), Code.UNAVAILABLE)
    })))
})

describe("Bigtable data calls on http2: the deadline's local timer", () => {
  it.effect("runs on the fiber's clock: a TestClock past the deadline ends the call and cancels the stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const cancelled = yield* Deferred.make<void>()
      const server = yield* Wire.make((c) => c.stream.on("close", () => Deferred.doneUnsafe(cancelled, Effect.void)))
      const start = yield* startCall("http2", server.target)
      const fiber = yield* Effect.forkChild(
        client.mutateRows(start)({
          tableName: "projects/p/instances/i/tables/t",
          entries: [],
          timeout: Duration.seconds(60)
        })
      )
      while (server.calls.length === 0) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 10)))
      yield* TestClock.adjust("61 seconds")
      yield* Fiber.join(fiber)
      yield* Deferred.await(cancelled)
    })))

  /** A server that answers its first call (so the connection is up) and leaves every later one unanswered. */
  const upThenSilent = Effect.gen(function*() {
    const cancelled = yield* Deferred.make<void>()
    let answered = false
    const server = yield* Wire.make((c) => {
      if (!answered) {
        answered = true
        return c.finish(Code.OK)
      }
      c.stream.on("close", () => Deferred.doneUnsafe(cancelled, Effect.void))
    })
    const start = yield* startCall("http2", server.target)
    const mutate = client.mutateRows(start)
    yield* mutate({ tableName: "projects/p/instances/i/tables/t", entries: [] })
    const fiber = yield* Effect.forkChild(mutate({ tableName: "projects/p/instances/i/tables/t", entries: [entry] }))
    while (server.calls.length < 2) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 10)))
    return { start, fiber, cancelled }
  })

  it.effect("a call on a connection that is up starts at once; past its deadline on the keeper it ends DEADLINE_EXCEEDED", () =>
    Effect.scoped(Effect.gen(function*() {
      const { start, fiber, cancelled } = yield* upThenSilent
      assert.strictEqual(start.local?.deadlines.pending(), 1, "the deadline is armed on the transport's keeper")
      yield* TestClock.adjust("59 seconds")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 second")
      const statuses = yield* Fiber.join(fiber)
      assert.deepStrictEqual(statuses.map((s) => s.code), [Code.DEADLINE_EXCEEDED])
      yield* Deferred.await(cancelled)
      assert.strictEqual(start.local?.deadlines.pending(), 0)
    })))

  it.effect("interrupting a call started at once cancels its stream and clears its deadline", () =>
    Effect.scoped(Effect.gen(function*() {
      const { start, fiber, cancelled } = yield* upThenSilent
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(cancelled)
      assert.strictEqual(start.local?.deadlines.pending(), 0)
    })))
})

/** Blocks this thread for `millis`, as a SIGSTOP or a VM pause stops the process: no timer, no I/O. */
const standStill = (millis: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, millis)

// Not concurrent with the file's other tests: it stands the whole thread still, which would stretch their timed
// waits (the silent-connection keepalive test took 4.3 s beside it, against its 5 s bound; 0.65 s alone).
describe("Bigtable data calls on http2: keepalive across a stall of this process", { concurrent: false }, () => {
  it.live("a ping whose timer fired late (the process stood still) is waited for again, not taken as a dead peer", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* Wire.make((c) => c.respond())
      // answers take 250 ms to come back: a ping is in flight most of the time
      const proxy = yield* slowProxy(server.port, 250)
      const start = yield* startCall("http2", `127.0.0.1:${proxy.port}`, {
        keepalive: { time: Duration.millis(100), timeout: Duration.millis(1000) }
      })
      const fiber = yield* Effect.forkChild(call(start, Duration.seconds(60)))
      yield* Effect.sleep(Duration.millis(600))
      // stalls longer than the ping's timeout: a ping in flight is answered only after the stall, when its timer
      // has expired already (the timeout leaves 750 ms over the proxy's delay for a loaded machine's lag)
      for (let i = 0; i < 4; i++) {
        standStill(1500)
        yield* Effect.sleep(Duration.millis(300))
      }
      yield* Effect.sleep(Duration.millis(600))
      assert.isUndefined(fiber.pollUnsafe(), "the call ended: the connection was given up after a stall")
      yield* Fiber.interrupt(fiber)
    })))
})

/**
 * A TCP proxy to `port` for the life of the scope: `relay` gets each chunk with its direction and a
 * `deliver` that writes it on (or never calls it).
 */
const tcpProxy = (
  port: number,
  relay: (direction: "toServer" | "toClient", deliver: () => void) => void
) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly port: number; readonly close: () => void }>((resume) => {
      const sockets = new Set<net.Socket>()
      const server = net.createServer((socket) => {
        const upstream = net.connect({ host: "127.0.0.1", port })
        for (const s of [socket, upstream]) {
          sockets.add(s)
          s.on("error", () => undefined)
        }
        socket.on("data", (d) => relay("toServer", () => upstream.destroyed || upstream.write(d)))
        upstream.on("data", (d) => relay("toClient", () => socket.destroyed || socket.write(d)))
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed({
          port: typeof address === "object" && address !== null ? address.port : 0,
          close: () => {
            for (const s of sockets) s.destroy()
            server.close()
          }
        }))
      })
    }),
    (proxy) => Effect.sync(proxy.close)
  )

/** A TCP proxy to `port` that delays what the server sends by `millis`. */
const slowProxy = (port: number, millis: number) =>
  tcpProxy(port, (direction, deliver) => direction === "toClient" ? void setTimeout(deliver, millis) : deliver())

/** A TCP proxy to `port` that can be frozen: from then on it forwards nothing either way, resets nothing. */
const freezingProxy = (port: number) => {
  let frozen = false
  return Effect.map(
    tcpProxy(port, (_direction, deliver) => frozen || deliver()),
    (proxy) => ({ ...proxy, freeze: () => void (frozen = true) })
  )
}
