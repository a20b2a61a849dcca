/**
 * A bare `node:http2` transport, and Node's floor for a Bigtable workload on it, for
 * bench/bigtableCallCpu.bench.ts, bench/peers.ts (`bigtable.node.bare`), bench/allocation.bench.ts and
 * bench/bigtableExactlyOnce.bench.ts (`bare`); in
 * a file of its own: it imports the library's internals, which the RSS scripts (compiled alone by
 * tsconfig.rss.json) must not.
 */
import { Effect } from "effect"
import * as http2 from "node:http2"
import { Mutation, type RowMutationEntry } from "../src/Bigtable/index.ts"
import * as heap from "../src/internal/bigtable/heapObjects.ts"
import * as checkAndMutate from "../src/internal/bigtable/transport/checkAndMutateProto.ts"
import * as BigtableCalls from "../src/internal/bigtable/transport/client.ts"
import type { CallListener, Cancel, StartCall } from "../src/internal/bigtable/transport/dataCall.ts"
import { entryByteSize } from "../src/internal/bigtable/transport/mutationProto.ts"
import { emptyArray } from "../src/internal/sitelessArrays.ts"
import { prefixLength, writePrefix } from "../src/internal/wire/http2/messageFrame.ts"
import { key } from "./bigtableRaw.ts"
import type { BigtableWorkload } from "./workloads.ts"

/**
 * The library's `StartCall` on a bare `node:http2` session (plaintext, to an emulator): gRPC's
 * length-prefixed messages framed by hand, the status read from the trailers (or from the headers of
 * a trailers-only answer). No credentials, deadlines, keepalive, reconnection or status mapping: the
 * floor of what a data call costs in Node when nothing sits above the HTTP/2 stream, next to the
 * library's own HTTP/2 data path (ADR 0036), for bench/bigtableCallCpu.bench.ts.
 */
export const http2Session = (authority: string): { readonly start: StartCall; readonly close: () => void } => {
  const session = http2.connect(`http://${authority}`)
  session.on("error", () => {})
  // the prefix in the 5 bytes the encoder leaves free: one buffer, one write; the stream is wired in a
  // function of its own, so its listeners (which Node keeps past the call) do not share a context with
  // `encode`, which reaches the request's entries (ADR 0056)
  const start: StartCall = (method, encode, _routing, _timeout, listener) =>
    Effect.sync(() => {
      const request = encode(prefixLength)
      writePrefix(request, 0, request.length - prefixLength)
      return wire(session, method, listener, request)
    })
  return { start, close: () => session.close() }
}

/** Sends `request` as one MutateRows-style call on `session`, its answer to `listener`; its cancel. */
const wire = (session: http2.ClientHttp2Session, method: string, listener: CallListener, request: Buffer): Cancel => {
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
  stream.end(request)
  return () => {
    if (ended) return
    ended = true
    stream.close(http2.constants.NGHTTP2_CANCEL)
  }
}

/** The workload of {@link bareMutateAll}: the records' shape, and how each becomes an entry. */
export interface BareWorkload extends BigtableWorkload {
  /** Record `i` as an entry (the sink's serializer of the benchmark). */
  readonly serializer: (i: number) => RowMutationEntry.RowMutationEntry
}

/**
 * Every record of `workload` through its serializer into entries, cut into batches of `batch` by a
 * plain loop, `concurrency` batches handed to `send` at once (each with its entries' wire sizes).
 * Built as the sink builds them, with no allocation site (src/internal/bigtable/heapObjects.ts): a
 * pretenured array of entries keeps them alive until a full collection.
 */
export const inBatches = async (
  workload: BareWorkload,
  send: (entries: Array<RowMutationEntry.RowMutationEntry>, sizes: Array<number>) => Promise<void>
): Promise<void> => {
  const { batch, concurrency, records, serializer } = workload
  let next = 0
  const worker = async () => {
    while (next < records) {
      const from = next
      next = Math.min(records, next + batch)
      const entries = emptyArray<RowMutationEntry.RowMutationEntry>()
      const sizes = emptyArray<number>()
      for (let i = from; i < next; i++) {
        const entry = serializer(i)
        entries.push(entry)
        sizes.push(entryByteSize(entry))
      }
      // oxlint-disable-next-line no-await-in-loop -- one call in flight per worker
      await send(entries, sizes)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

/**
 * Node's floor for a Bigtable workload (`bigtable.node.bare` in bench/peers.ts): {@link inBatches},
 * each batch sent with the library's MutateRows call (encoder, response reader) on a bare `node:http2`
 * session ({@link http2Session}); no sink, credentials, deadlines or retries.
 */
export const bareMutateAll = (authority: string, workload: BareWorkload) => {
  const session = http2Session(authority)
  // the calls' deadline: the default `responseTimeout`, as the sink's (the bare session sends none)
  const send = BigtableCalls.mutateRows(session.start)
  /** Every record into the table named `tableName` (its full resource name). */
  const mutateAll = (tableName: string) =>
    inBatches(workload, async (entries, sizes) => {
      const statuses = await Effect.runPromise(send(new heap.MutateRows(tableName, undefined, entries, sizes)))
      if (statuses.some((s) => s.code !== 0)) throw new Error("bigtable.node.bare: an entry failed")
    })
  return { mutateAll, close: session.close }
}

/**
 * Node's floor for the exactly-once protocol (`bare` in bench/bigtableExactlyOnce.bench.ts): record `i`
 * as the request of bench/bigtableRaw.ts `checkAndMutate` (row `key(i)`, its identity the record number
 * in hex, one AddToCell of 1 in family `c`, then the marker in `m`), encoded by the library's encoder and
 * sent on a stream of its own of a bare `node:http2` session, `concurrency` in flight, by a plain loop:
 * no Effect, credentials, deadline or retry.
 */
export const bareCheckAndMutateAll = (
  authority: string,
  workload: { readonly records: number; readonly concurrency: number }
) => {
  const session = http2.connect(`http://${authority}`)
  session.on("error", () => {})
  const increment = [Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: 1n })]
  const send = (tableName: string, i: number) =>
    new Promise<boolean>((resolve, reject) => {
      const request = checkAndMutate.encodeRequest({
        tableName,
        rowKey: Buffer.from(key(i)),
        markerFamily: "m",
        identity: i.toString(16).padStart(32, "0"),
        mutations: increment
      }, prefixLength)
      writePrefix(request, 0, request.length - prefixLength)
      let matched: boolean | undefined
      wire(session, checkAndMutate.checkAndMutateRowPath, {
        onMessage: (response) => {
          matched = checkAndMutate.readPredicateMatched(response)
        },
        onEnd: (error) => {
          if (error !== undefined) reject(error)
          else if (matched === undefined) reject(new Error("bare: CheckAndMutateRow ended without a response"))
          else resolve(matched)
        }
      }, request)
    })
  /** Every record into the table named `tableName` (its full resource name), once each. */
  const run = async (tableName: string): Promise<number> => {
    const start = performance.now()
    let next = 0
    const worker = async () => {
      while (next < workload.records) {
        // oxlint-disable-next-line no-await-in-loop -- one request in flight per worker
        if (await send(tableName, next++)) throw new Error("bare: a marker was found in a fresh table")
      }
    }
    await Promise.all(Array.from({ length: workload.concurrency }, worker))
    return workload.records / ((performance.now() - start) / 1000)
  }
  return { run, close: () => session.close() }
}
