/**
 * The memory half of the Bigtable benchmark, run by bigtable.bench.ts in a fresh process per figure,
 * as bigqueryRss.ts is for BigQuery: streams `--rss-records` records through `BigtableSink.make` (the
 * benchmark's record: one SetCell with an explicit timestamp and a 100-byte value, batches of `--batch`,
 * `--batch * --concurrency` entries in flight) into the cbtemulator at `--emulator`, table `--table`,
 * sampling RSS every 50 ms, and prints one JSON line: the peak, what it was made of, and the median RSS
 * of the last quarter of the run over that of the second quarter (flat: 1.0).
 *
 * It imports the package by its name, so Node resolves it to the built `dist/` as a user's program
 * would (bigtable.bench.ts builds it first and runs this file compiled by bench/tsconfig.rss.json).
 *
 *   node bench/.build/bigtableRss.js --emulator host:port --table t [--project bench] [--instance bench]
 *                                    [--rss-records 2000000] [--batch 100] [--concurrency 10] [--raw]
 *
 * `--raw` runs the benchmark's baseline instead (bench/bigtableRaw.ts: the gapic client's `mutateRows`
 * loop, the same batches and requests in flight): the memory of the official client alone.
 */
import { flag, numberArg, textArg } from "./args.ts"
import { key, runRaw } from "./bigtableRaw.ts"

process.env["METADATA_SERVER_DETECTION"] ??= "none"

export interface BigtableRssResult {
  readonly maxMB: number
  readonly startMB: number
  /** At the peak: the V8 heap in use and reserved, memory held outside it (external) and the array buffers within that. */
  readonly heapMB: number
  readonly heapTotalMB: number
  readonly externalMB: number
  readonly arrayBuffersMB: number
  /** Median RSS of the last quarter of the run over that of the second quarter. */
  readonly lateOverEarly: number
  readonly recordsPerSecond: number
}

const records = numberArg("rss-records", 2_000_000)
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)
const projectId = textArg("project", "bench")
const instanceId = textArg("instance", "bench")
// the value's bytes made once, as the Go peer's `value []byte`: each record's own work is its key and mutation
const value = Buffer.from("x".repeat(100))
/** `--raw`: the baseline's loop on the gapic client instead of the sink (bigtableRaw.ts): the floor. */
const raw = flag("raw")

const rawLoop = async () => {
  const { v2 } = await import("@google-cloud/bigtable")
  const grpc = await import("@grpc/grpc-js")
  const emulator = textArg("emulator")
  const colon = emulator.lastIndexOf(":")
  const client = new v2.BigtableClient({
    servicePath: emulator.slice(0, colon),
    port: Number(emulator.slice(colon + 1)),
    sslCreds: grpc.credentials.createInsecure(),
    projectId,
    universeDomain: "googleapis.com"
  })
  await runRaw(client, `projects/${projectId}/instances/${instanceId}/tables/${textArg("table")}`, {
    records,
    batch,
    concurrency,
    value
  })
  await client.close()
}

// Each loop loads its modules itself: neither process pays for the other's (the official client's
// modules alone are some 50 MB of RSS at the start).
const sinkLoop = async () => {
  const { Effect, Stream } = await import("effect")
  const { BigtableClient, BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } = await import(
    "effect-gcp-sinks/Bigtable"
  )
  const program = Effect.gen(function*() {
    const client = yield* BigtableClient.make({ projectId, emulator: { grpc: textArg("emulator") } })
    const summary = yield* Stream.range(0, records - 1).pipe(
      Stream.run(BigtableSink.make({
        table: TableDestination.makeUnsafe({ projectId, instanceId, tableId: textArg("table") }),
        serializer: (i: number) =>
          RowMutationEntry.make(
            key(i),
            Mutation.setCell({ family: "cf", qualifier: "v", value, timestampMicros: 1_000_000 })
          ),
        writeMethod: WriteMethod.atLeastOnce({ batchElementCount: batch, maxInFlightEntries: batch * concurrency })
      })),
      Effect.provideService(BigtableClient.BigtableClient, client)
    )
    if (summary.recordsWritten !== records) throw new Error(`wrote ${summary.recordsWritten} of ${records}`)
  })
  await Effect.runPromise(Effect.scoped(program))
}

const startMB = process.memoryUsage().rss / 1e6
let maxMB = startMB
let heapMB = 0
let heapTotalMB = 0
let externalMB = 0
let arrayBuffersMB = 0
const samples: Array<number> = []
const sampler = setInterval(() => {
  const usage = process.memoryUsage()
  samples.push(usage.rss / 1e6)
  if (usage.rss / 1e6 > maxMB) {
    maxMB = usage.rss / 1e6
    heapMB = usage.heapUsed / 1e6
    heapTotalMB = usage.heapTotal / 1e6
    externalMB = usage.external / 1e6
    arrayBuffersMB = usage.arrayBuffers / 1e6
  }
}, 50)
const start = performance.now()
await (raw ? rawLoop() : sinkLoop())
const seconds = (performance.now() - start) / 1000
clearInterval(sampler)
const median = (xs: Array<number>) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0
const quarter = Math.max(1, Math.floor(samples.length / 4))
const result: BigtableRssResult = {
  maxMB: Math.round(maxMB),
  startMB: Math.round(startMB),
  heapMB: Math.round(heapMB),
  heapTotalMB: Math.round(heapTotalMB),
  externalMB: Math.round(externalMB),
  arrayBuffersMB: Math.round(arrayBuffersMB),
  lateOverEarly: Number((median(samples.slice(-quarter)) / median(samples.slice(quarter, 2 * quarter))).toFixed(3)),
  recordsPerSecond: Math.round(records / seconds)
}
console.log(JSON.stringify(result))
