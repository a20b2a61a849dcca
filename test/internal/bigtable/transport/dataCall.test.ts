/**
 * The Bigtable data calls' seam (`StartCall`, ADR 0036) on both transports, one shared body each:
 * straight on a grpc-js channel (`directCall.ts`) and on our HTTP/2 data path (`http2Call.ts`),
 * against an in-process grpc-js server on loopback (real HTTP/2): every message in order then the
 * end, non-OK statuses as `ServiceError`-shaped errors, the deadline, cancellation (also of an
 * interrupted `mutateRows`), a malformed response, CheckAndMutateRow, and the production path's
 * TLS and credentials.
 */
import { assert, describe, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Deferred, Duration, Effect, Fiber, type Scope } from "effect"
import * as http2 from "node:http2"
import { Mutation, RowMutationEntry } from "../../../../src/Bigtable/index.ts"
import { checkAndMutateRowPath } from "../../../../src/internal/bigtable/transport/checkAndMutateProto.ts"
import * as client from "../../../../src/internal/bigtable/transport/client.ts"
import { dataCalls } from "../../../../src/internal/bigtable/transport/connect.ts"
import type { StartCall } from "../../../../src/internal/bigtable/transport/dataCall.ts"
import { onChannel } from "../../../../src/internal/bigtable/transport/directCall.ts"
import { overHttp2 } from "../../../../src/internal/bigtable/transport/http2Call.ts"
import { type HeaderSource, productionChannel } from "../../../../src/internal/wire/grpcChannel.ts"
import { fromError } from "../../../../src/internal/wire/grpcStatus.ts"
import * as DataPath from "../../../../src/internal/wire/http2/dataPath.ts"
import { identity, serve } from "../../../support/grpcServer.ts"
import { selfSigned } from "../../../support/selfSigned.ts"

const streamPath = "/test.Stream/Stream"

const serverStream = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: false,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity
})

type Handler = (call: grpc.ServerWritableStream<Buffer, Buffer>) => void

/** A server with one server-streaming method per path, each answered by its handler. */
const server = (handlers: Record<string, Handler>, credentials = grpc.ServerCredentials.createInsecure()) =>
  Effect.gen(function*() {
    const s = new grpc.Server()
    const definitions: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {}
    const implementations: Record<string, Handler> = {}
    for (const [path, handler] of Object.entries(handlers)) {
      definitions[path] = serverStream(path)
      implementations[path] = handler
    }
    s.addService(definitions, implementations)
    return yield* serve(s, credentials)
  })

type Transport = DataPath.Transport

/**
 * A bare HTTP/2 server on a free loopback port that answers every stream at once with an OK trailers-only
 * response, and counts the streams opened on it.
 */
const countingServer = Effect.acquireRelease(
  Effect.callback<{
    readonly h2: http2.Http2Server
    readonly sessions: Set<http2.ServerHttp2Session>
    readonly port: number
    readonly streams: () => number
  }>(
    (resume) => {
      let streams = 0
      const h2 = http2.createServer()
      const sessions = new Set<http2.ServerHttp2Session>()
      h2.on("session", (session) => {
        sessions.add(session)
        session.on("close", () => sessions.delete(session))
      })
      h2.on("stream", (stream) => {
        streams++
        stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "0" }, { endStream: true })
      })
      h2.listen(0, "127.0.0.1", () => {
        const address = h2.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ h2, sessions, port, streams: () => streams }))
      })
    }
  ),
  ({ h2, sessions }) =>
    Effect.callback<void>((resume) => {
      h2.close(() => resume(Effect.void))
      // closing waits for the sessions: they end with it (a client's channel may keep its connection)
      for (const session of sessions) session.destroy()
    })
)

/** The calls of `transport` to the plaintext server on `port`, closed with the scope. */
const startOn = (transport: Transport, port: number): Effect.Effect<StartCall, never, Scope.Scope> =>
  transport === "http2"
    ? dataCalls("http2", { _tag: "emulator", endpoint: { host: "127.0.0.1", port, target: `127.0.0.1:${port}` } })
    : Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure())),
        (c) => Effect.sync(() => c.close())
      ),
      (c) => onChannel(c.getChannel())
    )

interface Outcome {
  readonly messages: Array<string>
  readonly error: unknown
}

/** One call through `start`: the messages received and how it ended. */
const collect = (
  start: StartCall,
  path: string,
  timeout: Duration.Duration = Duration.seconds(10),
  request = Buffer.from("request"),
  routing = "table_name=t"
) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<Outcome>()
    const messages: Array<string> = []
    const cancel = yield* start(path, (reserve) => Buffer.concat([Buffer.alloc(reserve), request]), routing, timeout, {
      onMessage: (m) => messages.push(Buffer.from(m).toString()),
      onEnd: (error) => Deferred.doneUnsafe(done, Effect.succeed({ messages, error }))
    })
    return yield* Deferred.await(done).pipe(Effect.onInterrupt(() => Effect.sync(() => cancel("interrupted"))))
  })

