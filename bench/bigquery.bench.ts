/**
 * The at-least-once BigQuery sink against the in-process fake's fast-ack mode (no parsing of rows, an
 * immediate acknowledgement), measured against two baselines in the same process and run:
 *
 * - `raw`: a raw `@grpc/grpc-js` AppendRows loop sending identical, already-encoded batches (the same
 *   hand framing, writer_schema on the first request only) at the same in-flight depth;
 * - `sink.bytes`: `BigQuerySink.make` fed the same pre-encoded rows (serializer = identity): the sink's
 *   own cost (admission, batching, flow control, response handling) against `raw`;
 * - `jsonWriter`: the Node managedwriter `JSONWriter` appending the same logical rows as objects, batches of
 *   the same row count, the same number of appends pending;
 * - `sink.encode`: `BigQuerySink.make` fed the rows as objects through `RowSerializer.fromSchema`: the
 *   whole path against `jsonWriter`.
 *
 * Then `rss`: `--rss-rows` rows (default 5,000,000) streamed through `sink.encode` in a fresh process,
 * sampling RSS (with the V8 heap and array buffers at the peak); and `rss.sourceOnly`: the same rows
 * drained without the sink, what the source alone takes.
 *
 *   node bench/bigquery.bench.ts [--rows 400000] [--passes 3] [--warmup 1] [--depth 100] [--rss-rows 5000000]
 *
 * Each method first runs `--warmup` untimed passes (JIT warm-up for every side alike); the timed passes
 * then interleave the methods and each figure is the median of its passes.
 *
 * Prints a table and appends JSON lines to bench/results/bigquery.jsonl.
 */
import * as grpc from "@grpc/grpc-js"
import { Effect, Exit, Layer, Scope, Stream } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import * as BigQueryClient from "../src/BigQuery/BigQueryClient.ts"
import * as BigQuerySink from "../src/BigQuery/BigQuerySink.ts"
import * as RowSerializer from "../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../src/BigQuery/TableDestination.ts"
import * as WriteMethod from "../src/BigQuery/WriteMethod.ts"
import * as AppendRequest from "../src/internal/bigquery/appendRequest.ts"
import { encodeDescriptor } from "../src/internal/bigquery/descriptor.ts"
import { Row, seededRandom } from "./rows.ts"

const argument = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? Number(process.argv[at + 1]) : fallback
}
const rowCount = argument("rows", 400_000)
const passes = argument("passes", 3)
const warmup = argument("warmup", 1)
const depth = argument("depth", 100)
const rssRows = argument("rss-rows", 5_000_000)
const heapCapMB = argument("heap-cap-mb", 128)
/** `--only <method>[,<method>...]`: time those methods alone, print its rows/s and record nothing (for `--cpu-prof`). */
const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined
const batchBytes = 512 * 1024

const random = seededRandom(7)
const codes: Array<number> = []
const word = (n: number): string => {
  codes.length = n
  for (let i = 0; i < n; i++) codes[i] = 97 + Math.floor(random() * 26)
  return String.fromCharCode(...codes)
}
const makeRow = (i: number): Row => ({
  user: word(11),
  country: word(10),
  url: `https://${word(24)}.com/`,
  seq: i,
  amount: Math.floor(random() * 1e12),
  ts: new Date(1_700_000_000_000 + i),
  lat: random() * 180 - 90,
  lon: random() * 360 - 180,
  active: random() < 0.5,
  premium: random() < 0.1
})

v8.setFlagsFromString("--expose-gc")
const collect = vm.runInNewContext("gc") as () => void

const median = (xs: Array<number>) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)]!

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>): Promise<A> => Effect.runPromise(Effect.scoped(effect))

