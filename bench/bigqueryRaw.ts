/**
 * The BigQuery benchmarks' raw baselines, shared by bigquery.bench.ts and peers.ts: pre-encoded
 * batches appended to the default stream by hand, `depth` requests in flight, with the sink's own
 * framing (write_stream on every request, writer_schema and trace_id on the first only).
 *
 * - {@link grpcJs}: on a `@grpc/grpc-js` bidi call, as a user of that library would write it;
 * - {@link http2}: on a bare `node:http2` stream, gRPC's length-prefixed messages written by hand: what
 *   the transport under grpc-js costs alone;
 * - {@link http2Framed}: the same with every request framed (gRPC prefix included) before the pass and
 *   written in one write: the floor of any Node client, what HTTP/2 itself costs.
 */
import * as grpc from "@grpc/grpc-js"
import * as http2Module from "node:http2"
import type { TableDestination } from "../src/BigQuery/TableDestination.ts"
import * as AppendRequest from "../src/internal/bigquery/transport/appendRequest.ts"
import * as Connection from "../src/internal/bigquery/transport/connection.ts"

/** What a raw loop appends, and where. */
export interface RawAppends {
  /** `host:port` of the fake's gRPC server. */
  readonly target: string
  readonly table: TableDestination
  /** The encoded `DescriptorProto` of the rows. */
  readonly descriptor: Uint8Array
  readonly batches: ReadonlyArray<ReadonlyArray<Uint8Array>>
  readonly depth: number
}

const appendRows = "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"

/** The header of request `i`: the first carries the schema. */
const headers = (r: RawAppends) => {
  const name = AppendRequest.utf8(r.table.defaultStream)
  const first = { writeStream: name, descriptor: r.descriptor, traceId: AppendRequest.traceId }
  const later = { writeStream: name }
  return (i: number): AppendRequest.Header => i === 0 ? first : later
}

/** The request of batch `i`. */
const requests = (r: RawAppends) => {
  const header = headers(r)
  return (i: number) => AppendRequest.encode(header(i), r.batches[i]!)
}

/** Sends while fewer than `depth` are unanswered; `answered(n)` after `n` answers; resolves after the last. */
const window = (r: RawAppends, write: (i: number) => void, done: () => void) => {
  let sent = 0
  let acked = 0
  const pump = () => {
    while (sent - acked < r.depth && sent < r.batches.length) write(sent++)
  }
  return {
    pump,
    answered: (n: number) => {
      acked += n
      if (acked === r.batches.length) done()
      else pump()
    }
  }
}

/** The grpc-js loop. */
export const grpcJs = (r: RawAppends): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const client = new grpc.Client(r.target, grpc.credentials.createInsecure(), { "grpc.max_send_message_length": -1 })
    const metadata = new grpc.Metadata()
    metadata.set("x-goog-request-params", Connection.routingParams("write_stream", r.table.defaultStream))
    const call = client.makeBidiStreamRequest<Uint8Array, Buffer>(
      appendRows,
      (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength),
      (b) => b,
      metadata
    )
    const request = requests(r)
    const w = window(r, (i) => call.write(request(i)), () => {
      call.end()
      client.close()
      resolve()
    })
    call.on("data", () => w.answered(1))
    call.on("error", reject)
    w.pump()
  })

/** Every request of `r`, framed with its gRPC prefix: build once, outside the timed pass, for {@link http2Framed}. */
export const framedRequests = (r: RawAppends): ReadonlyArray<Uint8Array> => {
  const header = headers(r)
  return r.batches.map((b, i) => AppendRequest.encodeFramed(header(i), AppendRequest.encodeRows(b)))
}

/** The loop on `node:http2` over requests framed ahead ({@link framedRequests}), one write each. */
export const http2Framed = (r: RawAppends, frames: ReadonlyArray<Uint8Array>): Promise<void> =>
  http2Loop(r, (stream, i) => stream.write(frames[i]!))

/** The same loop on `node:http2`. */
export const http2 = (r: RawAppends): Promise<void> => {
  const request = requests(r)
  // prefix and body as two writes: no copy of the body
  return http2Loop(r, (stream, i) => {
    const body = request(i)
    const prefix = Buffer.allocUnsafe(5)
    prefix[0] = 0
    prefix.writeUInt32BE(body.length, 1)
    stream.write(prefix)
    stream.write(body)
  })
}

/** One AppendRows stream on `node:http2`, `send(stream, i)` writing request `i`, `depth` unanswered at most. */
const http2Loop = (r: RawAppends, send: (stream: http2Module.ClientHttp2Stream, i: number) => void): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    // the requests in flight (up to 50 MiB) are queued in the session, as grpc-js lets them be
    const session = http2Module.connect(`http://${r.target}`, { maxSessionMemory: 1024 })
    session.on("error", reject)
    const stream = session.request({
      ":method": "POST",
      ":path": appendRows,
      "content-type": "application/grpc",
      "te": "trailers",
      "x-goog-request-params": Connection.routingParams("write_stream", r.table.defaultStream)
    })
    const w = window(r, (i) => send(stream, i), () => {
      stream.close()
      session.close()
      resolve()
    })
    // each answer is one length-prefixed message: count them as they complete
    let pending: Buffer = Buffer.alloc(0)
    stream.on("data", (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      let answers = 0
      while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
        pending = pending.subarray(5 + pending.readUInt32BE(1))
        answers++
      }
      if (answers > 0) w.answered(answers)
    })
    stream.on("error", reject)
    w.pump()
  })
