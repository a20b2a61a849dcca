/**
 * Data calls straight on a grpc-js channel (`directCall.ts`) against an in-process grpc-js server on
 * loopback: every message in order then the end, non-OK statuses as `ServiceError`s, the deadline,
 * cancellation (also of an interrupted `mutateRows`), a malformed response, the production channel's
 * call credentials, and the renewal of the channel after a call past its deadline.
 */
import { assert, describe, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Deferred, Duration, Effect, Fiber } from "effect"
import { Mutation, RowMutationEntry } from "../../../../src/Bigtable/index.ts"
import { renewing } from "../../../../src/internal/bigtable/transport/channel.ts"
import { checkAndMutateRowPath } from "../../../../src/internal/bigtable/transport/checkAndMutateProto.ts"
import * as client from "../../../../src/internal/bigtable/transport/client.ts"
import type { StartCall } from "../../../../src/internal/bigtable/transport/dataCall.ts"
import { onChannel, serviceError } from "../../../../src/internal/bigtable/transport/directCall.ts"
import { type HeaderSource, productionChannel } from "../../../../src/internal/wire/grpcChannel.ts"
import { fromError } from "../../../../src/internal/wire/grpcStatus.ts"
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

/** A plaintext client closed with the scope. */
const clientTo = (target: string) =>
  Effect.acquireRelease(
    Effect.sync(() => new grpc.Client(target, grpc.credentials.createInsecure())),
    (c) => Effect.sync(() => c.close())
  )

/** One call through `start`: the messages received and how it ended. */
const collect = (start: StartCall, path: string, deadline: grpc.Deadline, request = Buffer.from("request")) =>
  Effect.callback<{ readonly messages: Array<string>; readonly error: unknown }>((resume) => {
    const messages: Array<string> = []
    const cancel = start(path, request, new grpc.Metadata(), deadline, {
      onMessage: (m) => messages.push(m.toString()),
      onEnd: (error) => resume(Effect.succeed({ messages, error }))
    })
    return Effect.sync(cancel)
  })

const soon = () => Date.now() + 10_000

