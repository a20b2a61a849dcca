/**
 * The at-least-once BigQuery sink against the fake's fast-ack mode (no parsing of rows, an immediate
 * acknowledgement), measured against two baselines in the same run:
 *
 * - `raw`: a raw `@grpc/grpc-js` AppendRows loop sending identical, already-encoded batches (the same
 *   hand framing: write_stream on every request, writer_schema on the first only) at the same in-flight
 *   depth;
 * - `raw.http2`: the same loop without grpc-js, on `node:http2` (gRPC's length-prefixed messages written to
 *   the stream by hand, each request encoded in the pass): what the transport under grpc-js costs alone;
 * - `raw.http2.framed`: the same with every request framed before the passes, one write each: what HTTP/2
 *   itself costs, the floor of any Node client;
 * - `sink.bytes`: `BigQuerySink.make` fed the same pre-encoded rows (serializer = identity): the sink's
 *   own cost (admission, batching, flow control, response handling) against `raw`;
 * - `jsonWriter`: the Node managedwriter `JSONWriter` appending the same logical rows as objects, batches of
 *   the same row count, the same number of appends pending;
 * - `sink.encode`: `BigQuerySink.make` fed the rows as objects through `RowSerializer.fromSchema`: the
 *   whole path against `jsonWriter`;
 * - `sink.exactlyOnce`: `BigQuerySink.make` with `WriteMethod.exactlyOnce` fed the same rows, a checkpoint every second (a
 *   memory `CheckpointStore`; the fake acknowledges BUFFERED appends and `FlushRows` at once), against
 *   `sink.encode`; each checkpoint's latency (drain, prepare, save, `FlushRows`) is recorded through a
 *   tracer on its `BigQuerySink.checkpoint` span (median and p99 over the timed passes). Its position is a
 *   stand-in, the count of rows the source has emitted, kept per chunk (`Stream.mapArray`), not per row,
 *   so the method pays for no per-row work the others skip; nothing is restored, so it is never read.
 *   Its appends are pipelined within the admission budget (`maxInFlightBytes`, 16 appends by default),
 *   not `--depth`. `--latency <ms>` makes the fake hold every answer that long (a round trip to a
 *   remote service), which is where pipelining shows.
 *
 * The setting is a client streaming to a remote service (BENCHMARKS.md says why each choice matters):
 *
 * - the fake runs in its own process (bench/fakeBigQueryProcess.ts; `--in-process` puts it back here);
 * - it grants HTTP/2 flow-control windows of `--flowWindow` bytes (default 1 MiB; 0 keeps Node's 64 KiB, as
 *   does `--in-process`);
 * - each pass streams `--rows` rows (default 2,000,000: about 415 batches, four times the depth, so
 *   the passes measure the steady state, not one burst);
 * - the rows are `--distinct` distinct rows (default 16,384) repeated: a stream's working set, not
 *   millions of rows held live for the collector to mark.
 *
 * Then peak RSS while streaming `--rss-rows` rows (default 5,000,000) through `sink.encode`, each figure
 * the median of `--rss-runs` fresh processes (default 3; the highest is recorded too) running the built
 * package from compiled JavaScript (bench/bigqueryRss.ts): `rss` with a new row object per record,
 * `rss.heapCapped` the same with V8's old space capped at `--heap-cap-mb`, `rss.distinctRows` with rows
 * drawn from `--distinct` prebuilt ones (no garbage from the source: the sink's own footprint), and
 * `rss.sourceOnly`, the new rows drained without the sink.
 *
 *   node bench/bigquery.bench.ts [--rows 2000000] [--passes 3] [--warmup 1] [--depth 100] [--flowWindow 1048576]
 *                                [--distinct 16384] [--rss-rows 5000000] [--rss-runs 3] [--in-process]
 *                                [--only raw,raw.http2,raw.http2.framed,sink.bytes,jsonWriter,sink.encode,sink.exactlyOnce]
 *                                [--shared-process] [--latency 0] [--chunk 4096] [--batch-bytes 524288]
 *
 * Each timed pass of each method runs in a fresh process (bench/isolated.ts says why), the methods
 * alternating; each process first runs `--warmup` untimed passes (JIT warm-up for every side alike),
 * and each figure is the median of its passes. `--shared-process` times them all in this process
 * instead, interleaved after every method's warm-up. Beside rows/s, each method's CPU per row (user +
 * system time of its process, all threads, over the pass; the fake's process is not counted) is
 * recorded as `cpuNsPerRow`, which moves much less with the load on shared cores.
 *
 * Prints a table and appends JSON lines to bench/results/bigquery.jsonl.
 */
