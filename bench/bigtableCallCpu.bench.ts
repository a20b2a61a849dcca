/**
 * CPU per Bigtable data call (issue 15, ADR 0027), three transports into a private cbtemulator, in the
 * same run, for MutateRows (`--batch` SetCell entries a call) and CheckAndMutateRow (the request of the
 * exactly-once mode: marker predicate, AddToCell and the marker):
 *
 * - `gapic`: the official client's `v2.BigtableClient` (`mutateRows` stream, `checkAndMutateRow`
 *   promise), no retries, as a user of that client writes it;
 * - `stream`: the library's `client.ts` calls over `makeServerStreamRequest` of a grpc-js `Client`
 *   (`dataCall.overClient`: interceptor chain, `ClientReadableStream`, events), what `fromClients` does;
 * - `direct`: the same calls straight on the client's channel (`directCall.onChannel`), what
 *   `BigtableClient.make` does;
 * - `http2`: the same calls on the library's own HTTP/2 data path (`http2Call.overHttp2`, ADR 0036),
 *   what `BigtableClient.make` does by default;
 * - `bare`: the same calls on a bare `node:http2` session (`http2Session` in bench/bigtableHttp2.ts:
 *   gRPC framing by hand, no credentials, deadlines, reconnection or status mapping): the floor of a
 *   data call in Node with nothing above the HTTP/2 stream.
 *
 * Each pass runs every method for `--calls` calls with `--concurrency` in flight, in a rotated order,
 * each into a fresh table dropped after it; CPU per call is this process's `process.cpuUsage()`
 * (user + system) over the method's run (bench/timing.ts) divided by the calls: the emulator runs in its
 * own process, so it is the client's CPU alone. Medians of the passes after a warm-up.
 *
 *   node bench/bigtableCallCpu.bench.ts [--calls 2000] [--passes 3] [--batch 100] [--concurrency 10] [--no-gc]
 *
 * Prints a table and appends JSON lines to bench/results/bigtableCallCpu.jsonl.
 */
import { Duration, Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { MutateRowsRequest } from "../src/Bigtable/BigtableClient.ts"
import { Mutation, RowMutationEntry } from "../src/Bigtable/index.ts"
import * as channel from "../src/internal/bigtable/transport/channel.ts"
import * as client from "../src/internal/bigtable/transport/client.ts"
import { dataCalls } from "../src/internal/bigtable/transport/connect.ts"
import type { StartCall } from "../src/internal/bigtable/transport/dataCall.ts"
import { overClient } from "../src/internal/bigtable/transport/dataCall.ts"
import { onChannel } from "../src/internal/bigtable/transport/directCall.ts"
import { entryByteSize } from "../src/internal/bigtable/transport/mutationProto.ts"
import { flag, numberArg } from "./args.ts"
import { http2Session } from "./bigtableHttp2.ts"
import { checkAndMutate, key, mutateRows, type RawClient, setCellEntries } from "./bigtableRaw.ts"
import { counterFamily, createTable, dropTable, emulatorWithGapic, tableName } from "./bigtableSetup.ts"
import { median, timePass } from "./timing.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const calls = numberArg("calls", 2_000)
const passes = numberArg("passes", 3)
/**
 * `--no-gc`: no forced collection before each method's run. A forced `gc()` also drops optimized code
 * holding objects it frees, so the run after it re-optimizes (bench/timing.ts); with it, each method
 * does not pay for the garbage of the one before.
 */
const collect = !flag("no-gc")
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)

// the value's bytes made once, as the Go peer's `value []byte`: each record's own work is its key and mutation
const value = Buffer.from("x".repeat(100))
const identityOf = (i: number) => i.toString(16).padStart(32, "0")

