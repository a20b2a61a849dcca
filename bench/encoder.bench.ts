/**
 * The compiled row encoder against protobufjs reflection (`Type.encode(row).finish()`), on the
 * 10-column row of the serializer micro-benchmark (reference node-gcp-clients section 7): three
 * strings (~11, ~10 and ~35 characters), two INT64 (a sequence and values up to 1e12), a TIMESTAMP,
 * two FLOAT64 and two BOOL. Both encoders write the same message (the descriptor of
 * `TableSchema.toDescriptor`), byte for byte; this is checked before timing.
 *
 * Methods, each timed in several alternating passes over the same rows in one process:
 * - `reflect`: protobufjs `Type.encode(row).finish()`, TIMESTAMP as a number of µs (baseline);
 * - `serialize`: `RowSerializer.fromSchema(...).serialize(row)`, TIMESTAMP as a `Date`, one fresh
 *   `Uint8Array` per row (what the serializer contract returns);
 * - `encodeInto`: the compiled encoder appending rows to one reused batch buffer (what a sink does),
 *   allocating nothing per row.
 *
 *   node bench/encoder.bench.ts [--rows 200000] [--passes 7]
 *
 * Prints a table and appends JSON lines to bench/results/encoder.jsonl.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import protobuf from "protobufjs"
import descriptorExt from "protobufjs/ext/descriptor/index.js"
import * as RowSerializer from "../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../src/BigQuery/TableDestination.ts"
import * as TableSchema from "../src/BigQuery/TableSchema.ts"
import { compile } from "../src/internal/bigquery/encoding/encoder.ts"
import { WireWriter } from "../src/internal/bigquery/encoding/wireWriter.ts"
import { numberArg } from "./args.ts"
import { Row, seededRandom } from "./rows.ts"

const rowCount = numberArg("rows", 200_000)
const passes = numberArg("passes", 7)

const random = seededRandom(42)
const word = (length: number): string => {
  let s = ""
  for (let i = 0; i < length; i++) s += String.fromCharCode(97 + Math.floor(random() * 26))
  return s
}
const baseMillis = 1_700_000_000_000
const rows: Array<Row> = []
for (let i = 0; i < rowCount; i++) {
  rows.push({
    user: `user_${word(6)}`,
    country: word(2 + Math.floor(random() * 16)),
    url: `https://example.com/${word(15)}/${word(4)}`,
    seq: i,
    amount: Math.floor(random() * 1e12),
    ts: new Date(baseMillis + i * 37),
    lat: random() * 180 - 90,
    lon: random() * 360 - 180,
    active: random() < 0.5,
    premium: random() < 0.1
  })
}
// The same rows as protobufjs takes them: TIMESTAMP as µs.
const reflectRows = rows.map((r) => ({ ...r, ts: r.ts.getTime() * 1000 }))

const serializer = Effect.runSync(RowSerializer.fromSchema(Row))
const destination = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
const tableSchema = serializer.tableSchema(destination)
const fromDescriptor: (d: protobuf.Message) => protobuf.Type = Reflect.get(protobuf.Type, "fromDescriptor")
const ReflectType = fromDescriptor(descriptorExt.DescriptorProto.decode(TableSchema.toDescriptorBytes(tableSchema)))
new protobuf.Root().add(ReflectType)
ReflectType.resolveAll()
const encoder = compile(tableSchema, { rejectUnknownFields: false })

// Same bytes from both encoders.
let totalBytes = 0
for (let i = 0; i < rowCount; i++) {
  const ours = serializer.serialize(rows[i] as Row, destination)
  const theirs = ReflectType.encode(reflectRows[i] as object).finish()
  if (!(ours instanceof Uint8Array) || Buffer.compare(ours, theirs) !== 0) {
    console.error(`row ${i}: encodings differ`, ours, theirs)
    process.exit(1)
  }
  totalBytes += ours.length
}

const empty = new Uint8Array(0)
const sink: Array<Uint8Array> = Array.from({ length: rowCount }, () => empty)
const batch = new WireWriter(16 * 1024 * 1024)

const methods: Record<string, (from: number, to: number) => void> = {
  reflect: (from, to) => {
    for (let i = from; i < to; i++) sink[i] = ReflectType.encode(reflectRows[i] as object).finish()
  },
  serialize: (from, to) => {
    for (let i = from; i < to; i++) sink[i] = serializer.serialize(rows[i] as Row, destination) as Uint8Array
  },
  encodeInto: (from, to) => {
    batch.pos = 0
    for (let i = from; i < to; i++) {
      if (batch.pos > 8 * 1024 * 1024) batch.pos = 0 // a 9 MB request was sent
      encoder.encodeInto(batch, rows[i])
    }
  }
}

let gcCount = 0
const observer = new PerformanceObserver((list) => {
  gcCount += list.getEntries().length
})
observer.observe({ entryTypes: ["gc"] })
const tick = () => new Promise((resolve) => setImmediate(resolve))

for (const run of Object.values(methods)) for (let w = 0; w < 2; w++) run(0, Math.min(rowCount, 20_000))

const samples: Record<string, Array<number>> = { reflect: [], serialize: [], encodeInto: [] }
const gcs: Record<string, number> = { reflect: 0, serialize: 0, encodeInto: 0 }
for (let pass = 0; pass < passes; pass++) {
  for (const [name, run] of Object.entries(methods)) {
    for (let i = 0; i < rowCount; i++) sink[i] = empty
    // Passes run one after another on purpose: a tick lets the GC observer report.
    // oxlint-disable-next-line no-await-in-loop
    await tick()
    const gcBefore = gcCount
    const start = process.hrtime.bigint()
    run(0, rowCount)
    const seconds = Number(process.hrtime.bigint() - start) / 1e9
    // oxlint-disable-next-line no-await-in-loop
    await tick()
    gcs[name] = (gcs[name] ?? 0) + gcCount - gcBefore
    samples[name]?.push(rowCount / seconds)
  }
}
observer.disconnect()

const stats = (xs: Array<number>) => {
  const sorted = xs.toSorted((a, b) => a - b)
  return {
    min: sorted[0] ?? 0,
    median: sorted[Math.floor(sorted.length / 2)] ?? 0,
    max: sorted[sorted.length - 1] ?? 0
  }
}
const baseline = stats(samples["reflect"] ?? []).median
const bytesPerRow = totalBytes / rowCount
const date = new Date().toISOString()
const lines: Array<string> = []
console.log(
  `encoder: ${rowCount} rows x ${passes} passes, ${bytesPerRow.toFixed(1)} bytes/row, node ${process.version}`
)
console.log("method       rows/s min   rows/s median   rows/s max   MB/s median   vs reflect   GCs/pass")
for (const [name, xs] of Object.entries(samples)) {
  const s = stats(xs)
  const ratio = s.median / baseline
  console.log(
    `${name.padEnd(12)} ${Math.round(s.min).toLocaleString("en").padStart(11)} ${
      Math.round(s.median).toLocaleString("en").padStart(15)
    } ${Math.round(s.max).toLocaleString("en").padStart(12)} ${
      (s.median * bytesPerRow / 1e6).toFixed(1).padStart(13)
    } ${ratio.toFixed(2).padStart(11)}x ${((gcs[name] ?? 0) / passes).toFixed(1).padStart(10)}`
  )
  lines.push(JSON.stringify({
    bench: "encoder",
    metric: `${name}.rowsPerSecond.median`,
    value: Math.round(s.median),
    unit: "rows/s",
    baseline: Math.round(baseline),
    ratio: Number(ratio.toFixed(3)),
    min: Math.round(s.min),
    max: Math.round(s.max),
    gcPerPass: (gcs[name] ?? 0) / passes,
    rows: rowCount,
    passes,
    bytesPerRow: Number(bytesPerRow.toFixed(1)),
    date,
    node: process.version
  }))
}
const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
fs.mkdirSync(results, { recursive: true })
fs.appendFileSync(path.join(results, "encoder.jsonl"), `${lines.join("\n")}\n`)
