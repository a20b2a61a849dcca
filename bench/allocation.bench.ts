/**
 * Bytes allocated a record by the sinks (issue 38): the measure of a change too small for CPU time on
 * this machine, whose effective speed moves by a factor of two from second to second (BENCHMARKS.md,
 * "Why CPU time cannot show a change of a few per cent here"). What a record allocates does not depend
 * on the machine's speed, and what survives of it is what the collector pays for.
 *
 * Bigtable: two methods, alternating, into a private cbtemulator, each pass into a fresh table dropped
 * after it:
 *
 * - `sink`: `BigtableSink` at least once (`--batch` entries a call, `--concurrency` calls' worth of
 *   entries in flight), records from `Stream.range`;
 * - `bare`: Node's floor for the same records and batches (`bareMutateAll` in bench/bigtableHttp2.ts:
 *   the library's MutateRows call on a bare `node:http2` session, batches cut by a plain loop).
 *
 * Both build each record's entry with the same serializer (one SetCell of a 100-byte value, the key
 * and qualifier as strings): its entry, mutation and key are allocated on both sides.
 *
 * BigQuery: the at-least-once sink into the fake BigQueryWrite server in its own process
 * (bench/fakeBigQueryProcess.ts), `--rows` rows a pass in arrays of 4,096 made before the passes, repeating 16,384 distinct rows
 * (bench/rows.ts), 512 KiB appends: `bigquery.bytes` (rows pre-encoded, the serializer returns them) and
 * `bigquery.encode` (row objects through `RowSerializer.fromSchema`). No floor: what a row allocates
 * there is the sink's alone (pre-encoded, ideally nothing a row).
 *
 * Allocation is sampled by V8's heap sampling profiler (one sample per `--interval` bytes on average,
 * objects freed by either collection kept in the profile) over each timed pass, after one warm-up pass
 * of each; figures are medians of `--passes`.
 *
 *   node bench/allocation.bench.ts [--only bigtable|bigquery] [--records 200000] [--rows 1000000] [--passes 3]
 *                                  [--batch 100] [--concurrency 10] [--interval 1024] [--profiles <dir>]
 *
 * Prints a table and appends JSON lines to bench/results/allocation.jsonl.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import { Session } from "node:inspector/promises"
import * as path from "node:path"
import { BigtableClient } from "../src/Bigtable/index.ts"
import { numberArg, optionalArg } from "./args.ts"
import { bareMutateAll } from "./bigtableHttp2.ts"
import { createTable, dropTable, emulatorWithGapic, projectId, tableName } from "./bigtableSetup.ts"
import { median } from "./timing.ts"
import { bigQueryWorkload, bigtableRecord, bigtableSinkRun } from "./workloads.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const only = optionalArg("only")
const records = numberArg("records", 200_000)
const rows = numberArg("rows", 1_000_000)
const passes = numberArg("passes", 3)
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)
const interval = numberArg("interval", 1024)
/** `--profiles <dir>`: each timed pass's sampling heap profile, `<method>-<pass>.heapprofile` (DevTools opens it). */
const profiles = optionalArg("profiles")
if (profiles !== undefined) fs.mkdirSync(profiles, { recursive: true })

/** A node of V8's sampling heap profile. */
interface SamplingNode {
  readonly selfSize: number
  readonly children: ReadonlyArray<SamplingNode>
}

const totalSize = (node: SamplingNode): number => node.children.reduce((sum, c) => sum + totalSize(c), node.selfSize)

/** Bytes allocated while `run` ran, as the sampling profiler estimates them; its profile saved as `save`, if given. */
const allocated = async (session: Session, run: () => Promise<void>, save?: string): Promise<number> => {
  // the flags that keep objects already freed by a collection (the sink's garbage is what is measured)
  const params = {
    samplingInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  }
  await session.post("HeapProfiler.startSampling", params)
  await run()
  const { profile } = await session.post("HeapProfiler.stopSampling")
  if (save !== undefined) fs.writeFileSync(save, JSON.stringify(profile))
  return totalSize(profile.head as SamplingNode)
}

