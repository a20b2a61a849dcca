/**
 * Bigtable exactly-once throughput (issue 12), into a private cbtemulator started by the test harness,
 * three methods in the same run:
 *
 * - `raw`: a hand-written loop of the official gapic client's `checkAndMutateRow`, `--concurrency`
 *   requests in flight, each the request the mode sends (predicate: a column range closed on the
 *   identity in the marker family; false mutations: one AddToCell, then the marker SetCell). Its
 *   identity is the record number in hex, not a SHA-256: the loop does less work than the sink.
 * - `eo`: the same records through `Stream.run(BigtableSink.make(...))` with
 *   `maxInFlightRequests = --concurrency`, checkpointing every `--checkpoint` records into
 *   `CheckpointStore.memory` (staging, saving the envelopes and committing are all in the time).
 * - `alo`: the same AddToCell through the at-least-once sink (`BigtableSink.make`, default batching),
 *   which does not deduplicate: what exactly-once costs over it.
 * - `bare`: Node's floor for the protocol: the request `raw` sends, encoded by the library's encoder
 *   (`checkAndMutateProto.ts`) and sent on a plain `node:http2` stream of its own, `--concurrency` in
 *   flight, by a plain loop (no Effect, credentials, deadline or retry): what one HTTP/2 stream a record
 *   costs before any sink machinery.
 *
 * Every record increments its own row (`row<i>`): on cbtemulator a CheckAndMutateRow copies its whole row
 * to evaluate the predicate, so hot rows accumulating markers would measure the emulator, not the sinks.
 * Each pass runs the three methods into fresh tables (families `c` INT64_SUM and `m` raw), in a rotated
 * order (cbtemulator slows down as it holds more cells), then drops them; medians are compared. After
 * each exactly-once pass the sums are read back and checked.
 *
 *   node bench/bigtableExactlyOnce.bench.ts [--records 20000] [--passes 4] [--concurrency 100] [--checkpoint 5000]
 *     [--only raw|eo|alo|bare]
 *
 * CPU per record is this process's `process.cpuUsage()` (user + system) over the method's run, divided
 * by the records: the emulator runs in its own process, so it is the client's CPU alone, which is what
 * decides the ratio on a loaded machine. `--only` runs one method (for `node --cpu-prof`).
 *
 * Prints a table and appends JSON lines to bench/results/bigtableExactlyOnce.jsonl.
 */
