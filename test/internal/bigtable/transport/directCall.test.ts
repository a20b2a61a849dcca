/**
 * What is particular to the data calls straight on a grpc-js channel (`directCall.ts`): its errors
 * read as grpc-js's own, a call on a closed channel ends at once, and the renewal of the channel
 * after a call past its deadline (`channel.renewing`). What every transport does alike is in
 * `dataCall.test.ts`, run on each.
 */
import { assert, describe, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Deferred, Duration, Effect } from "effect"
import { renewing } from "../../../../src/internal/bigtable/transport/channel.ts"
import type { StartCall } from "../../../../src/internal/bigtable/transport/dataCall.ts"
import { onChannel, serviceError } from "../../../../src/internal/bigtable/transport/directCall.ts"
import { fromError } from "../../../../src/internal/wire/grpcStatus.ts"
import { identity, serve } from "../../../support/grpcServer.ts"

const streamPath = "/test.Stream/Stream"

/** A server whose one server-streaming method ends each call when `answer()` says so. */
const server = (answer: () => boolean) =>
  Effect.gen(function*() {
    const s = new grpc.Server()
    s.addService({
      Stream: {
        path: streamPath,
        requestStream: false,
        responseStream: true,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity
      }
    }, {
      Stream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        if (answer()) call.end()
      }
    })
    return yield* serve(s, grpc.ServerCredentials.createInsecure())
  })

/** One call through `start`: how it ended. */
const collect = (start: StartCall, timeout: Duration.Duration) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<unknown>()
    yield* start(streamPath, (reserve) => Buffer.alloc(reserve), "", timeout, {
      onMessage: () => {},
      onEnd: (error) => Deferred.doneUnsafe(done, Effect.succeed(error))
    })
    return yield* Deferred.await(done)
  })

describe("directCall.onChannel", () => {
  it("serviceError reads as grpc-js's own errors do", () => {
    const error = serviceError({ code: grpc.status.NOT_FOUND, details: "no table", metadata: new grpc.Metadata() })
    assert.strictEqual(error.message, "5 NOT_FOUND: no table")
    assert.deepStrictEqual(fromError(error), { code: 5, message: "no table" })
  })

  it.effect("a call on a closed channel ends at once with grpc-js's error", () =>
    Effect.gen(function*() {
      const c = new grpc.Client("127.0.0.1:1", grpc.credentials.createInsecure())
      c.close()
      const error = yield* collect(onChannel(c.getChannel()), Duration.seconds(10))
      assert.match(String(error), /shut down/)
    }))
})

describe("channel.renewing", () => {
  it.live("after a call past its deadline, later calls go on a new channel and the old one is closed", () =>
    Effect.scoped(Effect.gen(function*() {
      let answer = false
      const port = yield* server(() => answer)
      const target = `127.0.0.1:${port}`
      const opened: Array<grpc.Client> = []
      const first = new grpc.Client(target, grpc.credentials.createInsecure())
      const data = renewing(first, () => {
        const c = new grpc.Client(target, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 })
        opened.push(c)
        return c
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => data.close()))
      const timedOut = yield* collect(data.start, Duration.millis(200))
      assert.strictEqual(fromError(timedOut).code, grpc.status.DEADLINE_EXCEEDED)
      assert.strictEqual(data.renewals(), 1)
      assert.strictEqual(opened.length, 1)
      assert.strictEqual(first.getChannel().getConnectivityState(false), grpc.connectivityState.SHUTDOWN)
      answer = true
      const second = yield* collect(data.start, Duration.seconds(10))
      assert.isUndefined(second)
      assert.strictEqual(data.renewals(), 1, "an OK call renews nothing")
    })))

  it.live("a call cancelled at its deadline by the caller's timer renews the channel too", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* server(() => false)
      const target = `127.0.0.1:${port}`
      const first = new grpc.Client(target, grpc.credentials.createInsecure())
      const data = renewing(first, () => new grpc.Client(target, grpc.credentials.createInsecure()))
      yield* Effect.addFinalizer(() => Effect.sync(() => data.close()))
      const cancel = yield* data.start(streamPath, (reserve) => Buffer.alloc(reserve), "", Duration.seconds(30), {
        onMessage: () => {},
        onEnd: () => {}
      })
      cancel("deadline")
      assert.strictEqual(data.renewals(), 1)
      assert.strictEqual(first.getChannel().getConnectivityState(false), grpc.connectivityState.SHUTDOWN)
    })))
})
