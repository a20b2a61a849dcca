/**
 * The memory half of the BigQuery benchmark, run by bigquery.bench.ts in a fresh process per figure:
 * streams `--rss-rows` generated rows through `BigQuerySink.make` (rows encoded by
 * `RowSerializer.fromSchema`) into the fake at `--grpc`/`--rest`, sampling RSS every 50 ms, and prints
 * the peak as one JSON line. `--source-only` drains the same rows without the sink: what the source
 * alone takes.
 *
 * It imports the package by its name, so Node resolves it to the built `dist/` as a user's program
 * would (bigquery.bench.ts builds it first); only this file and rows.ts go through Node's TypeScript
 * stripping, whose memory a compiled program does not pay.
 *
 *   node bench/bigqueryRss.ts --grpc host:port --rest host:port --project p [--rss-rows N] [--depth N] [--source-only]
 */
import { Effect, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import { flag, numberArg, textArg } from "./args.ts"
import { Row, rowGenerator } from "./rows.ts"

export interface RssResult {
  readonly maxMB: number
  readonly startMB: number
  /** The V8 heap and the array buffers at the peak. */
  readonly heapMB: number
  readonly arrayBuffersMB: number
  readonly rowsPerSecond: number
}

const rows = numberArg("rss-rows", 5_000_000)
const depth = numberArg("depth", 100)
const sourceOnly = flag("source-only")
/** `--distinct N`: draw the rows from N prebuilt ones instead of building each (a source that allocates nothing per row). */
const distinct = numberArg("distinct", 0)
const projectId = textArg("project")
const makeRow = rowGenerator(7)

const program = Effect.gen(function*() {
  const serializer = yield* RowSerializer.fromSchema(Row)
  const table = yield* TableDestination.make({ projectId, datasetId: "d", tableId: "t" })
  const layer = BigQueryClient.layer({ projectId, emulator: { grpc: textArg("grpc"), rest: textArg("rest") } })
  const pool = Array.from({ length: distinct }, (_, i) => makeRow(i))
  const source = Stream.range(0, rows - 1).pipe(
    Stream.map(distinct > 0 ? (i) => pool[i % distinct]! : makeRow),
    Stream.rechunk(4096)
  )
  yield* sourceOnly ? Stream.runDrain(source) : source.pipe(
    Stream.run(
      BigQuerySink.make({ table, serializer, writeMethod: WriteMethod.atLeastOnce({ maxInFlightRequests: depth }) })
    ),
    Effect.provide(layer)
  )
})

const startMB = process.memoryUsage().rss / 1e6
let maxMB = startMB
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
await Effect.runPromise(program)
const seconds = (performance.now() - start) / 1000
clearInterval(sampler)
const result: RssResult = {
  maxMB: Math.round(maxMB),
  startMB: Math.round(startMB),
  heapMB: Math.round(heapMB),
  arrayBuffersMB: Math.round(arrayBuffersMB),
  rowsPerSecond: Math.round(rows / seconds)
}
console.log(JSON.stringify(result))