const main = async () => {
  // the baselines' modules (the managedwriter loads google-gax) and the fake are loaded here only, so the
  // RSS child holds what the sink needs and nothing else
  const { adapt, managedwriter } = await import("@google-cloud/bigquery-storage")
  const Fake = await import("../test/support/fakeBigQueryWrite.ts")
  const scope = await Effect.runPromise(Scope.make())
  const fake = await Effect.runPromise(Fake.make({ fastAck: true }).pipe(Scope.provide(scope)))
  const serializer = await Effect.runPromise(RowSerializer.fromSchema(Row))
  const table = await Effect.runPromise(
    TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: "t" })
  )
  const descriptor = encodeDescriptor(RowSerializer.descriptorOf(serializer, table))
  const rows = Array.from({ length: rowCount }, (_, i) => makeRow(i))
  const encoded = rows.map((r) => {
    const bytes = serializer.serialize(r, table)
    if (!(bytes instanceof Uint8Array)) throw new Error("unencodable benchmark row")
    return bytes
  })
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

  const layer = Layer.fresh(BigQueryClient.layer({
    projectId: fake.projectId,
    emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint }
  }))
  const writeMethod = WriteMethod.atLeastOnce({ maxInflightRequests: depth, maxAppendRequestBytes: batchBytes })

  const methods: Record<string, () => Promise<void>> = {
    raw: () =>
      new Promise<void>((resolve, reject) => {
        const client = new grpc.Client(fake.grpcTarget, grpc.credentials.createInsecure(), {
          "grpc.max_send_message_length": -1
        })
        const metadata = new grpc.Metadata()
        metadata.set("x-goog-request-params", `write_stream=${table.defaultStream}`)
        const call = client.makeBidiStreamRequest<Uint8Array, Buffer>(
          "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows",
          (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength),
          (b) => b,
          metadata
        )
        let sent = 0
        let acked = 0
        let inflight = 0
        const pump = () => {
          while (inflight < depth && sent < batches.length) {
            const header = sent === 0 ? { writeStream: table.defaultStream, descriptor, traceId: "bench" } : {}
            call.write(AppendRequest.encode(header, batches[sent]!))
            sent++
            inflight++
          }
        }
        call.on("data", () => {
          acked++
          inflight--
          if (acked === batches.length) {
            call.end()
            client.close()
            resolve()
          } else pump()
        })
        call.on("error", reject)
        pump()
      }),
    "sink.bytes": () =>
      run(
        Stream.fromIterable(encoded).pipe(
          Stream.rechunk(4096),
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
    jsonWriter: async () => {
      const writer = new managedwriter.WriterClient({
        projectId: fake.projectId,
        apiEndpoint: fake.grpcTarget.split(":")[0]!,
        port: Number(fake.grpcTarget.split(":")[1]),
        sslCreds: grpc.credentials.createInsecure(),
        universeDomain: "googleapis.com"
      })
      const connection = await writer.createStreamConnection({
        streamId: managedwriter.DefaultStream,
        destinationTable: table.tablePath
      })
      connection.onConnectionError(() => {})
      const protoDescriptor = adapt.convertStorageSchemaToProto2Descriptor(
        adapt.convertBigQuerySchemaToStorageTableSchema({
          fields: [
            { name: "user", type: "STRING", mode: "REQUIRED" },
            { name: "country", type: "STRING", mode: "REQUIRED" },
            { name: "url", type: "STRING", mode: "REQUIRED" },
            { name: "seq", type: "INTEGER", mode: "REQUIRED" },
            { name: "amount", type: "INTEGER", mode: "REQUIRED" },
            { name: "ts", type: "TIMESTAMP", mode: "REQUIRED" },
            { name: "lat", type: "FLOAT", mode: "REQUIRED" },
            { name: "lon", type: "FLOAT", mode: "REQUIRED" },
            { name: "active", type: "BOOLEAN", mode: "REQUIRED" },
            { name: "premium", type: "BOOLEAN", mode: "REQUIRED" }
          ]
        }),
        "root"
      )
      const json = new managedwriter.JSONWriter({ connection, protoDescriptor })
      const pending: Array<Promise<unknown>> = []
      for (let i = 0; i < rowCount; i += rowsPerBatch) {
        const slice = rows.slice(i, i + rowsPerBatch).map((r) => Object.assign({}, r, { ts: r.ts.getTime() * 1000 }))
        pending.push(json.appendRows(slice).getResult())
        // oxlint-disable-next-line no-await-in-loop
        if (pending.length >= depth) await pending.shift()
      }
      await Promise.all(pending)
      connection.close()
      writer.close()
    },
    "sink.encode": () =>
      run(
        Stream.fromIterable(rows).pipe(
          Stream.rechunk(4096),
          Stream.run(BigQuerySink.make({ table, writeMethod, serializer })),
          Effect.provide(layer),
          Effect.asVoid
        )
      )
  }

  if (only !== undefined) {
    const chosen = only.split(",")
    for (const name of Object.keys(methods)) if (!chosen.includes(name)) delete methods[name]
  }
  for (let pass = 0; pass < warmup; pass++) {
    // oxlint-disable-next-line no-await-in-loop
    for (const method of Object.values(methods)) await method()
  }
  const samples: Record<string, Array<number>> = {}
  for (let pass = 0; pass < passes; pass++) {
    for (const [name, method] of Object.entries(methods)) {
      // each method starts on a collected heap, not paying for the garbage of the one before it
      collect()
      const before = fake.rowCount()
      const start = performance.now()
      // oxlint-disable-next-line no-await-in-loop
      await method()
      const seconds = (performance.now() - start) / 1000
      if (fake.rowCount() - before !== rowCount) {
        throw new Error(`${name}: ${fake.rowCount() - before} rows acknowledged`)
      }
      ;(samples[name] ??= []).push(rowCount / seconds)
    }
  }

  if (only !== undefined) {
    for (const [name, xs] of Object.entries(samples)) {
      console.log(`${name}: median ${Math.round(median(xs))} rows/s (${xs.map((x) => Math.round(x)).join(", ")})`)
    }
    await Effect.runPromise(Scope.close(scope, Exit.void))
    return
  }

  // RSS in a fresh process (the fake stays here, as a remote service would), so neither the arrays of the
  // throughput passes nor the server's buffers count; then the same rows drained without the sink, which is
  // what the source alone takes
  interface RssResult {
    readonly maxMB: number
    readonly startMB: number
    readonly heapMB: number
    readonly arrayBuffersMB: number
    readonly rowsPerSecond: number
  }
  const rssRun = async (extra: Array<string>, nodeFlags: Array<string> = []): Promise<RssResult> => {
    const child = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const proc = spawn(process.execPath, [
        ...nodeFlags,
        new URL(import.meta.url).pathname,
        "--rss-child",
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
    return JSON.parse(child.stdout.trim().split("\n").at(-1)!) as RssResult
  }
  const before = fake.rowCount()
  const rss = await rssRun([])
  if (fake.rowCount() - before !== rssRows) throw new Error(`rss child: ${fake.rowCount() - before} rows acknowledged`)
  const rssSource = await rssRun(["--source-only"])
  // The same stream with V8's old space capped: V8 grows its heap lazily, so the default peak says
  // more about GC timing than about what the sink retains; finishing under a cap bounds the working set.
  const cappedBefore = fake.rowCount()
  const rssCapped = await rssRun([], [`--max-old-space-size=${heapCapMB}`])
  if (fake.rowCount() - cappedBefore !== rssRows) throw new Error("capped rss child lost rows")
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
      ...extra,
      date,
      node: process.version
    })
  const raw = median(samples["raw"]!)
  const jsonWriter = median(samples["jsonWriter"]!)
  line("raw.rowsPerSecond.median", raw, "rows/s", raw)
  line("sink.bytes.rowsPerSecond.median", median(samples["sink.bytes"]!), "rows/s", raw)
  line("jsonWriter.rowsPerSecond.median", jsonWriter, "rows/s", jsonWriter)
  line("sink.encode.rowsPerSecond.median", median(samples["sink.encode"]!), "rows/s", jsonWriter)
  line("rss.maxMB", rss.maxMB, "MB", null, {
    rssRows,
    rssStartMB: rss.startMB,
    rssHeapMB: rss.heapMB,
    rssArrayBuffersMB: rss.arrayBuffersMB,
    rssRowsPerSecond: rss.rowsPerSecond
  })
  line("rss.heapCapped.maxMB", rssCapped.maxMB, "MB", null, {
    rssRows,
    heapCapMB,
    rssHeapMB: rssCapped.heapMB,
    rssArrayBuffersMB: rssCapped.arrayBuffersMB,
    rssRowsPerSecond: rssCapped.rowsPerSecond
  })
  line("rss.sourceOnly.maxMB", rssSource.maxMB, "MB", null, {
    rssRows,
    rssStartMB: rssSource.startMB,
    rssHeapMB: rssSource.heapMB,
    rssRowsPerSecond: rssSource.rowsPerSecond
  })

  console.log(
    `rows ${rowCount}, ${
      bytesPerRow.toFixed(1)
    } B/row, ${batches.length} batches of ~${rowsPerBatch} rows, depth ${depth}, ${passes} passes`
  )
  console.log("metric                              median        baseline   ratio")
  for (const l of lines) {
    console.log(
      `${String(l["metric"]).padEnd(34)} ${String(l["value"]).padStart(10)} ${String(l["unit"]).padEnd(6)} ${
        String(l["baseline"] ?? "-").padStart(9)
      } ${l["ratio"] === null ? "      -" : `${String(l["ratio"]).padStart(6)}x`}`
    )
  }
  const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(path.join(results, "bigquery.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`)
}

/** Streams `--rss-rows` generated rows through the whole path and prints the peak RSS as JSON. */
const option = (name: string): string => {
  const at = process.argv.indexOf(`--${name}`)
  const value = at >= 0 ? process.argv[at + 1] : undefined
  if (value === undefined) throw new Error(`--${name} is required`)
  return value
}

const rssChild = async () => {
  const sourceOnly = process.argv.includes("--source-only")
  const projectId = option("project")
  const serializer = await Effect.runPromise(RowSerializer.fromSchema(Row))
  const table = await Effect.runPromise(TableDestination.make({ projectId: projectId, datasetId: "d", tableId: "t" }))
  const layer = BigQueryClient.layer({ projectId, emulator: { grpc: option("grpc"), rest: option("rest") } })
  const startMB = process.memoryUsage().rss / 1e6
  let maxMB = startMB
  // what the V8 heap and the array buffers held at the peak
  let heapMB = 0
  let arrayBuffersMB = 0
  const sampler = setInterval(() => {
    const usage = process.memoryUsage()
    if (usage.rss / 1e6 > maxMB) {
      maxMB = usage.rss / 1e6
      heapMB = usage.heapUsed / 1e6
      arrayBuffersMB = usage.arrayBuffers / 1e6
    }
  }, 50)
  const start = performance.now()
  const source = Stream.range(0, rssRows - 1).pipe(Stream.map(makeRow), Stream.rechunk(4096))
  await run(
    sourceOnly ? Stream.runDrain(source) : source.pipe(
      Stream.run(
        BigQuerySink.make({ table, serializer, writeMethod: WriteMethod.atLeastOnce({ maxInflightRequests: depth }) })
      ),
      Effect.provide(layer),
      Effect.asVoid
    )
  )
  const seconds = (performance.now() - start) / 1000
  clearInterval(sampler)
  console.log(
    JSON.stringify({
      maxMB: Math.round(maxMB),
      startMB: Math.round(startMB),
      heapMB: Math.round(heapMB),
      arrayBuffersMB: Math.round(arrayBuffersMB),
      rowsPerSecond: Math.round(rssRows / seconds)
    })
  )
}

await (process.argv.includes("--rss-child") ? rssChild() : main())