/** `calls` calls of `one(i)`, `concurrency` workers with one call each in flight. */
const loop = async (one: (i: number) => Promise<void>): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < calls) {
      const i = next++
      // oxlint-disable-next-line eslint/no-await-in-loop
      await one(i)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

const gapicMutateRows = (raw: RawClient, table: string) => (call: number) =>
  mutateRows(raw, table, setCellEntries(call * batch, (call + 1) * batch, "c", value))

const gapicCheckAndMutate = (raw: RawClient, table: string) => async (i: number) => {
  if (await checkAndMutate(raw, table, i, "s")) throw new Error("gapic: a marker in a fresh table")
}

/** The request the sink's writer hands the client: entries and their sizes, built per call as the sink builds them. */
const mutateRowsRequest = (table: string, call: number): MutateRowsRequest => {
  const entries: Array<RowMutationEntry.RowMutationEntry> = []
  for (let i = call * batch; i < (call + 1) * batch; i++) {
    entries.push(
      RowMutationEntry.make(
        key(i),
        Mutation.setCell({ family: "c", qualifier: "v", value, timestampMicros: 1_000_000 })
      )
    )
  }
  return { tableName: table, entries, entryByteSizes: entries.map(entryByteSize), timeout: Duration.seconds(60) }
}

const libraryMutateRows = (start: StartCall, table: string) => {
  const send = client.mutateRows(start)
  return (call: number) =>
    Effect.runPromise(send(mutateRowsRequest(table, call))).then((statuses) => {
      if (statuses.some((s) => s.code !== 0)) throw new Error("an entry failed")
    })
}

const libraryCheckAndMutate = (start: StartCall, table: string) => {
  const send = client.checkAndMutateRow(start)
  return (i: number) =>
    Effect.runPromise(send({
      tableName: table,
      appProfileId: undefined,
      rowKey: Buffer.from(key(i)),
      markerFamily: "m",
      identity: identityOf(i),
      mutations: [Mutation.addToCell({ family: "s", qualifier: "n", timestampMicros: 0, input: 1n })],
      timeout: Duration.seconds(60)
    })).then((matched) => {
      if (matched) throw new Error("a marker in a fresh table")
    })
}

const transports = ["gapic", "stream", "direct", "http2", "bare"] as const
type Transport = typeof transports[number]
const rpcs = ["MutateRows", "CheckAndMutateRow"] as const
type Rpc = typeof rpcs[number]

const main = Effect.gen(function*() {
  const { admin, emulator, raw } = yield* emulatorWithGapic
  // the sink's channel (its options), one for each library transport
  const endpoint = { host: emulator.host, port: emulator.port, target: emulator.emulatorHost }
  const streamClient = channel.emulatorChannel(endpoint, true)
  const directClient = channel.emulatorChannel(endpoint, true)
  const bare = http2Session(emulator.emulatorHost)
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      streamClient.close()
      directClient.close()
      bare.close()
    })
  )
  const ours = yield* dataCalls("http2", { _tag: "emulator", endpoint })
  const starts: Record<Exclude<Transport, "gapic">, StartCall> = {
    stream: overClient(streamClient),
    direct: onChannel(directClient.getChannel()),
    http2: ours,
    bare: bare.start
  }
  const runOf = (transport: Transport, rpc: Rpc, table: string): (i: number) => Promise<void> =>
    transport === "gapic"
      ? (rpc === "MutateRows" ? gapicMutateRows(raw, table) : gapicCheckAndMutate(raw, table))
      : rpc === "MutateRows"
      ? libraryMutateRows(starts[transport], table)
      : libraryCheckAndMutate(starts[transport], table)

  const samples = new Map<string, Array<{ cpu: number; rate: number }>>()
  let tables = 0
  for (let pass = -1; pass < passes; pass++) {
    const order = transports.map((_, i) => transports[(i + pass + 1) % transports.length] as Transport)
    const line: Array<string> = []
    for (const rpc of rpcs) {
      for (const transport of order) {
        const tableId = `t${tables++}`
        yield* Effect.promise(() => createTable(admin, tableId, { c: {}, s: counterFamily, m: {} }))
        const one = runOf(transport, rpc, tableName(tableId))
        const timed = yield* Effect.promise(() => timePass(() => loop(one), { collect }))
        yield* Effect.promise(() => dropTable(admin, tableId))
        const sample = { cpu: timed.cpuSeconds * 1e6 / calls, rate: calls / timed.seconds }
        if (pass >= 0) {
          const k = `${rpc} ${transport}`
          samples.set(k, [...(samples.get(k) ?? []), sample])
        }
        line.push(`${rpc} ${transport} ${sample.cpu.toFixed(0)} µs/call ${Math.round(sample.rate)} calls/s`)
      }
    }
    console.log(`pass ${pass < 0 ? "warm-up" : pass + 1} (${order.join(", ")}): ${line.join("; ")}`)
  }

  const date = new Date().toISOString()
  const load = os.loadavg().map((l) => l.toFixed(1)).join(" ")
  console.log(
    `\nbigtable call CPU: ${calls} calls x ${passes} passes, MutateRows of ${batch} entries, concurrency ${concurrency}, ` +
      `node ${process.version}, load average ${load}`
  )
  console.log("rpc                 transport   CPU µs/call (median)   vs gapic   calls/s (median)")
  const lines: Array<object> = []
  for (const rpc of rpcs) {
    const gapic = median((samples.get(`${rpc} gapic`) ?? []).map((s) => s.cpu))
    for (const transport of transports) {
      const xs = samples.get(`${rpc} ${transport}`) ?? []
      const cpu = median(xs.map((s) => s.cpu))
      const rate = median(xs.map((s) => s.rate))
      console.log(
        `${rpc.padEnd(19)} ${transport.padEnd(9)} ${cpu.toFixed(1).padStart(22)} ${
          (cpu / gapic).toFixed(2).padStart(9)
        }x ${Math.round(rate).toLocaleString("en").padStart(18)}`
      )
      lines.push({
        bench: "bigtableCallCpu",
        metric: `${rpc}.${transport}.cpuMicrosPerCall.median`,
        value: Number(cpu.toFixed(2)),
        unit: "µs/call",
        baseline: Number(gapic.toFixed(2)),
        ratio: Number((cpu / gapic).toFixed(3)),
        callsPerSecond: Math.round(rate),
        date,
        node: process.version,
        calls,
        passes,
        batch,
        concurrency,
        collected: collect,
        load
      })
    }
  }
  const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(path.join(results, "bigtableCallCpu.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`)
})

await Effect.runPromise(Effect.scoped(main))
