/**
 * What one `Connection` puts on the wire, read back by a bare grpc-js server that records each
 * `AppendRowsRequest` and answers it: `write_stream` on every request (bqemulator needs it, BigQuery
 * accepts it), `writer_schema` and `trace_id` on the first only, later requests framed in place.
 */
import { assert, describe, it } from "@effect/vitest"
import protos from "@google-cloud/bigquery-storage/build/protos/protos.js"
import * as grpc from "@grpc/grpc-js"
import { Deferred, Effect } from "effect"
import * as Split from "../../../../src/internal/bigquery/storageWrite/split.ts"
import * as AppendChannels from "../../../../src/internal/bigquery/transport/appendChannels.ts"
import * as AppendRequest from "../../../../src/internal/bigquery/transport/appendRequest.ts"
import * as Connection from "../../../../src/internal/bigquery/transport/connection.ts"
import * as SendBacklog from "../../../../src/internal/bigquery/transport/sendBacklog.ts"
import { append } from "../../../support/appendAnswer.ts"
import { bytesMethod, serve } from "../../../support/grpcServer.ts"

const v1 = protos.google.cloud.bigquery.storage.v1

/** A server answering every AppendRows request with success, keeping a copy of each request. */
const recordingServer = Effect.gen(function*() {
  const requests: Array<Uint8Array> = []
  const headers: Array<string> = []
  const ok = Buffer.from(v1.AppendRowsResponse.encode({ appendResult: {} }).finish())
  const server = new grpc.Server()
  server.addService({ AppendRows: bytesMethod(Connection.appendRowsPath, "bidi") }, {
    AppendRows: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      headers.push(call.metadata.get("x-goog-request-params").map(String).join(","))
      call.on("data", (buf: Buffer) => {
        requests.push(Uint8Array.from(buf))
        call.write(ok)
      })
      call.on("end", () => call.end())
    }
  })
  const port = yield* serve(server, grpc.ServerCredentials.createInsecure())
  const channel = yield* Effect.acquireRelease(
    Effect.sync(() => new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure())),
    (client) => Effect.sync(() => client.close())
  )
  return { requests, headers, channel }
})

describe("connection", () => {
  it.live("sends write_stream on every request, writer_schema and trace_id on the first only", () =>
    Effect.scoped(Effect.gen(function*() {
      const { channel, headers, requests } = yield* recordingServer
      // a Unicode table id (BigQuery allows them) must not break the routing header
      const name = "projects/my-project/datasets/analytics_events/tables/seitenaufrufe_\u00fcber_2024/streams/_default"
      const descriptor = protos.google.protobuf.DescriptorProto.encode({ name: "root" }).finish()
      const rows = Array.from({ length: 12 }, (_, i) => new Uint8Array(1000 + i).fill(i))
      const batches = Split.split(rows, 4000, Split.makePool(4000, 4))
      assert.isAbove(batches.length, 2)

      const channels = AppendChannels.make(channel, undefined, 10)
      const backlog = SendBacklog.make()
      const connection = yield* Connection.open(channels.lease(), name, descriptor, backlog)
      assert.deepStrictEqual(channels.load(), [1], "the open stream holds a place on the channel")
      for (const batch of batches) {
        const answered = yield* append(connection, batch.body)
        yield* Deferred.await(answered)
      }
      assert.strictEqual(backlog.size(), 0, "grpc-js took every answered request for the wire")
      yield* connection.close
      // the server ends the call after the half-close: the place is given back
      for (let i = 0; i < 100 && channels.load()[0] !== 0; i++) yield* Effect.sleep("10 millis")
      assert.deepStrictEqual(channels.load(), [0])

      assert.strictEqual(requests.length, batches.length)
      assert.deepStrictEqual(headers, [`write_stream=${encodeURIComponent(name)}`])
      const nameBytes = Buffer.from(name)
      for (const [i, bytes] of requests.entries()) {
        const decoded = v1.AppendRowsRequest.decode(bytes)
        assert.strictEqual(decoded.writeStream, name, `request ${i}`)
        assert.strictEqual(decoded.protoRows?.writerSchema?.protoDescriptor?.name ?? null, i === 0 ? "root" : null)
        assert.strictEqual(decoded.traceId, i === 0 ? AppendRequest.traceId : "")
        assert.deepStrictEqual(
          (decoded.protoRows?.rows?.serializedRows ?? []).map((r) => Array.from(r)),
          AppendRequest.rowsOf(batches[i]!.body).map((r) => Array.from(r))
        )
        // later requests were framed in the batch buffer's headroom, not in a copy of the rows
        if (i > 0) {
          assert.isTrue(batches[i]!.buffer.subarray(0, AppendRequest.headroom).includes(nameBytes), `request ${i}`)
        }
      }
    })))
})
