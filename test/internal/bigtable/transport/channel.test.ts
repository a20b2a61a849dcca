/**
 * A MutateRows past its deadline abandons its connection: behind a fault proxy whose first
 * connection swallows every request (a black hole that resets nothing), the next call goes out on a
 * new TCP connection, so the sink's retry succeeds instead of feeding the same black hole until
 * keepalive notices (~40 s).
 */
import { assert, describe, it } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Duration, Effect, Layer, Stream } from "effect"
import { createRequire } from "node:module"
import protobuf from "protobufjs"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../../src/Bigtable/index.ts"
import * as client from "../../../../src/internal/bigtable/transport/client.ts"
import * as connect from "../../../../src/internal/bigtable/transport/connect.ts"
import * as FaultProxy from "../../../support/faultProxy.ts"
import { serve } from "../../../support/grpcServer.ts"

const require = createRequire(import.meta.url)
const root = protobuf.Root.fromJSON(
  require("@google-cloud/bigtable-api/build/protos/protos.json") as protobuf.INamespace
)
const MutateRowsRequest = root.lookupType("google.bigtable.v2.MutateRowsRequest")
const MutateRowsResponse = root.lookupType("google.bigtable.v2.MutateRowsResponse")

const identity = (b: Buffer): Buffer => b

/** A MutateRows server that applies every entry (OK), counting entries applied. */
const okServer = Effect.gen(function*() {
  let applied = 0
  const server = new grpc.Server()
  server.addService({
    MutateRows: {
      path: client.mutateRowsPath,
      requestStream: false,
      responseStream: true,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity
    }
  }, {
    MutateRows: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const request = MutateRowsRequest.toObject(MutateRowsRequest.decode(call.request)) as {
        entries?: ReadonlyArray<unknown>
      }
      const entries = request.entries ?? []
      applied += entries.length
      const response = MutateRowsResponse.fromObject({
        entries: entries.map((_, index) => ({ index, status: { code: 0 } }))
      })
      call.write(Buffer.from(MutateRowsResponse.encode(response).finish()))
      call.end()
    }
  })
  const port = yield* serve(server, grpc.ServerCredentials.createInsecure())
  return { port, applied: () => applied }
})

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))

const blackHoled = Effect.gen(function*() {
  const upstream = yield* okServer
  const proxy = yield* FaultProxy.start({
    upstreamHost: "127.0.0.1",
    upstreamPort: upstream.port,
    unavailableEvery: 0,
    blackHoleFirstConnectionAfter: 0
  })
  return { upstream, proxy }
})

describe("Bigtable data channel on a black-holed connection", () => {
  it.live(
    "a MutateRows past its deadline moves later calls to a new connection",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { proxy, upstream } = yield* blackHoled
        const service = yield* connect.make({ projectId: "p", emulator: { grpc: proxy.target } })
        const request = { tableName: table.tableName, entries: [entry("a")], timeout: Duration.millis(300) }
        const first = yield* service.mutateRows(request)
        assert.deepStrictEqual(first.map((s) => s.code), [4], "swallowed, then DEADLINE_EXCEEDED")
        assert.strictEqual(proxy.stats.swallowed, 1)
        const second = yield* service.mutateRows(request)
        assert.deepStrictEqual(second.map((s) => s.code), [0], "answered on the new connection")
        assert.strictEqual(proxy.stats.connections, 2)
        assert.strictEqual(upstream.applied(), 1)
      })),
    20_000
  )

  it.live(
    "the sink's retry after a timed-out MutateRows succeeds well before keepalive would notice",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { proxy, upstream } = yield* blackHoled
        const started = Date.now()
        const summary = yield* Stream.make("a", "b", "c").pipe(
          Stream.run(BigtableSink.make({
            table,
            serializer: entry,
            writeMethod: WriteMethod.atLeastOnce({
              // 2 s and five attempts: a loaded machine's slow re-send is not a second black hole
              retry: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 5 },
              responseTimeout: "2 seconds"
            })
          })),
          Effect.provide(Layer.fresh(BigtableClient.layer({ projectId: "p", emulator: { grpc: proxy.target } })))
        )
        assert.strictEqual(summary.recordsWritten, 3)
        assert.strictEqual(upstream.applied(), 3)
        assert.isAtLeast(proxy.stats.connections, 2)
        assert.isBelow(Date.now() - started, 10_000)
      })),
    30_000
  )
})