import { Effect, Exit, Layer, Schema, Scope, Stream, Tracer } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as BigQueryClient from "../src/BigQuery/BigQueryClient.ts"
import * as BigQuerySink from "../src/BigQuery/BigQuerySink.ts"
import * as RowSerializer from "../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../src/BigQuery/TableDestination.ts"
import * as WriteMethod from "../src/BigQuery/WriteMethod.ts"
import { encodeDescriptor } from "../src/internal/bigquery/encoding/descriptor.ts"
import * as AppendRequest from "../src/internal/bigquery/transport/appendRequest.ts"
import * as Checkpoint from "../src/Sink/Checkpoint.ts"
import { CheckpointStore } from "../src/Sink/CheckpointStore.ts"
import { flag, forwardedArgs, numberArg, optionalArg } from "./args.ts"
import * as Raw from "./bigqueryRaw.ts"
import type { RssResult } from "./bigqueryRss.ts"
import * as FakeProcess from "./fakeBigQueryProcess.ts"
import * as Isolated from "./isolated.ts"
import * as JsonWriter from "./jsonWriter.ts"
import { Row, rowGenerator } from "./rows.ts"
import { median, timePass } from "./timing.ts"

const here = path.dirname(new URL(import.meta.url).pathname)
const root = path.dirname(here)

/** In a child of the isolated run (bench/isolated.ts): the one method it times, in one pass. */
const childOf = Isolated.childMethod()
const rowCount = numberArg("rows", 2_000_000)
const distinct = numberArg("distinct", 16_384)
const passes = childOf === undefined ? numberArg("passes", 3) : 1
const warmup = numberArg("warmup", 1)
const depth = numberArg("depth", 100)
/** `--chunk <rows>`: the rows of each chunk the sinks' streams carry, one `write` each (a small one shows a write's fixed cost). */
const chunkRows = numberArg("chunk", 4096)
const flowWindow = numberArg("flowWindow", 1024 * 1024)
const rssRows = numberArg("rss-rows", 5_000_000)
const heapCapMB = numberArg("heap-cap-mb", 128)
const rssRuns = numberArg("rss-runs", 3)
/** `--latency <ms>`: the fake holds each append's answer that long (a round trip to a remote service). */
const latencyMillis = numberArg("latency", 0)
/**
 * `--only <method>[,<method>...]`: time those methods alone, print their rows/s and record nothing
 * (with `--shared-process`, in this process: for `--cpu-prof`).
 */
const only = childOf ?? optionalArg("only")
/** `--in-process`: serve the fake from this process (as the tests do) instead of its own. */
const inProcess = flag("in-process")
/** `--shared-process`: time every method in this one process, interleaved (the method before 2026-12-01). */
const sharedProcess = flag("shared-process")
/** What a child of the isolated run takes over: the workload, not the passes or the RSS runs. */
const forwarded = forwardedArgs([
  "rows",
  "distinct",
  "warmup",
  "depth",
  "chunk",
  "flowWindow",
  "latency",
  "batch-bytes"
]).concat(
  inProcess ? ["--in-process"] : []
)
/** `--batch-bytes`: the sink's `maxAppendRequestBytes`, and the cut of the raw baselines' requests. */
const batchBytes = numberArg("batch-bytes", 512 * 1024)

