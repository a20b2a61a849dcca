/**
 * A destination's connection slot against a bare grpc-js server that takes AppendRows requests and
 * never answers them: the watchdog's `abort` cancels the connection it is given, also once the slot
 * has retired it (a half-closed call could still deliver what it holds).
 */
import { assert, describe, it } from "@effect/vitest"
import protos from "@google-cloud/bigquery-storage/build/protos/protos.js"
import * as grpc from "@grpc/grpc-js"
import { Cause, Deferred, Effect, Exit } from "effect"
import * as Destination from "../../../../src/internal/bigquery/storageWrite/destination.ts"
import * as Split from "../../../../src/internal/bigquery/storageWrite/split.ts"
import * as Connection from "../../../../src/internal/bigquery/transport/connection.ts"
import * as SendBacklog from "../../../../src/internal/bigquery/transport/sendBacklog.ts"
import { Code } from "../../../../src/internal/wire/grpcStatus.ts"
import { append } from "../../../support/appendAnswer.ts"
import { bytesMethod, serve } from "../../../support/grpcServer.ts"

/** A server that counts AppendRows requests and answers none. */
const silentServer = Effect.gen(function*() {
  const received = { requests: 0 }
  const server = new grpc.Server()
  server.addService({ AppendRows: bytesMethod(Connection.appendRowsPath, "bidi") }, {
    AppendRows: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on("data", () => void received.requests++)
    }
  })
  const port = yield* serve(server, grpc.ServerCredentials.createInsecure())
  const channel = yield* Effect.acquireRelease(
    Effect.sync(() => new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure())),
    (client) => Effect.sync(() => client.close())
  )
  return { received, channel }
})

const stream = "projects/p/datasets/d/tables/t/streams/s"
const descriptor = protos.google.protobuf.DescriptorProto.encode({ name: "root" }).finish()

describe("destination: the connection slot", () => {
  it.live("abort cancels a connection the slot already retired: its waiting appends fail CANCELLED", () =>
    Effect.scoped(Effect.gen(function*() {
      const { channel, received } = yield* silentServer
      const slot = yield* Destination.makeSlot(channel, stream, SendBacklog.make())
      const connection = yield* slot.acquire(descriptor)
      const [batch] = Split.split([new Uint8Array([8, 1])], 1024, Split.makePool(1024, 2))
      const pending = yield* append(connection, batch?.body ?? new Uint8Array())
      for (let i = 0; i < 250 && received.requests === 0; i++) yield* Effect.sleep("20 millis")
      assert.isAbove(received.requests, 0, "the request reached the server")
      // retired (half-closed, no longer current), then its watchdog fires
      yield* slot.retire(connection)
      yield* slot.abort(connection, "no response within responseTimeout")
      const outcome = yield* Deferred.await(pending).pipe(Effect.result, Effect.timeout("5 seconds"))
      assert.isTrue(outcome._tag === "Failure" && outcome.failure.code === Code.CANCELLED)
      // a second watchdog on the same connection changes nothing
      yield* slot.abort(connection, "no response within responseTimeout")
      const next = yield* slot.acquire(descriptor)
      assert.notStrictEqual(next, connection, "the next append opens a new connection")
    })))

  it.live("a closed slot opens no connection: an append waking after the writer closed cannot leak a stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const { channel } = yield* silentServer
      const slot = yield* Destination.makeSlot(channel, stream, SendBacklog.make())
      const first = yield* slot.acquire(descriptor)
      yield* slot.close
      assert.isTrue(first.isBroken(), "close ends the current connection")
      // what an append fiber in its reconnect loop does next, if it runs before it is interrupted
      const exit = yield* Effect.exit(slot.acquire(descriptor))
      assert.isTrue(Exit.isFailure(exit), "acquire after close opened a connection nobody closes")
      if (Exit.isFailure(exit)) assert.isTrue(Cause.hasInterruptsOnly(exit.cause))
    })))
})
