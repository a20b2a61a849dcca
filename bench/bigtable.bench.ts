/**
 * Bigtable sink throughput against a hand-written loop of the raw gapic client, and RSS while streaming a
 * long run, both into a private cbtemulator started by the test harness.
 *
 * - `raw`: records turned straight into `MutateRowsRequest` entries, cut into batches of `--batch` entries,
 *   sent through `v2.BigtableClient.mutateRows` with `--concurrency` requests in flight (the baseline);
 * - `sink`: the same records through `Stream.run(BigtableSink.make(...))` with `batchElementCount = --batch`
 *   and `maxInFlightEntries = --batch * --concurrency`, so both keep the same number of entries in flight.
 *   The sink's serializer builds the same mutation (one SetCell, explicit timestamp, ~100-byte value).
 *   Like the raw client, the sink's `BigtableClient` is built once, before the passes; each pass builds a
 *   new sink (writer, owner fiber, batches) on it.
 *
 * Each pass runs both methods into fresh tables, in one process, raw first on even passes and sink first on
 * odd ones (cbtemulator slows down as it holds more cells), then drops both tables; medians are compared.
 * Then memory, measured as the BigQuery benchmark measures it (bench/bigqueryRss.ts): `--rss-records`
 * records streamed through the sink in each of `--rss-runs` fresh processes (default 3) running the
 * built package from compiled JavaScript (bench/bigtableRss.ts, each into a fresh table), RSS sampled
 * every 50 ms; the report gives the run of median peak (and the highest), what the peak was made of, and
 * the median RSS of the last quarter of the run over that of the second quarter (flat: 1.0). This process's
 * arrays, the raw client and Node's TypeScript stripping then count for nothing.
 *
 *   node bench/bigtable.bench.ts [--records 100000] [--passes 3] [--batch 100] [--concurrency 10]
 *                                [--rss-records 2000000] [--rss-runs 3]
 *
 * CPU per record is this process's `process.cpuUsage()` over the method's pass (bench/timing.ts), divided by
 * the records: the emulator runs in its own process, so it is the client's CPU alone.
 *
 * Prints a table and appends JSON lines to bench/results/bigtable.jsonl.
 */
import { Effect, Stream } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../src/Bigtable/index.ts"
import { numberArg } from "./args.ts"
import { key, runRaw } from "./bigtableRaw.ts"
import type { BigtableRssResult } from "./bigtableRss.ts"
import { createTable, dropTable, emulatorWithGapic, instanceId, projectId, tableName } from "./bigtableSetup.ts"
import { median, type Timed, timePass } from "./timing.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const records = numberArg("records", 100_000)
const passes = numberArg("passes", 3)
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)
const rssRecords = numberArg("rss-records", 2_000_000)
const rssRuns = numberArg("rss-runs", 3)
const here = path.dirname(new URL(import.meta.url).pathname)
const root = path.dirname(here)

// the value's bytes made once, as the Go peer's `value []byte`: each record's own work is its key and mutation
const value = Buffer.from("x".repeat(100))
/** The one column family the records go to. */
const plain = { cf: {} }

const serializer = (i: number) =>
  RowMutationEntry.make(key(i), Mutation.setCell({ family: "cf", qualifier: "v", value, timestampMicros: 1_000_000 }))

type Client = BigtableClient.BigtableClient["Service"]

const sinkStream = (client: Client, tableId: string, n: number) =>
  Stream.range(0, n - 1).pipe(
    Stream.run(BigtableSink.make({
      table: TableDestination.makeUnsafe({ projectId, instanceId, tableId }),
      serializer,
      writeMethod: WriteMethod.atLeastOnce({ batchElementCount: batch, maxInFlightEntries: batch * concurrency })
    })),
    Effect.provideService(BigtableClient.BigtableClient, client)
  )

const runSink = async (client: Client, tableId: string): Promise<void> => {
  const summary = await Effect.runPromise(sinkStream(client, tableId, records))
  if (summary.recordsWritten !== records) throw new Error(`sink wrote ${summary.recordsWritten} of ${records}`)
}

/** One method's pass as records per second and this process's CPU microseconds per record. */
interface Sample {
  readonly rate: number
  readonly cpu: number
}
const sampleOf = (timed: Timed): Sample => ({ rate: records / timed.seconds, cpu: timed.cpuSeconds * 1e6 / records })

/** Builds the package and the RSS script (bench/tsconfig.rss.json) from compiled JavaScript, as bigquery.bench.ts does. */
const buildRss = () => {
  for (const project of ["tsconfig.build.json", path.join("bench", "tsconfig.rss.json")]) {
    const built = spawnSync(process.execPath, [
      path.join(root, "node_modules", "typescript", "bin", "tsc"),
      "-p",
      path.join(root, project)
    ], { stdio: "inherit" })
    if (built.status !== 0) throw new Error(`tsc -p ${project} failed`)
  }
}