import { Effect, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../src/Bigtable/index.ts"
import { Checkpoint, CheckpointStore } from "../src/Sink.ts"
import { numberArg, optionalArg } from "./args.ts"
import { bareCheckAndMutateAll } from "./bigtableHttp2.ts"
import { checkAndMutate, key, type RawClient } from "./bigtableRaw.ts"
import {
  counterFamily,
  createTable,
  dropTable,
  emulatorWithGapic,
  instanceId,
  projectId,
  tableName
} from "./bigtableSetup.ts"
import { median } from "./timing.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const records = numberArg("records", 20_000)
// a multiple of the four methods: each leads a recorded pass once (the order rotates a pass)
const passes = numberArg("passes", 4)
const concurrency = numberArg("concurrency", 100)
const checkpointEvery = numberArg("checkpoint", 5_000)
const only = optionalArg("only")

/** The baseline: one CheckAndMutateRow per record, `concurrency` workers with one request each in flight. */
const runRaw = async (client: RawClient, table: string): Promise<number> => {
  const start = performance.now()
  let next = 0
  let absorbed = 0
  const worker = async () => {
    while (next < records) {
      const i = next++
      // oxlint-disable-next-line eslint/no-await-in-loop
      if (await checkAndMutate(client, table, i, "c")) absorbed++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  if (absorbed !== 0) throw new Error(`raw: ${absorbed} requests found their marker in a fresh table`)
  return records / ((performance.now() - start) / 1000)
}

type Client = BigtableClient.BigtableClient["Service"]

const increment = (i: number) =>
  RowMutationEntry.make(key(i), Mutation.addToCell({ family: "c", qualifier: "n", timestampMicros: 0, input: 1n }))

const runExactlyOnce = async (client: Client, tableId: string): Promise<number> => {
  const start = performance.now()
  const summary = await Effect.runPromise(
    Effect.gen(function*() {
      const resume = yield* Checkpoint.resume({ writerId: tableId, positionSchema: Schema.Number })
      return yield* Stream.range(0, records - 1).pipe(
        Stream.run(BigtableSink.make({
          table: TableDestination.makeUnsafe({ projectId, instanceId, tableId }),
          writeMethod: WriteMethod.exactlyOnce({ markerFamily: "m", maxInFlightRequests: concurrency }),
          checkpoint: { resume, every: checkpointEvery, position: (i: number) => i + 1 },
          serializer: increment
        }))
      )
    }).pipe(
      Effect.provide(CheckpointStore.memory),
      Effect.provideService(BigtableClient.BigtableClient, client)
    )
  )
  if (summary.recordsWritten !== records) throw new Error(`eo wrote ${summary.recordsWritten} of ${records}`)
  return records / ((performance.now() - start) / 1000)
}

const runAtLeastOnce = async (client: Client, tableId: string): Promise<number> => {
  const start = performance.now()
  const summary = await Effect.runPromise(
    Stream.range(0, records - 1).pipe(
      Stream.run(BigtableSink.make({
        table: TableDestination.makeUnsafe({ projectId, instanceId, tableId }),
        serializer: increment
      })),
      Effect.provideService(BigtableClient.BigtableClient, client)
    )
  )
  if (summary.recordsWritten !== records) throw new Error(`alo wrote ${summary.recordsWritten} of ${records}`)
  return records / ((performance.now() - start) / 1000)
}

/** Every row of the table holds exactly 1 in `c:n`, and there are `records` rows. */
const checkSums = async (client: RawClient, table: string) => {
  let rows = 0
  let wrong = 0
  await new Promise<void>((resolve, reject) => {
    client.readRows({ tableName: table, filter: { familyNameRegexFilter: "c" } })
      .on("data", (response: { chunks?: Array<{ value?: Uint8Array; rowKey?: Uint8Array }> }) => {
        for (const chunk of response.chunks ?? []) {
          if (chunk.rowKey !== undefined && chunk.rowKey.length > 0) rows++
          const v = chunk.value === undefined ? 0n : Buffer.from(chunk.value).readBigInt64BE()
          if (v !== 1n) wrong++
        }
      })
      .on("error", reject)
      .on("end", () => resolve())
  })
  if (rows !== records || wrong !== 0) throw new Error(`${table}: ${rows} rows, ${wrong} sums other than 1`)
}

/** A method left out by `--only` has no samples: NaN in the table, not a figure. */
const medianOf = (xs: ReadonlyArray<number>): number => (xs.length === 0 ? Number.NaN : median(xs))

const methods = ["raw", "eo", "alo", "bare"] as const
type Method = typeof methods[number]

const main = Effect.gen(function*() {
  const { admin, emulator, raw } = yield* emulatorWithGapic
  const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulator.emulatorHost } })

  const selected = methods.filter((m) => only === undefined || m === only)
  const samples: Record<Method, Array<number>> = { raw: [], eo: [], alo: [], bare: [] }
  const cpu: Record<Method, Array<number>> = { raw: [], eo: [], alo: [], bare: [] }
  // Node's floor on a session of its own, opened only when measured, closed with the run's scope
  const bare = selected.includes("bare")
    ? yield* Effect.acquireRelease(
      Effect.sync(() => bareCheckAndMutateAll(emulator.emulatorHost, { records, concurrency })),
      (session) => Effect.sync(session.close)
    )
    : undefined
  const runBare = (table: string) =>
    bare === undefined ? Promise.reject(new Error("bare: its session was not opened")) : bare.run(table)
  // One warm-up pass, not recorded.
  for (let pass = -1; pass < passes; pass++) {
    const shift = (pass + methods.length) % methods.length
    const order = [...methods.slice(shift), ...methods.slice(0, shift)].filter((m) => selected.includes(m))
    const rates: Partial<Record<Method, number>> = {}
    const cpus: Partial<Record<Method, number>> = {}
    for (const method of order) {
      const tableId = `${method}${pass + 1}`
      yield* Effect.promise(() => createTable(admin, tableId, { c: counterFamily, m: {} }))
      const before = process.cpuUsage()
      const rate = yield* Effect.promise(() =>
        method === "raw"
          ? runRaw(raw, tableName(tableId))
          : method === "eo"
          ? runExactlyOnce(client, tableId)
          : method === "bare"
          ? runBare(tableName(tableId))
          : runAtLeastOnce(client, tableId)
      )
      const used = process.cpuUsage(before)
      const perRecord = (used.user + used.system) / records
      if (method !== "alo") yield* Effect.promise(() => checkSums(raw, tableName(tableId)))
      yield* Effect.promise(() => dropTable(admin, tableId))
      rates[method] = rate
      cpus[method] = perRecord
      if (pass >= 0) {
        samples[method].push(rate)
        cpu[method].push(perRecord)
      }
    }
    console.log(
      `pass ${pass < 0 ? "warm-up" : pass + 1} (${order.join(", ")}): ` +
        order.map((m) => `${m} ${Math.round(rates[m] ?? 0)} records/s ${(cpus[m] ?? 0).toFixed(1)} µs CPU/record`).join(
          ", "
        )
    )
  }

  const rawMedian = medianOf(samples.raw)
  const eoMedian = medianOf(samples.eo)
  const aloMedian = medianOf(samples.alo)
  console.log(
    `\nbigtable exactly-once: ${records} records x ${passes} passes, concurrency ${concurrency}, ` +
      `checkpoint every ${checkpointEvery}, node ${process.version}, load average ${
        os.loadavg().map((l) => l.toFixed(1)).join(" ")
      }`
  )
  console.log("method   records/s min   records/s median   records/s max   vs raw   CPU µs/record (median)")
  for (const m of selected) {
    const sorted = samples[m].toSorted((a, b) => a - b)
    console.log(
      `${m.padEnd(8)} ${Math.round(sorted[0] ?? 0).toLocaleString("en").padStart(13)} ${
        Math.round(medianOf(sorted)).toLocaleString("en").padStart(18)
      } ${Math.round(sorted.at(-1) ?? 0).toLocaleString("en").padStart(15)} ${
        (medianOf(sorted) / rawMedian).toFixed(2).padStart(7)
      }x ${medianOf(cpu[m]).toFixed(1).padStart(24)}`
    )
  }
  const cpuOf = (m: Method) => medianOf(cpu[m])
  console.log(
    `eo / raw checkAndMutate loop: ${(eoMedian / rawMedian).toFixed(2)}x; eo / at-least-once sink: ${
      (eoMedian / aloMedian).toFixed(2)
    }x; CPU a record: eo ${(cpuOf("eo") / cpuOf("bare")).toFixed(2)}x the bare floor, the floor ${
      (cpuOf("bare") / cpuOf("alo")).toFixed(1)
    }x at-least-once`
  )
  if (only !== undefined) return
  const date = new Date().toISOString()
  const common = {
    date,
    node: process.version,
    records,
    passes,
    concurrency,
    checkpointEvery,
    loadAverage: Number(os.loadavg()[0]?.toFixed(1)),
    cpuMicrosPerRecord: {
      raw: Number(medianOf(cpu.raw).toFixed(1)),
      eo: Number(medianOf(cpu.eo).toFixed(1)),
      alo: Number(medianOf(cpu.alo).toFixed(1)),
      bare: Number(medianOf(cpu.bare).toFixed(1))
    }
  }
  const lines = [
    {
      bench: "bigtableExactlyOnce",
      metric: "eo.recordsPerSecond.median",
      value: Math.round(eoMedian),
      unit: "records/s",
      baseline: Math.round(rawMedian),
      ratio: Number((eoMedian / rawMedian).toFixed(3)),
      ...common
    },
    {
      bench: "bigtableExactlyOnce",
      metric: "eo.overAtLeastOnce",
      value: Math.round(eoMedian),
      unit: "records/s",
      baseline: Math.round(aloMedian),
      ratio: Number((eoMedian / aloMedian).toFixed(3)),
      ...common
    },
    {
      bench: "bigtableExactlyOnce",
      metric: "raw.recordsPerSecond.median",
      value: Math.round(rawMedian),
      unit: "records/s",
      baseline: Math.round(rawMedian),
      ratio: 1,
      ...common
    },
    {
      bench: "bigtableExactlyOnce",
      metric: "bare.recordsPerSecond.median",
      value: Math.round(medianOf(samples.bare)),
      unit: "records/s",
      baseline: Math.round(rawMedian),
      ratio: Number((medianOf(samples.bare) / rawMedian).toFixed(3)),
      ...common
    },
    {
      bench: "bigtableExactlyOnce",
      metric: "alo.recordsPerSecond.median",
      value: Math.round(aloMedian),
      unit: "records/s",
      baseline: Math.round(rawMedian),
      ratio: Number((aloMedian / rawMedian).toFixed(3)),
      ...common
    }
  ]
  const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(
    path.join(results, "bigtableExactlyOnce.jsonl"),
    `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`
  )
})

await Effect.runPromise(Effect.scoped(main))
