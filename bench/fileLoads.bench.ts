/**
 * Rows staged per second by the file-loads sink against rows appended per second by the at-least-once
 * sink, on the same rows (bench/rows.ts), in the same run:
 *
 * - `fileLoads.stage`: the file-loads sink's staging path, the steps its writer takes per record
 *   (src/internal/bigquery/fileLoads/writer.ts: serialize with `RowSerializer.fromSchema`, convert the
 *   row to Avro, append it to the destination's open file, which `avsc` deflates block by block into a
 *   resumable upload through `@google-cloud/storage`), one Effect per record inside one per chunk of
 *   4,096 as the writer runs them, then `closeAll` (what a checkpoint's prepare does: every upload
 *   finished). The uploads go to fake-gcs-server (.emulators, installed by `npm run emulators:install`)
 *   in its own process with its filesystem backend under a temp folder. Load jobs are not part of it:
 *   they run in BigQuery, once per checkpoint and destination, not per row;
 * - `sink.encode`: `BigQuerySink.make` at least once, the same rows as objects through the same
 *   serializer, into the fake `BigQueryWrite` server of bench/bigquery.bench.ts in its own process
 *   (fast-ack mode, 1 MiB HTTP/2 windows).
 *
 *   node bench/fileLoads.bench.ts [--rows 1000000] [--passes 3] [--warmup 1] [--depth 100]
 *                                 [--flowWindow 1048576] [--distinct 16384] [--max-file-mb 16]
 *
 * Each method first runs `--warmup` untimed passes; the timed passes interleave the methods and each
 * figure is the median of its passes, with the CPU time of this process per row (user + system, all
 * threads; the servers' processes are not counted). Every pass is checked: the fake acknowledged every
 * row, or the staged files' committables count every row and their sizes match the objects listed in
 * the bucket (which are then deleted, outside the timing).
 *
 * Prints a table and appends JSON lines to bench/results/fileLoads.jsonl.
 */
import type { Storage } from "@google-cloud/storage"
import { Effect, Exit, Layer, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BigQueryClient from "../src/BigQuery/BigQueryClient.ts"
import * as BigQuerySink from "../src/BigQuery/BigQuerySink.ts"
import * as RowSerializer from "../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../src/BigQuery/TableDestination.ts"
import * as WriteMethod from "../src/BigQuery/WriteMethod.ts"
import * as Avro from "../src/internal/bigquery/fileLoads/avro.ts"
import * as FileLoadsOptions from "../src/internal/bigquery/fileLoads/options.ts"
import type { Committable } from "../src/internal/bigquery/fileLoads/plan.ts"
import * as Staging from "../src/internal/bigquery/fileLoads/staging.ts"
import * as GcsClient from "../src/Sink/GcsClient.ts"
import { ensureInstalled } from "../test/support/emulatorInstall.ts"
import { startGcs } from "../test/support/emulators.ts"
import { numberArg } from "./args.ts"
import * as FakeProcess from "./fakeBigQueryProcess.ts"
import { Row, rowGenerator } from "./rows.ts"
import { median, timePass } from "./timing.ts"

const here = path.dirname(new URL(import.meta.url).pathname)

const rowCount = numberArg("rows", 1_000_000)
const distinct = numberArg("distinct", 16_384)
const passes = numberArg("passes", 3)
const warmup = numberArg("warmup", 1)
const depth = numberArg("depth", 100)
const flowWindow = numberArg("flowWindow", 1024 * 1024)
const maxStagingFileBytes = numberArg("max-file-mb", 16) * 1024 * 1024
const batchBytes = 512 * 1024
const bucket = "bench-staging"

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>): Promise<A> => Effect.runPromise(Effect.scoped(effect))

/** The staged objects listed in the bucket: their count and total size; then deleted. */
const stagedObjects = async (storage: Storage, prefix: string) => {
  const [files] = await storage.bucket(bucket).getFiles({ prefix })
  const bytes = files.reduce((n, f) => n + Number(f.metadata.size ?? 0), 0)
  await Promise.all(files.map((f) => f.delete()))
  return { count: files.length, bytes }
}