/** Runs `methods` alternating (one warm-up pass of each, then `passes`), `items` a pass; bytes an item. */
const sampleAll = (
  session: Session,
  items: number,
  methods: Record<string, () => Promise<void>>
): Effect.Effect<Record<string, Array<number>>> =>
  Effect.promise(async () => {
    const samples: Record<string, Array<number>> = {}
    for (let pass = 0; pass <= passes; pass++) {
      const order = pass % 2 === 0 ? Object.entries(methods) : Object.entries(methods).toReversed()
      for (const [name, run] of order) {
        const save = profiles === undefined || pass === 0
          ? undefined
          : path.join(profiles, `${name}-${pass}.heapprofile`)
        // oxlint-disable-next-line no-await-in-loop -- passes run one after another
        const bytes = await allocated(session, run, save)
        // pass 0 warms up
        if (pass === 0) continue
        ;(samples[name] ??= []).push(bytes / items)
        console.log(`pass ${pass} ${name.padEnd(16)} ${(bytes / items).toFixed(0)} B an item`)
      }
    }
    return samples
  })

/** The Bigtable sink and Node's floor, `records` records a pass, each pass into a fresh table. */
const bigtable = (session: Session) =>
  Effect.gen(function*() {
    const { admin, emulator } = yield* emulatorWithGapic
    const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulator.emulatorHost } })
    const bare = bareMutateAll(emulator.emulatorHost, { records, batch, concurrency, serializer: bigtableRecord })
    yield* Effect.addFinalizer(() => Effect.sync(bare.close))
    let tables = 0
    /** `write` into a fresh table, dropped after it. */
    const inFreshTable = (write: (tableId: string) => Promise<void>) => async () => {
      const tableId = `a${tables++}`
      await createTable(admin, tableId, { cf: {} })
      await write(tableId)
      await dropTable(admin, tableId)
    }
    const sink = (tableId: string) =>
      Effect.runPromise(bigtableSinkRun(client, tableId, { records, batch, concurrency })).then(() => undefined)
    const samples = yield* sampleAll(session, records, {
      "bigtable.sink": inFreshTable(sink),
      "bigtable.bare": inFreshTable((tableId) => bare.mutateAll(tableName(tableId)))
    })
    const sinkBytes = median(samples["bigtable.sink"] ?? [])
    const bareBytes = median(samples["bigtable.bare"] ?? [])
    console.log(
      `\nBigtable, bytes allocated a record, ${records.toLocaleString("en")} records x ${passes} passes, medians`
    )
    console.log(
      `sink ${sinkBytes.toFixed(0)} B, bare node:http2 ${bareBytes.toFixed(0)} B, sink / bare ${
        (sinkBytes / bareBytes).toFixed(2)
      }x`
    )
    return [{
      bench: "allocation",
      metric: "bigtable.sink.bytesAllocatedPerRecord.median",
      value: Math.round(sinkBytes),
      unit: "B/record",
      baseline: Math.round(bareBytes),
      ratio: Number((sinkBytes / bareBytes).toFixed(3)),
      records,
      batch,
      concurrency
    }]
  })

/** The BigQuery sink, pre-encoded rows and row objects, `rows` rows a pass into the fake. */
const bigquery = (session: Session) =>
  Effect.gen(function*() {
    const workload = yield* bigQueryWorkload(rows)
    const samples = yield* sampleAll(session, rows, {
      "bigquery.bytes": () => workload.bytes(),
      "bigquery.encode": () => workload.encode()
    })
    const bytes = median(samples["bigquery.bytes"] ?? [])
    const encode = median(samples["bigquery.encode"] ?? [])
    console.log(`\nBigQuery, bytes allocated a row, ${rows.toLocaleString("en")} rows x ${passes} passes, medians`)
    console.log(`pre-encoded ${bytes.toFixed(1)} B, objects ${encode.toFixed(1)} B`)
    return [
      {
        bench: "allocation",
        metric: "bigquery.sink.bytes.bytesAllocatedPerRow.median",
        value: Number(bytes.toFixed(1)),
        unit: "B/row",
        rows
      },
      {
        bench: "allocation",
        metric: "bigquery.sink.encode.bytesAllocatedPerRow.median",
        value: Number(encode.toFixed(1)),
        unit: "B/row",
        rows
      }
    ]
  })

const main = Effect.gen(function*() {
  const session = new Session()
  session.connect()
  yield* Effect.addFinalizer(() => Effect.sync(() => session.disconnect()))
  yield* Effect.promise(() => session.post("HeapProfiler.enable"))
  const lines: Array<Record<string, unknown>> = []
  if (only === undefined || only === "bigtable") lines.push(...yield* Effect.scoped(bigtable(session)))
  if (only === undefined || only === "bigquery") lines.push(...yield* Effect.scoped(bigquery(session)))
  const date = new Date().toISOString()
  const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(
    path.join(results, "allocation.jsonl"),
    lines.map((l) => `${JSON.stringify({ ...l, passes, interval, date, node: process.version })}\n`).join("")
  )
})

await Effect.runPromise(Effect.scoped(main))
