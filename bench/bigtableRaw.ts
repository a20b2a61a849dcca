/**
 * The Bigtable benchmarks' baseline, shared by bigtable.bench.ts (throughput) and bigtableRss.ts
 * (memory): the official gapic client's `mutateRows`, hand-written as a user of that client would,
 * records turned straight into entries (one SetCell of `value` each), batches of `batch` entries,
 * `concurrency` requests in flight, no retries.
 */
import type { v2 } from "@google-cloud/bigtable"
import * as http2 from "node:http2"
import type { StartCall } from "../src/internal/bigtable/dataCall.ts"

/** The gapic data client. */
export type RawClient = InstanceType<typeof v2.BigtableClient>

/** The benchmark's row key of record `i`. */
export const key = (i: number): string => `row${String(i).padStart(9, "0")}`

/** One gapic `mutateRows` call, no retries; rejects when an entry failed. */
export const mutateRows = (client: RawClient, tableName: string, entries: Array<object>) =>
  new Promise<void>((resolve, reject) => {
    const stream = client.mutateRows({ tableName, entries }, {
      retryRequestOptions: { retries: 0, noResponseRetries: 0 }
    })
    stream.on("data", (response: { entries: Array<{ status?: { code?: number } }> }) => {
      const failed = response.entries.find((e) => (e.status?.code ?? 0) !== 0)
      if (failed !== undefined) reject(new Error(`entry failed with ${failed.status?.code}`))
    })
    stream.on("error", reject)
    stream.on("end", () => resolve())
  })

/** Records `from..to-1` as gapic entries: one SetCell of `value` in `family`, qualifier `v`, each. */
export const setCellEntries = (from: number, to: number, family: string, value: string): Array<object> => {
  const entries: Array<object> = []
  for (let i = from; i < to; i++) {
    entries.push({
      rowKey: Buffer.from(key(i)),
      mutations: [{
        setCell: {
          familyName: family,
          columnQualifier: Buffer.from("v"),
          timestampMicros: 1_000_000,
          value: Buffer.from(value)
        }
      }]
    })
  }
  return entries
}

/**
 * The exactly-once mode's request for record `i` through the gapic `checkAndMutateRow`: predicate a
 * column range closed on the identity (the record number in hex) in marker family `m`; false
 * mutations one AddToCell of 1 in `counterFamily`, then the marker SetCell. Resolves `predicate_matched`.
 */
export const checkAndMutate = async (
  client: RawClient,
  tableName: string,
  i: number,
  counterFamily: string
): Promise<boolean> => {
  const identity = Buffer.from(i.toString(16).padStart(32, "0"))
  const [response] = await client.checkAndMutateRow({
    tableName,
    rowKey: Buffer.from(key(i)),
    predicateFilter: {
      columnRangeFilter: { familyName: "m", startQualifierClosed: identity, endQualifierClosed: identity }
    },
    falseMutations: [
      {
        addToCell: {
          familyName: counterFamily,
          columnQualifier: { rawValue: Buffer.from("n") },
          timestamp: { rawTimestampMicros: 0 },
          input: { intValue: 1 }
        }
      },
      { setCell: { familyName: "m", columnQualifier: identity, timestampMicros: 0, value: Buffer.from("1") } }
    ]
  })
  return response.predicateMatched === true
}

/** Writes `records` records; returns records per second. */
export const runRaw = async (
  client: RawClient,
  tableName: string,
  options: { readonly records: number; readonly batch: number; readonly concurrency: number; readonly value: string }
): Promise<number> => {
  const { batch, concurrency, records, value } = options
  const start = performance.now()
  let next = 0
  const worker = async () => {
    while (next < records) {
      const from = next
      next = Math.min(records, next + batch)
      const entries = setCellEntries(from, next, "cf", value)
      // Each worker keeps one request in flight: `concurrency` workers, `concurrency` requests.
      // oxlint-disable-next-line eslint/no-await-in-loop
      await mutateRows(client, tableName, entries)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return records / ((performance.now() - start) / 1000)
}

/**
 * The library's `StartCall` on a bare `node:http2` session (plaintext, to an emulator): gRPC's
 * length-prefixed messages framed by hand, the status read from the trailers (or from the headers of
 * a trailers-only answer). No credentials, deadlines, keepalive or reconnection: the floor of what a
 * data call costs in Node when neither grpc-js nor anything else sits above the HTTP/2 stream, for
 * bench/bigtableCallCpu.bench.ts.
 */
export const http2Session = (authority: string): { readonly start: StartCall; readonly close: () => void } => {
  const session = http2.connect(`http://${authority}`)
  session.on("error", () => {})
  const start: StartCall = (method, request, _metadata, _deadline, listener) => {
    let ended = false
    const end = (error: unknown) => {
      if (ended) return
      ended = true
      listener.onEnd(error)
    }
    const stream = session.request({
      ":method": "POST",
      ":path": method,
      "content-type": "application/grpc",
      te: "trailers"
    })
    const statusOf = (headers: http2.IncomingHttpHeaders) => {
      const code = Number(headers["grpc-status"])
      end(code === 0 ? undefined : new Error(`grpc-status ${code}: ${String(headers["grpc-message"] ?? "")}`))
    }
    stream.on("response", (headers) => {
      if (headers["grpc-status"] !== undefined) statusOf(headers)
    })
    stream.on("trailers", statusOf)
    stream.on("error", end)
    stream.on("close", () => end(new Error("the stream closed without a status")))
    let pending: Buffer = Buffer.alloc(0)
    stream.on("data", (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
        const length = pending.readUInt32BE(1)
        if (!ended) listener.onMessage(pending.subarray(5, 5 + length))
        pending = pending.subarray(5 + length)
      }
    })
    // prefix and body as two writes: no copy of the body
    const prefix = Buffer.allocUnsafe(5)
    prefix[0] = 0
    prefix.writeUInt32BE(request.length, 1)
    stream.write(prefix)
    stream.end(request)
    return () => {
      if (ended) return
      ended = true
      stream.close(http2.constants.NGHTTP2_CANCEL)
    }
  }
  return { start, close: () => session.close() }
}
