/**
 * `AppendRows` on the emulator at the wire level: one bidi stream, requests framed with
 * `AppendRequest`. Pins the emulator's deviation on `write_stream` (BigQuery wants it on a
 * connection's first request only; bqemulator 1.4.0 resolves it on every request). The sink sends it
 * on every request, so it is unaffected; BigQuery's own clients, which send it once, are not.
 */
import { assert, layer } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Effect } from "effect"
import { RowSerializer, TableDestination, TableSchema } from "../../../src/BigQuery/index.ts"
import { encodeDescriptor } from "../../../src/internal/bigquery/encoding/descriptor.ts"
import * as AppendRequest from "../../../src/internal/bigquery/transport/appendRequest.ts"
import { appendRowsPath } from "../../../src/internal/bigquery/transport/connection.ts"
import { decodeResponse } from "../../../src/internal/bigquery/transport/rowErrors.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"

const schema: TableSchema.TableSchema = {
  fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })]
}

interface Outcome {
  /** `ok` per answered request, in order. */
  readonly answers: Array<boolean>
  readonly code: number
  readonly details: string
}

/** Writes `requests` on one AppendRows stream, half-closes, and collects the answers and the final status. */
const exchange = (address: string, writeStream: string, requests: ReadonlyArray<Uint8Array>) =>
  Effect.callback<Outcome>((resume) => {
    const channel = new grpc.Client(address, grpc.credentials.createInsecure())
    const metadata = new grpc.Metadata()
    metadata.set("x-goog-request-params", `write_stream=${writeStream}`)
    const call = channel.makeBidiStreamRequest<Uint8Array, Buffer>(
      appendRowsPath,
      (bytes) => Buffer.from(bytes),
      (bytes) => bytes,
      metadata
    )
    const answers: Array<boolean> = []
    call.on("data", (bytes: Buffer) => answers.push(decodeResponse(bytes).ok))
    call.on("error", () => undefined)
    call.on("status", (status: grpc.StatusObject) => {
      channel.close()
      resume(Effect.succeed({ answers, code: status.code, details: status.details }))
    })
    for (const request of requests) call.write(request)
    call.end()
    return Effect.sync(() => {
      call.cancel()
      channel.close()
    })
  })

layer(BigQueryEmulator.layer, { timeout: "60 seconds", excludeTestServices: true })(
  "AppendRows on the emulator",
  (it) => {
    it.effect(
      "deviation: a request without write_stream after the first ends the stream with NOT_FOUND (BigQuery accepts it)",
      () =>
        Effect.gen(function*() {
          const emulator = yield* BigQueryEmulator
          const bq = yield* Clients.bigQuery(emulator)
          const datasetId = Clients.uniqueId("append")
          yield* Effect.tryPromise(() => bq.createDataset(datasetId))
          yield* Effect.tryPromise(() =>
            bq.dataset(datasetId).createTable("t", { schema: { fields: [{ name: "id", type: "INT64" }] } })
          )
          const table = yield* TableDestination.make({ projectId: emulator.projectId, datasetId, tableId: "t" })
          const serializer = yield* RowSerializer.fromJson(schema)
          const row = (id: number): Uint8Array => {
            const bytes = serializer.serialize({ id }, table)
            if (!(bytes instanceof Uint8Array)) throw new Error("row did not encode")
            return bytes
          }
          const writeStream = `projects/${emulator.projectId}/datasets/${datasetId}/tables/t/streams/_default`
          const descriptor = encodeDescriptor(RowSerializer.descriptorOf(serializer, table))
          const first = (id: number) =>
            AppendRequest.encode({ writeStream, descriptor, traceId: AppendRequest.traceId }, [row(id)])
          const address = `${emulator.grpcHost}:${emulator.grpcPort}`

          // as BigQuery's own clients send: write_stream on the first request only
          const headerOnce = yield* exchange(address, writeStream, [
            first(1),
            AppendRequest.encode({}, [row(2)]),
            AppendRequest.encode({}, [row(3)])
          ])
          assert.deepStrictEqual(headerOnce.answers, [true])
          assert.strictEqual(headerOnce.code, grpc.status.NOT_FOUND)

          // write_stream repeated on every request, as the sink sends: every request is answered
          const headerEach = yield* exchange(address, writeStream, [
            first(4),
            AppendRequest.encode({ writeStream }, [row(5)]),
            AppendRequest.encode({ writeStream }, [row(6)])
          ])
          assert.deepStrictEqual(headerEach.answers, [true, true, true])
          assert.strictEqual(headerEach.code, grpc.status.OK)

          const [result] = yield* Effect.tryPromise(() =>
            bq.query({ query: `SELECT id FROM \`${emulator.projectId}.${datasetId}.t\` ORDER BY id` })
          )
          assert.deepStrictEqual((result as Array<{ id: number }>).map((r) => r.id), [1, 4, 5, 6])
        })
    )
  }
)