const main = async () => {
  const scope = await Effect.runPromise(Scope.make())
  const fake = await FakeProcess.start(flowWindow)
  const gcsRoot = fs.mkdtempSync(path.join(os.tmpdir(), "bench-file-loads-gcs-"))
  const gcsEndpoint = await Effect.runPromise(
    Effect.flatMap(ensureInstalled, (manifest) => startGcs(manifest, gcsRoot)).pipe(Scope.provide(scope))
  )
  const gcs = await Effect.runPromise(
    GcsClient.make({ projectId: fake.projectId, emulator: { rest: `127.0.0.1:${gcsEndpoint.port}` } })
  )
  await gcs.storage.createBucket(bucket)

  const serializer = await Effect.runPromise(RowSerializer.fromSchema(Row))
  const table = await Effect.runPromise(
    TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: "t" })
  )
  const schema = serializer.tableSchema(table)
  const avroSchema = Avro.avroSchema(schema)
  if (avroSchema instanceof Avro.AvroError) throw new Error(`no Avro schema: ${avroSchema.reason}`)
  const avroType = Avro.avroType(avroSchema) // the long logical types as bigint, as the writer builds it
  const converter = Avro.converter(schema, RowSerializer.descriptorOf(serializer, table))

  const makeRow = rowGenerator(7)
  const distinctRows = Array.from({ length: distinct }, (_, i) => makeRow(i))
  const rows = Array.from({ length: rowCount }, (_, i) => distinctRows[i % distinct]!)

  const layer = Layer.fresh(BigQueryClient.layer({
    projectId: fake.projectId,
    emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint }
  }))
  const writeMethod = WriteMethod.atLeastOnce({ maxInFlightRequests: depth, maxAppendRequestBytes: batchBytes })

  /** Per record, what the file-loads writer does once the destination is resolved and its state known. */
  const stageOne = (staging: Staging.Staging) => (record: Row) =>
    Effect.gen(function*() {
      const row = serializer.serialize(record, table)
      if (!(row instanceof Uint8Array)) return yield* Effect.die(new Error("unencodable benchmark row"))
      const converted = converter.convert(row)
      if (converted instanceof Avro.AvroError) return yield* Effect.die(converted)
      yield* staging.append(table, avroType, converted, row.length)
    })

  let stagingRun = 0
  /** The committables of the last `fileLoads.stage` pass. */
  let staged: ReadonlyArray<Committable> = []
  const methods: Record<string, () => Promise<void>> = {
    "sink.encode": () =>
      run(
        Stream.fromIterable(rows).pipe(
          Stream.rechunk(4096),
          Stream.run(BigQuerySink.make({ table, writeMethod, serializer })),
          Effect.provide(layer),
          Effect.asVoid
        )
      ),
    "fileLoads.stage": () =>
      run(Effect.gen(function*() {
        const staging = yield* Staging.make({
          storage: gcs.storage,
          stagingPath: { bucket, prefix: "bench" },
          writerId: `bench-${stagingRun++}`,
          maxStagingFileBytes,
          uploadTimeout: FileLoadsOptions.defaults.adminTimeout
        })
        const one = stageOne(staging)
        yield* Stream.fromIterable(rows).pipe(
          Stream.rechunk(4096),
          Stream.runForEachArray((chunk) => Effect.forEach(chunk, one, { discard: true }))
        )
        staged = yield* staging.closeAll
      }))
  }

  /** Checks a pass outside its timing: every row acknowledged, or staged and uploaded. */
  const check = async (name: string, acknowledgedBefore: number) => {
    if (name === "sink.encode") {
      const acknowledged = (await fake.rowCount()) - acknowledgedBefore
      if (acknowledged !== rowCount) throw new Error(`${name}: ${acknowledged} rows acknowledged`)
      return undefined
    }
    const stagedRows = staged.reduce((n, c) => n + c.rowCount, 0)
    const stagedBytes = staged.reduce((n, c) => n + c.byteCount, 0)
    const listed = await stagedObjects(gcs.storage, "bench/")
    if (stagedRows !== rowCount || listed.count !== staged.length || listed.bytes !== stagedBytes) {
      throw new Error(
        `${name}: ${stagedRows} rows in ${staged.length} committables (${stagedBytes} B), ` +
          `${listed.count} objects (${listed.bytes} B) in the bucket`
      )
    }
    return { files: staged.length, bytes: stagedBytes }
  }

  for (let pass = 0; pass < warmup; pass++) {
    for (const [name, method] of Object.entries(methods)) {
      // oxlint-disable-next-line no-await-in-loop
      const before = await fake.rowCount()
      // oxlint-disable-next-line no-await-in-loop
      await method()
      // oxlint-disable-next-line no-await-in-loop
      await check(name, before)
    }
  }
  const samples: Record<string, Array<number>> = {}
  const cpuSamples: Record<string, Array<number>> = {}
  let files = 0
  let stagedBytes = 0
  for (let pass = 0; pass < passes; pass++) {
    for (const [name, method] of Object.entries(methods)) {
      // oxlint-disable-next-line no-await-in-loop
      const before = await fake.rowCount()
      // oxlint-disable-next-line no-await-in-loop
      const { cpuSeconds, seconds } = await timePass(method)
      // oxlint-disable-next-line no-await-in-loop
      const checked = await check(name, before)
      if (checked !== undefined) {
        files = checked.files
        stagedBytes = checked.bytes
      }
      ;(samples[name] ??= []).push(rowCount / seconds)
      ;(cpuSamples[name] ??= []).push(cpuSeconds * 1e9 / rowCount)
    }
  }
  const loadAverage = os.loadavg().map((l) => Number(l.toFixed(2)))
  fake.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  fs.rmSync(gcsRoot, { recursive: true, force: true })

  const date = new Date().toISOString()
  const encode = median(samples["sink.encode"]!)
  const stage = median(samples["fileLoads.stage"]!)
  const common = {
    bench: "fileLoads",
    rows: rowCount,
    passes,
    distinct,
    gcs: "fake-gcs-server (filesystem backend, own process)",
    loadAverage,
    date,
    node: process.version
  }
  const lines: Array<Record<string, unknown>> = [
    {
      ...common,
      metric: "sink.encode.rowsPerSecond.median",
      value: Math.round(encode),
      unit: "rows/s",
      baseline: Math.round(encode),
      ratio: 1,
      cpuNsPerRow: Math.round(median(cpuSamples["sink.encode"]!)),
      passValues: samples["sink.encode"]!.map(Math.round)
    },
    {
      ...common,
      metric: "fileLoads.stage.rowsPerSecond.median",
      value: Math.round(stage),
      unit: "rows/s",
      baseline: Math.round(encode),
      ratio: Number((stage / encode).toFixed(3)),
      cpuNsPerRow: Math.round(median(cpuSamples["fileLoads.stage"]!)),
      passValues: samples["fileLoads.stage"]!.map(Math.round),
      stagedFiles: files,
      stagedBytesPerRow: Number((stagedBytes / rowCount).toFixed(1)),
      maxStagingFileBytes
    }
  ]

  console.log(
    `rows ${rowCount} (${distinct} distinct), ${passes} passes after ${warmup} warm-up; staged ${files} files, ${
      (stagedBytes / rowCount).toFixed(1)
    } B/row deflated Avro; load average ${loadAverage.join(" ")}`
  )
  console.log("metric                                  median        baseline   ratio  cpu ns/row  passes")
  for (const l of lines) {
    console.log(
      `${String(l["metric"]).padEnd(38)} ${String(l["value"]).padStart(10)} ${String(l["unit"]).padEnd(6)} ${
        String(l["baseline"]).padStart(9)
      } ${String(l["ratio"]).padStart(6)}x ${String(l["cpuNsPerRow"]).padStart(10)}  ${
        (l["passValues"] as Array<number>).join(", ")
      }`
    )
  }
  const results = path.join(here, "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(path.join(results, "fileLoads.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`)
}

await main()