/** One fresh process streaming `rssRecords` records into `tableId` (bench/bigtableRss.ts). */
const rssOnce = (emulatorHost: string, tableId: string, extra: ReadonlyArray<string>) =>
  new Promise<BigtableRssResult>((resolve, reject) => {
    const proc = spawn(process.execPath, [
      path.join(here, ".build", "bigtableRss.js"),
      "--emulator",
      emulatorHost,
      "--project",
      projectId,
      "--instance",
      instanceId,
      "--table",
      tableId,
      "--rss-records",
      String(rssRecords),
      "--batch",
      String(batch),
      "--concurrency",
      String(concurrency),
      ...extra
    ])
    let stdout = ""
    let stderr = ""
    proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    proc.on("close", (code) => {
      if (code !== 0) return reject(new Error(`bigtableRss failed: ${stderr}`))
      resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as BigtableRssResult)
    })
  })

const main = Effect.gen(function*() {
  const { admin, emulator, raw } = yield* emulatorWithGapic
  const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulator.emulatorHost } })

  const samples: { raw: Array<Sample>; sink: Array<Sample> } = { raw: [], sink: [] }
  // One warm-up pass of each, not recorded.
  for (let pass = -1; pass < passes; pass++) {
    const rawTable = `raw${pass + 1}`
    const sinkTable = `sink${pass + 1}`
    yield* Effect.promise(() => createTable(admin, rawTable, plain))
    yield* Effect.promise(() => createTable(admin, sinkTable, plain))
    const rawRun = Effect.map(
      Effect.promise(() => timePass(() => runRaw(raw, tableName(rawTable), { records, batch, concurrency, value }))),
      sampleOf
    )
    const sinkPass = Effect.map(Effect.promise(() => timePass(() => runSink(client, sinkTable))), sampleOf)
    // Who goes first alternates: cbtemulator slows down as it holds more cells, so a fixed order would
    // always hand the second method the fuller emulator.
    const first = pass % 2 === 0 ? "raw" : "sink"
    let r: Sample
    let s: Sample
    if (first === "raw") {
      r = yield* rawRun
      s = yield* sinkPass
    } else {
      s = yield* sinkPass
      r = yield* rawRun
    }
    // Both tables are dropped after the pass, so every pass starts from the same emulator state.
    yield* Effect.promise(() => dropTable(admin, rawTable))
    yield* Effect.promise(() => dropTable(admin, sinkTable))
    if (pass >= 0) {
      samples.raw.push(r)
      samples.sink.push(s)
    }
    console.log(
      `pass ${pass < 0 ? "warm-up" : pass + 1} (${first} first): raw ${Math.round(r.rate)} records/s ` +
        `${r.cpu.toFixed(1)} µs CPU/record, sink ${Math.round(s.rate)} records/s ${s.cpu.toFixed(1)} µs CPU/record`
    )
  }

  // RSS in fresh processes running the built package, each into a fresh table (none with --rss-runs 0)
  if (rssRuns > 0) yield* Effect.sync(buildRss)
  /** `rssRuns` fresh processes: the one of median peak, and the highest peak. */
  const rssOf = (method: "sink" | "raw") =>
    Effect.gen(function*() {
      const results: Array<BigtableRssResult> = []
      for (let run = 0; run < rssRuns; run++) {
        const tableId = `rss${method}${run}`
        yield* Effect.promise(() => createTable(admin, tableId, plain))
        const result = yield* Effect.promise(() =>
          rssOnce(emulator.emulatorHost, tableId, method === "raw" ? ["--raw"] : [])
        )
        yield* Effect.promise(() => dropTable(admin, tableId))
        console.log(`rss ${method} run ${run + 1}: ${JSON.stringify(result)}`)
        results.push(result)
      }
      const sorted = results.toSorted((a, b) => a.maxMB - b.maxMB)
      const middle = sorted[Math.floor(sorted.length / 2)]
      const highest = sorted.at(-1)
      return middle === undefined || highest === undefined ? undefined : { ...middle, highestMB: highest.maxMB }
    })
  type RssSummary = BigtableRssResult & { readonly highestMB: number }
  const rss = yield* rssOf("sink")
  // the floor: the raw client's loop in the same harness
  const rssRaw = yield* rssOf("raw")

  const rates = { raw: samples.raw.map((x) => x.rate), sink: samples.sink.map((x) => x.rate) }
  const cpus = { raw: median(samples.raw.map((x) => x.cpu)), sink: median(samples.sink.map((x) => x.cpu)) }
  const rawMedian = median(rates.raw)
  const sinkMedian = median(rates.sink)
  const ratio = sinkMedian / rawMedian
  const date = new Date().toISOString()
  console.log(
    `\nbigtable: ${records} records x ${passes} passes, batch ${batch}, concurrency ${concurrency}, node ${process.version}`
  )
  console.log("method   records/s min   records/s median   records/s max   vs raw   CPU µs/record (median)")
  for (const [name, xs] of Object.entries(rates)) {
    const sorted = xs.toSorted((a, b) => a - b)
    console.log(
      `${name.padEnd(8)} ${Math.round(sorted[0] ?? 0).toLocaleString("en").padStart(13)} ${
        Math.round(median(xs)).toLocaleString("en").padStart(18)
      } ${Math.round(sorted[sorted.length - 1] ?? 0).toLocaleString("en").padStart(15)} ${
        (median(xs) / rawMedian).toFixed(2).padStart(7)
      }x ${cpus[name as keyof typeof cpus].toFixed(1).padStart(24)}`
    )
  }
  console.log(`sink / raw: ${ratio.toFixed(2)}x records/s, ${(cpus.sink / cpus.raw).toFixed(2)}x CPU per record`)
  if (rss !== undefined && rssRaw !== undefined) {
    console.log(
      `rss: ${rssRecords} records per fresh process, median of ${rssRuns}: peak ${rss.maxMB} MB (highest ${rss.highestMB}), ` +
        `start ${rss.startMB} MB; at the peak heap ${rss.heapMB} MB used of ${rss.heapTotalMB} MB, external ${rss.externalMB} MB ` +
        `(array buffers ${rss.arrayBuffersMB} MB); ` +
        `last quarter / second quarter x${rss.lateOverEarly}, ${rss.recordsPerSecond} records/s`
    )
    console.log(
      `rss of the raw client's loop, the same way: peak ${rssRaw.maxMB} MB (highest ${rssRaw.highestMB}), start ` +
        `${rssRaw.startMB} MB; at the peak heap ${rssRaw.heapMB} MB used of ${rssRaw.heapTotalMB} MB`
    )
  }
  const common = { date, node: process.version, records, passes, batch, concurrency }
  const rssLines = (sinkRss: RssSummary, rawRss: RssSummary) => [
    {
      bench: "bigtable",
      metric: "sinkRss.maxMB",
      value: sinkRss.maxMB,
      unit: "MB",
      baseline: null,
      ratio: null,
      rssRecords,
      rssRuns,
      rssHighestMB: sinkRss.highestMB,
      rssStartMB: sinkRss.startMB,
      rssHeapMB: sinkRss.heapMB,
      rssHeapTotalMB: sinkRss.heapTotalMB,
      rssExternalMB: sinkRss.externalMB,
      rssArrayBuffersMB: sinkRss.arrayBuffersMB,
      rssLastQuarterOverSecondQuarter: sinkRss.lateOverEarly,
      rssRecordsPerSecond: sinkRss.recordsPerSecond,
      freshProcess: true,
      ...common
    },
    {
      bench: "bigtable",
      metric: "sinkRss.rawRss.maxMB",
      value: rawRss.maxMB,
      unit: "MB",
      baseline: null,
      ratio: null,
      rssRecords,
      rssRuns,
      rssHighestMB: rawRss.highestMB,
      rssStartMB: rawRss.startMB,
      rssHeapMB: rawRss.heapMB,
      rssHeapTotalMB: rawRss.heapTotalMB,
      rssRecordsPerSecond: rawRss.recordsPerSecond,
      freshProcess: true,
      ...common
    }
  ]
  const lines = [
    {
      bench: "bigtable",
      metric: "sink.recordsPerSecond.median",
      value: Math.round(sinkMedian),
      unit: "records/s",
      baseline: Math.round(rawMedian),
      ratio: Number(ratio.toFixed(3)),
      ...common
    },
    {
      bench: "bigtable",
      metric: "sink.cpuMicrosPerRecord.median",
      value: Number(cpus.sink.toFixed(2)),
      unit: "µs/record",
      baseline: Number(cpus.raw.toFixed(2)),
      ratio: Number((cpus.sink / cpus.raw).toFixed(3)),
      ...common
    },
    {
      bench: "bigtable",
      metric: "raw.recordsPerSecond.median",
      value: Math.round(rawMedian),
      unit: "records/s",
      baseline: Math.round(rawMedian),
      ratio: 1,
      ...common
    },
    ...(rss === undefined || rssRaw === undefined ? [] : rssLines(rss, rssRaw))
  ]
  const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(path.join(results, "bigtable.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`)
})

await Effect.runPromise(Effect.scoped(main))
