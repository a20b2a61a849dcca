/**
 * CPU per row of the BigQuery sink's caller-side hot path alone (`storageWrite/prepare.ts`): resolve each
 * record's destination and frame it into a slice buffer, with no owner, transport or server. The slices
 * are handed back to the pool and their frames taken off the projection, as the owner does once it sent
 * them, so the loop runs in its steady state. Two serializers on the 10-column row of bench/rows.ts:
 *
 * - `bytes`: pre-encoded rows (~106 bytes, `serialize` returning them), what `sink.bytes` prepares;
 * - `encode`: the compiled encoder writing each row in place (`RowSerializer.fromSchema`), `sink.encode`.
 *
 * Chunks of 4,096 records over 16,384 distinct rows, one static destination, 512 KiB appends. CPU per
 * row is this process's `process.cpuUsage()` over a pass; medians of the passes after a warm-up pass.
 *
 *   node bench/prepare.bench.ts [--rows 4000000] [--passes 5]
 *
 * Prints a table and appends JSON lines to bench/results/prepare.jsonl.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as RowSerializer from "../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../src/BigQuery/TableDestination.ts"
import * as Prepare from "../src/internal/bigquery/storageWrite/prepare.ts"
import * as Projection from "../src/internal/bigquery/storageWrite/projection.ts"
import * as Split from "../src/internal/bigquery/storageWrite/split.ts"
import { numberArg } from "./args.ts"
import { Row, rowGenerator } from "./rows.ts"
import { median } from "./timing.ts"

const rowCount = numberArg("rows", 4_000_000)
const passes = numberArg("passes", 5)
const chunkSize = 4096
const distinct = 16_384

const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
const serializer = Effect.runSync(RowSerializer.fromSchema(Row))
const makeRow = rowGenerator(7)
const rows = Array.from({ length: distinct }, (_, i) => makeRow(i))
const encoded = rows.map((r) => {
  const bytes = serializer.serialize(r, table)
  if (!(bytes instanceof Uint8Array)) throw new Error("unencodable benchmark row")
  return bytes
})
const chunksOf = <A>(all: ReadonlyArray<A>): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < all.length; i += chunkSize) out.push(all.slice(i, i + chunkSize))
  return out
}

const limits = { maxUnits: 1_000_000, maxBytes: 50 * 1024 * 1024 }

/** A pass of `rowCount` records through `prepare`, the slices given back as the owner would. */
const method = <A>(rowSerializer: RowSerializer.RowSerializer<A>, chunks: ReadonlyArray<ReadonlyArray<A>>) => {
  const env: Prepare.Env<A> = {
    resolve: () => table,
    serializer: rowSerializer,
    maxAppendRequestBytes: 512 * 1024,
    pool: Split.makePool(512 * 1024, 16),
    sizeHints: new Map(),
    projections: new Map()
  }
  return (): number => {
    const started = process.cpuUsage()
    let prepared = 0
    for (let k = 0; prepared < rowCount; k++) {
      const out = Effect.runSync(Prepare.prepare(env, chunks[k % chunks.length] ?? [], limits))
      for (const { payload } of out.slices) {
        prepared += payload.count
        Split.recycle(env.pool, payload.buffer)
        const projection = env.projections.get(payload.key)
        if (projection !== undefined) Projection.takenAway(projection, payload.seals, payload.body.length)
      }
    }
    const used = process.cpuUsage(started)
    return ((used.user + used.system) * 1000) / prepared
  }
}

const methods: Record<string, () => number> = {
  bytes: method<Uint8Array>({
    tableSchema: serializer.tableSchema,
    serialize: (bytes) => bytes
  }, chunksOf(encoded)),
  encode: method(serializer, chunksOf(rows))
}

const samples: Record<string, Array<number>> = {}
for (const run of Object.values(methods)) run() // warm-up
for (let pass = 0; pass < passes; pass++) {
  for (const [name, run] of Object.entries(methods)) (samples[name] ??= []).push(run())
}

const bytesPerRow = encoded.reduce((n, r) => n + r.length, 0) / encoded.length
console.log(
  `prepare: ${rowCount} rows x ${passes} passes, ${bytesPerRow.toFixed(1)} bytes/row, node ${process.version}`
)
console.log("method     CPU ns/row min   median   max")
const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results", "prepare.jsonl")
for (const [name, xs] of Object.entries(samples)) {
  const sorted = xs.toSorted((a, b) => a - b)
  console.log(
    `${name.padEnd(10)} ${(sorted[0] ?? 0).toFixed(1).padStart(14)} ${median(xs).toFixed(1).padStart(8)} ${
      (sorted.at(-1) ?? 0).toFixed(1).padStart(6)
    }`
  )
  fs.appendFileSync(
    results,
    JSON.stringify({
      at: new Date().toISOString(),
      bench: "prepare",
      method: name,
      cpuNsPerRow: median(xs),
      samples: xs,
      rows: rowCount,
      node: process.version
    }) + "\n"
  )
}