describe.each(["http2", "grpc-js"] as const)("StartCall on %s", (transport) => {
  it.live("delivers every message in order, then ends OK; the request and routing header reach the server", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen: Array<{ request: string; header: Array<grpc.MetadataValue>; timeout: boolean }> = []
      const port = yield* server({
        [streamPath]: (call) => {
          seen.push({
            request: call.request.toString(),
            header: call.metadata.get("x-goog-request-params"),
            timeout: call.getDeadline() !== Infinity
          })
          for (const m of ["a", "b", "c"]) call.write(Buffer.from(m))
          call.end()
        }
      })
      const result = yield* collect(yield* startOn(transport, port), streamPath, undefined, Buffer.from("hello"))
      assert.deepStrictEqual(result.messages, ["a", "b", "c"])
      assert.isUndefined(result.error)
      assert.deepStrictEqual(seen, [{ request: "hello", header: ["table_name=t"], timeout: true }])
    })))

  it.live("many messages, some larger than a frame: each arrives whole and in order", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({
        [streamPath]: (call) => {
          for (let i = 0; i < 1000; i++) call.write(Buffer.from(i % 100 === 0 ? String(i).repeat(20_000) : String(i)))
          call.end()
        }
      })
      const result = yield* collect(yield* startOn(transport, port), streamPath)
      assert.deepStrictEqual(
        result.messages,
        Array.from({ length: 1000 }, (_, i) => i % 100 === 0 ? String(i).repeat(20_000) : String(i))
      )
      assert.isUndefined(result.error)
    })))

  it.live("a non-OK status ends the call with code, details and the trailers as metadata", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({
        [streamPath]: (call) => {
          call.write(Buffer.from("partial"))
          const metadata = new grpc.Metadata()
          metadata.set("x-why", "busy")
          metadata.set("x-detail-bin", Buffer.from([0, 1, 2, 255]))
          call.emit("error", { code: grpc.status.UNAVAILABLE, details: "try later, 100% (ü)", metadata })
        }
      })
      const result = yield* collect(yield* startOn(transport, port), streamPath)
      assert.deepStrictEqual(result.messages, ["partial"])
      assert.instanceOf(result.error, Error)
      const error = result.error as grpc.ServiceError
      assert.strictEqual(error.code, grpc.status.UNAVAILABLE)
      assert.strictEqual(error.details, "try later, 100% (ü)")
      assert.strictEqual(error.message, "14 UNAVAILABLE: try later, 100% (ü)")
      assert.deepStrictEqual(error.metadata.get("x-why"), ["busy"])
      assert.deepStrictEqual(error.metadata.get("x-detail-bin"), [Buffer.from([0, 1, 2, 255])])
      assert.deepStrictEqual(fromError(error), { code: grpc.status.UNAVAILABLE, message: "try later, 100% (ü)" })
    })))

  it.live("an unimplemented method ends UNIMPLEMENTED", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({ [streamPath]: (call) => call.end() })
      const result = yield* collect(yield* startOn(transport, port), "/test.Stream/Missing")
      assert.strictEqual(fromError(result.error).code, grpc.status.UNIMPLEMENTED)
    })))

  it.live("past its deadline the server ends the call DEADLINE_EXCEEDED (grpc-timeout reached it)", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({ [streamPath]: () => {} })
      const started = Date.now()
      const result = yield* collect(yield* startOn(transport, port), streamPath, Duration.millis(200))
      assert.strictEqual(fromError(result.error).code, grpc.status.DEADLINE_EXCEEDED)
      assert.isAtLeast(Date.now() - started, 150)
      assert.isBelow(Date.now() - started, 5_000)
    })))

  it.live("a call to a port nobody listens on ends UNAVAILABLE", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({ [streamPath]: (call) => call.end() })
      const start = yield* startOn(transport, port)
      const closedPort = yield* Effect.scoped(server({ [streamPath]: (call) => call.end() }))
      const result = yield* collect(yield* startOn(transport, closedPort), streamPath, Duration.seconds(5))
      assert.strictEqual(fromError(result.error).code, grpc.status.UNAVAILABLE)
      assert.isUndefined((yield* collect(start, streamPath)).error)
    })))

  it.live("cancel ends the call CANCELLED on the server and reports nothing more", () =>
    Effect.scoped(Effect.gen(function*() {
      const arrived = yield* Deferred.make<void>()
      const cancelled = yield* Deferred.make<void>()
      const port = yield* server({
        [streamPath]: (call) => {
          call.on("cancelled", () => Deferred.doneUnsafe(cancelled, Effect.void))
          call.write(Buffer.from("first"))
          Deferred.doneUnsafe(arrived, Effect.void)
        }
      })
      const reported: Array<string> = []
      const received = yield* Deferred.make<void>()
      const start = yield* startOn(transport, port)
      const cancel = yield* start(streamPath, (reserve) => Buffer.alloc(reserve), "", Duration.seconds(10), {
        onMessage: (m) => {
          reported.push(`message ${Buffer.from(m).toString()}`)
          Deferred.doneUnsafe(received, Effect.void)
        },
        onEnd: (error) => reported.push(`end ${fromError(error).code}`)
      })
      yield* Deferred.await(arrived)
      // the message has reached this side before the cancel (a fixed sleep was a guess on a loaded machine)
      yield* Deferred.await(received)
      cancel("interrupted")
      cancel("interrupted") // twice is harmless
      yield* Deferred.await(cancelled)
      yield* Effect.sleep(Duration.millis(50))
      assert.deepStrictEqual(reported, ["message first"])
    })))

  it.live("an interrupted mutateRows cancels its call", () =>
    Effect.scoped(Effect.gen(function*() {
      const arrived = yield* Deferred.make<void>()
      const cancelled = yield* Deferred.make<void>()
      const port = yield* server({
        [client.mutateRowsPath]: (call) => {
          call.on("cancelled", () => Deferred.doneUnsafe(cancelled, Effect.void))
          Deferred.doneUnsafe(arrived, Effect.void)
        }
      })
      const fiber = yield* Effect.forkChild(
        client.mutateRows(yield* startOn(transport, port))({
          tableName: "projects/p/instances/i/tables/t",
          entries: [],
          timeout: Duration.seconds(30)
        })
      )
      yield* Deferred.await(arrived)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(cancelled)
    })))

  // on the TestClock: every call here ends by the server's answer or at once, none by a timer
  it.effect("an encode that throws ends the call through its listener, before any stream is opened", () =>
    Effect.scoped(Effect.gen(function*() {
      const { port, streams } = yield* countingServer
      const start = yield* startOn(transport, port)
      const call = (encode: (reserve: number) => Buffer) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<unknown>()
          yield* start(streamPath, encode, "", Duration.seconds(10), {
            onMessage: () => {},
            onEnd: (error) => Deferred.doneUnsafe(done, Effect.succeed(error))
          })
          return yield* Deferred.await(done)
        })
      const thrown = new RangeError("the request does not encode")
      const throwing = () => {
        throw thrown
      }
      assert.strictEqual(yield* call(throwing), thrown, "before a connection")
      assert.isUndefined(yield* call((reserve) => Buffer.alloc(reserve)), "a call that encodes ends OK")
      assert.strictEqual(yield* call(throwing), thrown, "on the connection that is up")
      assert.strictEqual(streams(), 1, "only the call that encoded opened a stream")
    })))

  it.effect("a MutateRows request that does not encode fails its entries without a code, and opens no stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const { port, streams } = yield* countingServer
      const mutate = client.mutateRows(yield* startOn(transport, port))
      const entries = [RowMutationEntry.make("k", Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }))]
      const request = { tableName: "projects/p/instances/i/tables/t", entries, timeout: Duration.seconds(10) }
      // the first call brings the connection up: the second starts at once on it (the HTTP/2 path's fast start)
      assert.deepStrictEqual((yield* mutate(request)).map((s) => s.code), [undefined])
      assert.strictEqual(streams(), 1)
      // a size that disagrees with the entry: encoding it throws (the sizes are measured at admission)
      const statuses = yield* mutate({ ...request, entryByteSizes: [1] })
      assert.isUndefined(statuses[0]?.code)
      assert.include(statuses[0]?.message, "not the 1 it measured")
      assert.strictEqual(streams(), 1, "no stream for the request that did not encode")
    })))

  it.live("a malformed MutateRowsResponse fails its unanswered entries without a code and cancels the call", () =>
    Effect.scoped(Effect.gen(function*() {
      const cancelled = yield* Deferred.make<void>()
      const port = yield* server({
        [client.mutateRowsPath]: (call) => {
          call.on("cancelled", () => Deferred.doneUnsafe(cancelled, Effect.void))
          call.write(Buffer.from([0x0a, 0xff])) // field 1, a length past the end
        }
      })
      const statuses = yield* client.mutateRows(yield* startOn(transport, port))({
        tableName: "projects/p/instances/i/tables/t",
        entries: [RowMutationEntry.make("k", Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }))],
        timeout: Duration.seconds(30)
      })
      assert.strictEqual(statuses.length, 1)
      assert.isUndefined(statuses[0]?.code)
      assert.include(statuses[0]?.message, "malformed MutateRowsResponse")
      yield* Deferred.await(cancelled)
    })))

  it.live("CheckAndMutateRow: predicate_matched from the response; a missing response and a status fail", () =>
    Effect.scoped(Effect.gen(function*() {
      let answer: "matched" | "applied" | "nothing" | "unavailable" = "matched"
      const port = yield* server({
        [checkAndMutateRowPath]: (call) => {
          if (answer === "unavailable") return call.emit("error", { code: grpc.status.UNAVAILABLE, details: "down" })
          if (answer === "matched") call.write(Buffer.from([0x08, 0x01]))
          if (answer === "applied") call.write(Buffer.alloc(0))
          call.end()
        }
      })
      const send = client.checkAndMutateRow(yield* startOn(transport, port))
      const request = {
        tableName: "projects/p/instances/i/tables/t",
        appProfileId: undefined,
        rowKey: Buffer.from("k"),
        markerFamily: "m",
        identity: "0".repeat(32),
        mutations: [{ _tag: "DeleteFromFamily" as const, family: "cf" }],
        timeout: Duration.seconds(10)
      }
      assert.isTrue(yield* send(request))
      answer = "applied"
      assert.isFalse(yield* send(request))
      answer = "nothing"
      const missing = yield* Effect.flip(send(request))
      assert.include(missing.message, "CheckAndMutateRow")
      assert.include(
        missing.reason._tag === "BigtableRpcFailed" ? missing.reason.description : "",
        "without a response"
      )
      answer = "unavailable"
      const failed = yield* Effect.flip(send(request))
      assert.strictEqual(failed.reason._tag === "BigtableRpcFailed" ? failed.reason.code : -1, grpc.status.UNAVAILABLE)
      assert.strictEqual(failed.reason._tag === "BigtableRpcFailed" ? failed.reason.description : "", "down")
    })))

  it.live("over TLS with a self-signed root, the credentials' headers reach the server", () =>
    Effect.scoped(Effect.gen(function*() {
      const { cert, key } = yield* selfSigned
      const seen: Array<Array<grpc.MetadataValue>> = []
      const port = yield* server({
        [streamPath]: (call) => {
          seen.push(call.metadata.get("authorization"))
          call.end()
        }
      }, grpc.ServerCredentials.createSsl(null, [{ private_key: key, cert_chain: cert }]))
      const urls: Array<string | undefined> = []
      const auth: HeaderSource = {
        getRequestHeaders: (url) => {
          urls.push(url)
          return Promise.resolve(new Headers({ authorization: "Bearer direct" }))
        }
      }
      const target = `localhost:${port}`
      const start = transport === "http2"
        ? yield* overHttp2((yield* DataPath.opener({
          target,
          tls: { extraRoots: [cert] },
          auth: { source: auth, service: "Bigtable", url: "https://localhost/test.Stream" }
        }))())
        : onChannel((yield* Effect.acquireRelease(
          Effect.sync(() => productionChannel(target, auth, "Bigtable", cert)),
          (ch) => Effect.sync(() => ch.close())
        )).getChannel())
      assert.isUndefined((yield* collect(start, streamPath)).error)
      assert.isUndefined((yield* collect(start, streamPath)).error)
      assert.deepStrictEqual(seen, [["Bearer direct"], ["Bearer direct"]])
      // grpc-js asks the auth client on every call; ours once per token (accessTokens.ts)
      assert.deepStrictEqual(
        urls,
        Array.from({ length: transport === "http2" ? 1 : 2 }, () => "https://localhost/test.Stream")
      )
    })))

  it.live("over TLS, a certificate the roots do not trust fails the call UNAVAILABLE", () =>
    Effect.scoped(Effect.gen(function*() {
      const { cert, key } = yield* selfSigned
      const port = yield* server(
        { [streamPath]: (call) => call.end() },
        grpc.ServerCredentials.createSsl(null, [{ private_key: key, cert_chain: cert }])
      )
      const auth: HeaderSource = {
        getRequestHeaders: () => Promise.resolve(new Headers({ authorization: "Bearer x" }))
      }
      const target = `localhost:${port}`
      const start = transport === "http2"
        ? yield* overHttp2((yield* DataPath.opener({
          target,
          tls: { extraRoots: [] },
          auth: { source: auth, service: "Bigtable", url: "https://localhost/test.Stream" }
        }))())
        : onChannel((yield* Effect.acquireRelease(
          Effect.sync(() => productionChannel(target, auth, "Bigtable")),
          (ch) => Effect.sync(() => ch.close())
        )).getChannel())
      const result = yield* collect(start, streamPath, Duration.seconds(5))
      assert.strictEqual(fromError(result.error).code, grpc.status.UNAVAILABLE)
      assert.include(fromError(result.error).message, "certificate")
    })))
})
