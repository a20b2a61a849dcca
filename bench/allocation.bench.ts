/**
 * Bytes allocated a record on the Bigtable path (issue 38): the measure of a change too small for CPU
 * time on this machine, whose effective speed moves by a factor of two from second to second
 * (BENCHMARKS.md, "Why CPU time cannot show a change of a few per cent here"). What a record allocates
 * does not depend on the machine's speed, and what survives of it is what the collector pays for.
 *
 * Two methods, alternating, into a private cbtemulator, each pass into a fresh table dropped after it:
 *
 * - `sink`: `BigtableSink` at least once (`--batch` entries a call, `--concurrency` calls' worth of
 *   entries in flight), records from `Stream.range`;
 * - `bare`: Node's floor for the same records and batches (`bareMutateAll` in bench/bigtableHttp2.ts:
 *   the library's MutateRows call on a bare `node:http2` session, batches cut by a plain loop).
 *
 * Both build each record's entry with the same serializer (one SetCell of a 100-byte value, the key
 * and qualifier as strings): its entry, mutation and key are allocated on both sides.
 *
 * Allocation is sampled by V8's heap sampling profiler (one sample per `--interval` bytes on average,
 * objects freed by either collection kept in the profile) over each timed pass, after one warm-up pass
 * of each; figures are medians of `--passes`.
 *
 *   node bench/allocation.bench.ts [--records 200000] [--passes 3] [--batch 100] [--concurrency 10] [--interval 1024]
 *
 * Prints a table and appends JSON lines to bench/results/allocation.jsonl.
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import { Session } from "node:inspector/promises"
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
import { bareMutateAll } from "./bigtableHttp2.ts"
import { key } from "./bigtableRaw.ts"
import { createTable, dropTable, emulatorWithGapic, instanceId, projectId, tableName } from "./bigtableSetup.ts"
import { median } from "./timing.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const records = numberArg("records", 200_000)
const passes = numberArg("passes", 3)
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)
const interval = numberArg("interval", 1024)

const value = Buffer.from("x".repeat(100))
const serializer = (i: number) =>
  RowMutationEntry.make(key(i), Mutation.setCell({ family: "cf", qualifier: "v", value, timestampMicros: 1_000_000 }))

/** A node of V8's sampling heap profile. */
interface SamplingNode {
  readonly selfSize: number
  readonly children: ReadonlyArray<SamplingNode>
}

const totalSize = (node: SamplingNode): number => node.children.reduce((sum, c) => sum + totalSize(c), node.selfSize)

/** Bytes allocated while `run` ran, as the sampling profiler estimates them. */
const allocated = async (session: Session, run: () => Promise<void>): Promise<number> => {
  // the flags that keep objects already freed by a collection (the sink's garbage is what is measured)
  const params = {
    samplingInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  }
  await session.post("HeapProfiler.startSampling", params)
  await run()
  const { profile } = await session.post("HeapProfiler.stopSampling")
  return totalSize(profile.head as SamplingNode)
}

const main = Effect.gen(function*() {
  const { admin, emulator } = yield* emulatorWithGapic
  const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulator.emulatorHost } })
  const bare = bareMutateAll(emulator.emulatorHost, { records, batch, concurrency, serializer })
  yield* Effect.addFinalizer(() => Effect.sync(bare.close))
  const writeMethod = WriteMethod.atLeastOnce({ batchElementCount: batch, maxInFlightEntries: batch * concurrency })
  const sink = (tableId: string) =>
    Effect.runPromise(
      Stream.range(0, records - 1).pipe(
        Stream.run(BigtableSink.make({
          table: TableDestination.makeUnsafe({ projectId, instanceId, tableId }),
          serializer,
          writeMethod
        })),
        Effect.provideService(BigtableClient.BigtableClient, client)
      )
    ).then(() => undefined)
  const methods: Record<string, (tableId: string) => Promise<void>> = {
    sink,
    bare: (tableId) => bare.mutateAll(tableName(tableId))
  }
  const session = new Session()
  session.connect()
  yield* Effect.addFinalizer(() => Effect.sync(() => session.disconnect()))
  yield* Effect.promise(() => session.post("HeapProfiler.enable"))
  let tables = 0
  const samples: Record<string, Array<number>> = {}
  for (let pass = 0; pass <= passes; pass++) {
    for (const [name, run] of pass % 2 === 0 ? Object.entries(methods) : Object.entries(methods).toReversed()) {
      const tableId = `a${tables++}`
      yield* Effect.promise(() => createTable(admin, tableId, { cf: {} }))
      const bytes = yield* Effect.promise(() => allocated(session, () => run(tableId)))
      yield* Effect.promise(() => dropTable(admin, tableId))
      // pass 0 warms up
      if (pass === 0) continue
      ;(samples[name] ??= []).push(bytes / records)
      console.log(`pass ${pass} ${name.padEnd(5)} ${(bytes / records).toFixed(0)} B a record`)
    }
  }
  const sinkBytes = median(samples["sink"] ?? [])
  const bareBytes = median(samples["bare"] ?? [])
  console.log(`\nbytes allocated a record, ${records.toLocaleString("en")} records x ${passes} passes, medians`)
  console.log(
    `sink ${sinkBytes.toFixed(0)} B, bare node:http2 ${bareBytes.toFixed(0)} B, sink / bare ${
      (sinkBytes / bareBytes).toFixed(2)
    }x`
  )
  const line = {
    bench: "allocation",
    metric: "bigtable.sink.bytesAllocatedPerRecord.median",
    value: Math.round(sinkBytes),
    unit: "B/record",
    baseline: Math.round(bareBytes),
    ratio: Number((sinkBytes / bareBytes).toFixed(3)),
    records,
    passes,
    batch,
    concurrency,
    interval,
    date: new Date().toISOString(),
    node: process.version
  }
  const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(path.join(results, "allocation.jsonl"), `${JSON.stringify(line)}\n`)
})

await Effect.runPromise(Effect.scoped(main))