const inProcessFake = async (scope: Scope.Scope): Promise<FakeProcess.FakeProcess> => {
  const Fake = await import("../test/support/fakeBigQueryWrite.ts")
  const fake = await Effect.runPromise(Fake.make({ fastAck: true, latencyMillis }).pipe(Scope.provide(scope)))
  return {
    ...fake,
    rowCount: () => Promise.resolve(fake.rowCount()),
    digest: () => Promise.reject(new Error("the record mode runs in its own process")),
    close: () => {}
  }
}

const makeRow = rowGenerator(7)

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>): Promise<A> => Effect.runPromise(Effect.scoped(effect))

/** Milliseconds of every exactly-once checkpoint, read off its span. */
const checkpointMillis: Array<number> = []
class TimedSpan extends Tracer.NativeSpan {
  override end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.name === "BigQuerySink.checkpoint") checkpointMillis.push(Number(endTime - this.startTime) / 1e6)
    super.end(endTime, exit)
  }
}
const timing = Tracer.make({ span: (options) => new TimedSpan(options) })
const percentile = (xs: ReadonlyArray<number>, p: number) =>
  xs.length === 0 ? 0 : xs.toSorted((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!

const main = async () => {
  const scope = await Effect.runPromise(Scope.make())
  const fake = inProcess ? await inProcessFake(scope) : await FakeProcess.start(flowWindow, { latencyMillis })
  const serializer = await Effect.runPromise(RowSerializer.fromSchema(Row))
  const table = await Effect.runPromise(
    TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: "t" })
  )
  const descriptor = encodeDescriptor(RowSerializer.descriptorOf(serializer, table))
  // `distinct` rows repeated to `rowCount`: a stream's working set, not millions of rows held live, whose
  // marking would dominate every collection and charge each method for the bench's own heap
  const distinctRows = Array.from({ length: distinct }, (_, i) => makeRow(i))
  const distinctEncoded = distinctRows.map((r) => {
    const bytes = serializer.serialize(r, table)
    if (!(bytes instanceof Uint8Array)) throw new Error("unencodable benchmark row")
    return bytes
  })
  const rows = Array.from({ length: rowCount }, (_, i) => distinctRows[i % distinct]!)
  const encoded = Array.from({ length: rowCount }, (_, i) => distinctEncoded[i % distinct]!)
  const bytesPerRow = encoded.reduce((n, r) => n + r.length, 0) / encoded.length
  // the same batches for every method: cut by bytes as the sink cuts them
  const batches: Array<Array<Uint8Array>> = [[]]
  let frame = 0
  for (const r of encoded) {
    const f = AppendRequest.rowFrameLength(r.length)
    if (frame + f > batchBytes && batches.at(-1)!.length > 0) {
      batches.push([])
      frame = 0
    }
    batches.at(-1)!.push(r)
    frame += f
  }
  const rowsPerBatch = Math.ceil(rowCount / batches.length)
  // the requests of `raw.http2.framed`, framed once before the passes
  const frames = Raw.framedRequests({ target: fake.grpcTarget, table, descriptor, batches, depth })

  const layer = Layer.fresh(BigQueryClient.layer({
    projectId: fake.projectId,
    emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint }
  }))
  const writeMethod = WriteMethod.atLeastOnce({ maxInFlightRequests: depth, maxAppendRequestBytes: batchBytes })

  const methods: Record<string, () => Promise<void>> = {
    raw: () => Raw.grpcJs({ target: fake.grpcTarget, table, descriptor, batches, depth }),
    "raw.http2": () => Raw.http2({ target: fake.grpcTarget, table, descriptor, batches, depth }),
    "raw.http2.framed": () => Raw.http2Framed({ target: fake.grpcTarget, table, descriptor, batches, depth }, frames),
    "sink.bytes": () =>
      run(
        Stream.fromIterable(encoded).pipe(
          Stream.rechunk(chunkRows),
          Stream.run(BigQuerySink.make({
            table,
            writeMethod,
            serializer: {
              tableSchema: serializer.tableSchema,
              descriptor: () => RowSerializer.descriptorOf(serializer, table),
              serialize: (bytes: Uint8Array) => bytes
            }
          })),
          Effect.provide(layer),
          Effect.asVoid
        )
      ),
    jsonWriter: () =>
      JsonWriter.appendAll({
        projectId: fake.projectId,
        grpcTarget: fake.grpcTarget,
        tablePath: table.tablePath,
        rows,
        rowsPerBatch,
        depth
      }),
    "sink.encode": () =>
      run(
        Stream.fromIterable(rows).pipe(
          Stream.rechunk(chunkRows),
          Stream.run(BigQuerySink.make({ table, writeMethod, serializer })),
          Effect.provide(layer),
          Effect.asVoid
        )
      ),
    "sink.exactlyOnce": () => {
      let written = 0
      return run(
        Effect.gen(function*() {
          const resume = yield* Checkpoint.resume({ writerId: "bench", positionSchema: Schema.Number })
          yield* Stream.fromIterable(rows).pipe(
            Stream.rechunk(chunkRows),
            Stream.mapArray((chunk) => {
              written += chunk.length
              return chunk
            }),
            Stream.run(BigQuerySink.make({
              table,
              serializer,
              writeMethod: WriteMethod.exactlyOnce({ maxAppendRequestBytes: batchBytes }),
              checkpoint: { resume, every: "1 second", position: () => written }
            }))
          )
        }).pipe(
          Effect.provide(Layer.merge(layer, Layer.fresh(CheckpointStore.memory))),
          Effect.withTracer(timing),
          Effect.asVoid
        )
      )
    }
  }

  if (only !== undefined) {
    const chosen = only.split(",")
    for (const name of Object.keys(methods)) if (!chosen.includes(name)) delete methods[name]
  }
  /** Every method's warm-up passes, then `passes` timed passes interleaved, all in this process. */
  const timeInProcess = async (
    samples: Record<string, Array<number>>,
    cpuSamples: Record<string, Array<number>>
  ): Promise<void> => {
    for (let pass = 0; pass < warmup; pass++) {
      // oxlint-disable-next-line no-await-in-loop
      for (const method of Object.values(methods)) await method()
    }
    // the checkpoints of the warm-up passes ran cold
    checkpointMillis.length = 0
    for (let pass = 0; pass < passes; pass++) {
      for (const [name, method] of Object.entries(methods)) {
        // oxlint-disable-next-line no-await-in-loop
        const before = await fake.rowCount()
        // oxlint-disable-next-line no-await-in-loop
        const { cpuSeconds, seconds } = await timePass(method)
        ;(cpuSamples[name] ??= []).push(cpuSeconds * 1e9 / rowCount)
        // oxlint-disable-next-line no-await-in-loop
        const acknowledged = (await fake.rowCount()) - before
        if (acknowledged !== rowCount) throw new Error(`${name}: ${acknowledged} rows acknowledged`)
        ;(samples[name] ??= []).push(rowCount / seconds)
      }
    }
  }
  const samples: Record<string, Array<number>> = {}
  /** The measured process's CPU time (all its threads) per row, in nanoseconds. */
  const cpuSamples: Record<string, Array<number>> = {}
  if (childOf === undefined && !sharedProcess) {
    const isolated = Isolated.run(new URL(import.meta.url).pathname, Object.keys(methods), passes, forwarded)
    for (const [name, xs] of Object.entries(isolated)) {
      samples[name] = xs.map((x) => x.rowsPerSecond)
      cpuSamples[name] = xs.map((x) => x.cpuNsPerRow)
      for (const x of xs) checkpointMillis.push(...(x.extra?.["checkpointMillis"] ?? []))
    }
  } else {
    await timeInProcess(samples, cpuSamples)
  }
  if (childOf !== undefined) {
    Isolated.report({
      rowsPerSecond: samples[childOf]![0]!,
      cpuNsPerRow: cpuSamples[childOf]![0]!,
      extra: { checkpointMillis }
    })
    fake.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    return
  }

  if (only !== undefined) {
    for (const [name, xs] of Object.entries(samples)) {
      console.log(
        `${name}: median ${Math.round(median(xs))} rows/s (${xs.map((x) => Math.round(x)).join(", ")}), cpu ${
          Math.round(median(cpuSamples[name]!))
        } ns/row`
      )
    }
    if (checkpointMillis.length > 0) {
      console.log(
        `checkpoints: ${checkpointMillis.length}, median ${percentile(checkpointMillis, 0.5).toFixed(1)} ms, p99 ${
          percentile(checkpointMillis, 0.99).toFixed(1)
        } ms`
      )
    }
    fake.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    return
  }

  // RSS in fresh processes running the built package from compiled JavaScript, as a user's program
  // does: neither this process's arrays nor Node's TypeScript stripping count (bench/bigqueryRss.ts)
  for (const project of ["tsconfig.build.json", path.join("bench", "tsconfig.rss.json")]) {
    const built = spawnSync(process.execPath, [
      path.join(root, "node_modules", "typescript", "bin", "tsc"),
      "-p",
      path.join(root, project)
    ], { stdio: "inherit" })
    if (built.status !== 0) throw new Error(`tsc -p ${project} failed`)
  }
  const rssOnce = async (extra: Array<string>, nodeFlags: Array<string>): Promise<RssResult> => {
    const before = await fake.rowCount()
    const child = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const proc = spawn(process.execPath, [
        ...nodeFlags,
        path.join(here, ".build", "bigqueryRss.js"),
        ...extra,
        "--rss-rows",
        String(rssRows),
        "--depth",
        String(depth),
        "--grpc",
        fake.grpcEndpoint,
        "--rest",
        fake.restEndpoint,
        "--project",
        fake.projectId
      ])
      let stdout = ""
      let stderr = ""
      proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
      proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
      proc.on("close", (code) => resolve({ code, stdout, stderr }))
    })
    if (child.code !== 0) throw new Error(`rss child failed: ${child.stderr}`)
    const acknowledged = (await fake.rowCount()) - before
    if (!extra.includes("--source-only") && acknowledged !== rssRows) {
      throw new Error(`rss child: ${acknowledged} of ${rssRows} rows acknowledged`)
    }
    return JSON.parse(child.stdout.trim().split("\n").at(-1)!) as RssResult
  }
  /** `rssRuns` runs (V8's heap sizing varies from run to run): the one of median peak, and the highest peak. */
  const rssRun = async (extra: Array<string>, nodeFlags: Array<string> = []) => {
    const results: Array<RssResult> = []
    // oxlint-disable-next-line no-await-in-loop
    for (let i = 0; i < rssRuns; i++) results.push(await rssOnce(extra, nodeFlags))
    const sorted = results.toSorted((a, b) => a.maxMB - b.maxMB)
    return { ...sorted[Math.floor(sorted.length / 2)]!, highestMB: sorted.at(-1)!.maxMB }
  }
  const rss = await rssRun([])
  // V8 grows its heap lazily: with its old space capped, the same stream shows the working set
  const rssCapped = await rssRun([], [`--max-old-space-size=${heapCapMB}`])
  // rows drawn from prebuilt ones: no garbage from the source, so what remains is the sink's footprint
  const rssDistinct = await rssRun(["--distinct", String(distinct)])
  const rssSource = await rssRun(["--source-only"])
  fake.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))

  const date = new Date().toISOString()
  const lines: Array<Record<string, unknown>> = []
  const line = (metric: string, value: number, unit: string, baseline: number | null, extra: object = {}) =>
    lines.push({
      bench: "bigquery",
      metric,
      value: Math.round(value),
      unit,
      baseline: baseline === null ? null : Math.round(baseline),
      ratio: baseline === null ? null : Number((value / baseline).toFixed(3)),
      rows: rowCount,
      passes,
      depth,
      bytesPerRow: Number(bytesPerRow.toFixed(1)),
      rowsPerBatch,
      distinct,
      flowWindow: inProcess ? "in-process" : flowWindow,
      latencyMillis,
      ...extra,
      date,
      node: process.version
    })
  const raw = median(samples["raw"]!)
  const jsonWriter = median(samples["jsonWriter"]!)
  const sinkEncode = median(samples["sink.encode"]!)
  const cpuNsPerRow = (name: string) => ({ cpuNsPerRow: Math.round(median(cpuSamples[name]!)) })
  line("raw.rowsPerSecond.median", raw, "rows/s", raw, cpuNsPerRow("raw"))
  line("raw.http2.rowsPerSecond.median", median(samples["raw.http2"]!), "rows/s", raw, cpuNsPerRow("raw.http2"))
  line(
    "raw.http2.framed.rowsPerSecond.median",
    median(samples["raw.http2.framed"]!),
    "rows/s",
    raw,
    cpuNsPerRow("raw.http2.framed")
  )
  line("sink.bytes.rowsPerSecond.median", median(samples["sink.bytes"]!), "rows/s", raw, cpuNsPerRow("sink.bytes"))
  line("jsonWriter.rowsPerSecond.median", jsonWriter, "rows/s", jsonWriter, cpuNsPerRow("jsonWriter"))
  line("sink.encode.rowsPerSecond.median", sinkEncode, "rows/s", jsonWriter, cpuNsPerRow("sink.encode"))
  line("sink.exactlyOnce.rowsPerSecond.median", median(samples["sink.exactlyOnce"]!), "rows/s", sinkEncode, {
    ...cpuNsPerRow("sink.exactlyOnce"),
    checkpointEvery: "1 second"
  })
  line("sink.exactlyOnce.checkpoint.median", percentile(checkpointMillis, 0.5), "ms", null, {
    checkpoints: checkpointMillis.length,
    p99Ms: Number(percentile(checkpointMillis, 0.99).toFixed(1))
  })
  const rssLine = (metric: string, r: RssResult & { readonly highestMB: number }, extra: object = {}) =>
    line(metric, r.maxMB, "MB", null, {
      rssRows,
      rssRuns,
      rssHighestMB: r.highestMB,
      rssStartMB: r.startMB,
      rssHeapMB: r.heapMB,
      rssArrayBuffersMB: r.arrayBuffersMB,
      rssRowsPerSecond: r.rowsPerSecond,
      ...extra
    })
  rssLine("rss.maxMB", rss)
  rssLine("rss.heapCapped.maxMB", rssCapped, { heapCapMB })
  rssLine("rss.distinctRows.maxMB", rssDistinct)
  rssLine("rss.sourceOnly.maxMB", rssSource)

  console.log(
    `rows ${rowCount}, ${
      bytesPerRow.toFixed(1)
    } B/row, ${batches.length} batches of ~${rowsPerBatch} rows, depth ${depth}, ${passes} passes`
  )
  console.log("metric                                  median        baseline   ratio  cpu ns/row")
  for (const l of lines) {
    console.log(
      `${String(l["metric"]).padEnd(38)} ${String(l["value"]).padStart(10)} ${String(l["unit"]).padEnd(6)} ${
        String(l["baseline"] ?? "-").padStart(9)
      } ${l["ratio"] === null ? "      -" : `${String(l["ratio"]).padStart(6)}x`} ${
        String(l["cpuNsPerRow"] ?? "-").padStart(10)
      }`
    )
  }
  const results = path.join(here, "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(path.join(results, "bigquery.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`)
}

await main()