describe("directCall.onChannel", () => {
  it.live("delivers every message in order, then ends OK; the request and metadata reach the server", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen: Array<{ request: string; header: Array<grpc.MetadataValue> }> = []
      const port = yield* server({
        [streamPath]: (call) => {
          seen.push({ request: call.request.toString(), header: call.metadata.get("x-test") })
          for (const m of ["a", "b", "c"]) call.write(Buffer.from(m))
          call.end()
        }
      })
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const start = onChannel(c.getChannel())
      const result = yield* Effect.callback<{ messages: Array<string>; error: unknown }>((resume) => {
        const messages: Array<string> = []
        const metadata = new grpc.Metadata()
        metadata.set("x-test", "v")
        start(streamPath, Buffer.from("hello"), metadata, soon(), {
          onMessage: (m) => messages.push(m.toString()),
          onEnd: (error) => resume(Effect.succeed({ messages, error }))
        })
      })
      assert.deepStrictEqual(result.messages, ["a", "b", "c"])
      assert.isUndefined(result.error)
      assert.deepStrictEqual(seen, [{ request: "hello", header: ["v"] }])
    })))

  it.live("many messages: each is read after the one before", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({
        [streamPath]: (call) => {
          for (let i = 0; i < 1000; i++) call.write(Buffer.from(String(i)))
          call.end()
        }
      })
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const result = yield* collect(onChannel(c.getChannel()), streamPath, soon())
      assert.deepStrictEqual(result.messages, Array.from({ length: 1000 }, (_, i) => String(i)))
      assert.isUndefined(result.error)
    })))

  it.live("a non-OK status ends the call with a ServiceError (code, details, metadata, message)", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({
        [streamPath]: (call) => {
          call.write(Buffer.from("partial"))
          const metadata = new grpc.Metadata()
          metadata.set("x-why", "busy")
          call.emit("error", { code: grpc.status.UNAVAILABLE, details: "try later", metadata })
        }
      })
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const result = yield* collect(onChannel(c.getChannel()), streamPath, soon())
      assert.deepStrictEqual(result.messages, ["partial"])
      assert.instanceOf(result.error, Error)
      const error = result.error as grpc.ServiceError
      assert.strictEqual(error.code, grpc.status.UNAVAILABLE)
      assert.strictEqual(error.details, "try later")
      assert.strictEqual(error.message, "14 UNAVAILABLE: try later")
      assert.deepStrictEqual(error.metadata.get("x-why"), ["busy"])
      assert.deepStrictEqual(fromError(error), { code: grpc.status.UNAVAILABLE, message: "try later" })
    })))

  it("serviceError reads as grpc-js's own errors do", () => {
    const error = serviceError({ code: grpc.status.NOT_FOUND, details: "no table", metadata: new grpc.Metadata() })
    assert.strictEqual(error.message, "5 NOT_FOUND: no table")
    assert.deepStrictEqual(fromError(error), { code: 5, message: "no table" })
  })

  it.live("an unimplemented method ends UNIMPLEMENTED", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({ [streamPath]: (call) => call.end() })
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const result = yield* collect(onChannel(c.getChannel()), "/test.Stream/Missing", soon())
      assert.strictEqual(fromError(result.error).code, grpc.status.UNIMPLEMENTED)
    })))

  it.live("past its deadline the call ends DEADLINE_EXCEEDED", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server({ [streamPath]: () => {} })
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const started = Date.now()
      const result = yield* collect(onChannel(c.getChannel()), streamPath, Date.now() + 200)
      assert.strictEqual(fromError(result.error).code, grpc.status.DEADLINE_EXCEEDED)
      assert.isAtLeast(Date.now() - started, 150)
      assert.isBelow(Date.now() - started, 5_000)
    })))

  it("a call on a closed channel throws when started", () => {
    const c = new grpc.Client("127.0.0.1:1", grpc.credentials.createInsecure())
    c.close()
    const start = onChannel(c.getChannel())
    assert.throws(
      () => start(streamPath, Buffer.alloc(0), new grpc.Metadata(), soon(), { onMessage: () => {}, onEnd: () => {} }),
      /shut down/
    )
  })

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
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const reported: Array<string> = []
      const cancel = onChannel(c.getChannel())(streamPath, Buffer.alloc(0), new grpc.Metadata(), soon(), {
        onMessage: (m) => reported.push(`message ${m.toString()}`),
        onEnd: (error) => reported.push(`end ${fromError(error).code}`)
      })
      yield* Deferred.await(arrived)
      yield* Effect.sleep(Duration.millis(50))
      cancel()
      cancel() // twice is harmless
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
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const fiber = yield* Effect.forkChild(
        client.mutateRows(onChannel(c.getChannel()))({
          tableName: "projects/p/instances/i/tables/t",
          entries: [],
          timeout: Duration.seconds(30)
        })
      )
      yield* Deferred.await(arrived)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(cancelled)
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
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const statuses = yield* client.mutateRows(onChannel(c.getChannel()))({
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
      const c = yield* clientTo(`127.0.0.1:${port}`)
      const send = client.checkAndMutateRow(onChannel(c.getChannel()))
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
      assert.include(missing.reason._tag === "RpcFailed" ? missing.reason.description : "", "without a response")
      answer = "unavailable"
      const failed = yield* Effect.flip(send(request))
      assert.strictEqual(failed.reason._tag === "RpcFailed" ? failed.reason.code : -1, grpc.status.UNAVAILABLE)
      assert.strictEqual(failed.reason._tag === "RpcFailed" ? failed.reason.description : "", "down")
    })))

  it.live("the production channel's call credentials are applied to a direct call", () =>
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
      const c = yield* Effect.acquireRelease(
        Effect.sync(() => productionChannel(`localhost:${port}`, auth, "Bigtable", cert)),
        (ch) => Effect.sync(() => ch.close())
      )
      const result = yield* collect(onChannel(c.getChannel()), streamPath, soon())
      assert.isUndefined(result.error)
      assert.deepStrictEqual(seen, [["Bearer direct"]])
      assert.deepStrictEqual(urls, ["https://localhost/test.Stream"])
    })))
})

describe("channel.renewing", () => {
  it.live("after a call past its deadline, later calls go on a new channel and the old one is closed", () =>
    Effect.scoped(Effect.gen(function*() {
      let answer = false
      const port = yield* server({
        [streamPath]: (call) => {
          if (answer) call.end()
        }
      })
      const target = `127.0.0.1:${port}`
      const opened: Array<grpc.Client> = []
      const first = new grpc.Client(target, grpc.credentials.createInsecure())
      const data = renewing(first, () => {
        const c = new grpc.Client(target, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 })
        opened.push(c)
        return c
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => data.close()))
      const ok = yield* collect(data.start, streamPath, Date.now() + 200)
      assert.strictEqual(fromError(ok.error).code, grpc.status.DEADLINE_EXCEEDED)
      assert.strictEqual(data.renewals(), 1)
      assert.strictEqual(opened.length, 1)
      assert.strictEqual(first.getChannel().getConnectivityState(false), grpc.connectivityState.SHUTDOWN)
      answer = true
      const second = yield* collect(data.start, streamPath, soon())
      assert.isUndefined(second.error)
      assert.strictEqual(data.renewals(), 1, "an OK call renews nothing")
    })))
})
