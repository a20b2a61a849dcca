/**
 * Effect steps and fiber runs of the sinks (issue 38), counted, not timed: with bytes allocated a record
 * (bench/allocation.bench.ts), the measure of a change too small for CPU time on this machine.
 *
 * A tracer whose `context` hook sees every primitive the fibers evaluate counts them (steps) and the
 * first primitive of each fiber run (runs), over one pass after one untimed pass:
 *
 * - Bigtable: `BigtableSink` at least once into a private cbtemulator, `--records` records, `--batch`
 *   entries a call, `--concurrency` calls' worth in flight: steps and runs a MutateRows call (the calls
 *   counted by their spans);
 * - BigQuery: `BigQuerySink` at least once, pre-encoded rows, into the fake BigQueryWrite server in its
 *   own process, `--rows` rows in writes of 4,096 (arrays made before the passes), appends of up to
 *   `--append-bytes` (512 KiB): steps and runs a write, an append (counted by their spans) and a row.
 *
 *   node bench/effectSteps.bench.ts [--only bigtable|bigquery] [--records 100000] [--rows 1000000]
 *                                   [--batch 100] [--concurrency 10] [--append-bytes 524288]
 *
 * Prints the counts and appends JSON lines to bench/results/effectSteps.jsonl.
 */
import { Effect, Tracer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { BigtableClient } from "../src/Bigtable/index.ts"
import { numberArg, optionalArg } from "./args.ts"
import { createTable, emulatorWithGapic, projectId } from "./bigtableSetup.ts"
import { bigQueryWorkload, bigtableSinkRun, writeRows } from "./workloads.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const only = optionalArg("only")
const records = numberArg("records", 100_000)
const rows = numberArg("rows", 1_000_000)
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)
const appendBytes = numberArg("append-bytes", 512 * 1024)

/** What the counting tracer has seen since the last `reset`. */
const counts = { on: false, steps: 0, runs: 0 }

/** MutateRows calls and BigQuery appends, counted by their spans. */
let calls = 0
let appends = 0

const evaluate = "~effect/Effect/evaluate"

const countingTracer = Tracer.make({
  span: (options) => {
    // a MutateRows call's span, whether the call ran on a fiber or started on none
    if (options.name === "BigtableSink.mutateRows") calls++
    else if (options.name === "BigQuerySink.append") appends++
    return Tracer.nativeTracer.span(options)
  },
  context: (primitive, fiber) => {
    if (counts.on) {
      counts.steps++
      // the first primitive of a fiber's run (the count restarts when a fiber resumes)
      if (fiber.currentOpCount === 1) counts.runs++
    }
    return primitive[evaluate](fiber)
  }
})

/** Counts over `run`: steps and fiber runs. */
const counted = async (run: () => Promise<void>): Promise<{ readonly steps: number; readonly runs: number }> => {
  counts.steps = 0
  counts.runs = 0
  counts.on = true
  try {
    await run()
  } finally {
    counts.on = false
  }
  return { steps: counts.steps, runs: counts.runs }
}

const bigtable = Effect.gen(function*() {
  const { admin, emulator } = yield* emulatorWithGapic
  const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulator.emulatorHost } })
  const pass = async (tableId: string) => {
    await createTable(admin, tableId, { cf: {} })
    await Effect.runPromise(
      bigtableSinkRun(client, tableId, { records, batch, concurrency }).pipe(Effect.withTracer(countingTracer))
    )
  }
  yield* Effect.promise(() => pass("warm"))
  calls = 0
  const { runs, steps } = yield* Effect.promise(() => counted(() => pass("counted")))
  console.log(
    `Bigtable: ${calls} MutateRows calls (${(records / calls).toFixed(1)} entries a call); ${
      (steps / calls).toFixed(1)
    } Effect steps and ${(runs / calls).toFixed(2)} fiber runs a call`
  )
  return [{
    bench: "effectSteps",
    metric: "bigtable.sink.stepsPerCall",
    value: Number((steps / calls).toFixed(1)),
    unit: "steps/call",
    fiberRunsPerCall: Number((runs / calls).toFixed(2)),
    calls,
    records,
    batch,
    concurrency
  }]
})

const bigquery = Effect.gen(function*() {
  const workload = yield* bigQueryWorkload(rows, appendBytes)
  yield* Effect.promise(() => workload.bytes())
  appends = 0
  const { runs, steps } = yield* Effect.promise(() => counted(() => workload.bytes(countingTracer)))
  const writes = workload.writes
  console.log(
    `BigQuery: ${writes} writes of up to ${writeRows} pre-encoded rows, ${appends} appends of up to ${appendBytes} bytes; ${
      (steps / writes).toFixed(1)
    } Effect steps and ${(runs / writes).toFixed(2)} fiber runs a write, ${(steps / appends).toFixed(1)} and ${
      (runs / appends).toFixed(2)
    } an append (${(steps / rows).toFixed(3)} steps a row)`
  )
  return [{
    bench: "effectSteps",
    metric: "bigquery.sink.bytes.stepsPerWrite",
    value: Number((steps / writes).toFixed(1)),
    unit: "steps/write",
    fiberRunsPerWrite: Number((runs / writes).toFixed(2)),
    stepsPerAppend: Number((steps / appends).toFixed(1)),
    fiberRunsPerAppend: Number((runs / appends).toFixed(2)),
    writes,
    appends,
    appendBytes,
    rows,
    writeRows
  }]
})

const main = Effect.gen(function*() {
  const lines: Array<Record<string, unknown>> = []
  if (only === undefined || only === "bigtable") lines.push(...yield* Effect.scoped(bigtable))
  if (only === undefined || only === "bigquery") lines.push(...yield* Effect.scoped(bigquery))
  const date = new Date().toISOString()
  const results = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(
    path.join(results, "effectSteps.jsonl"),
    lines.map((l) => `${JSON.stringify({ ...l, date, node: process.version })}\n`).join("")
  )
})

await Effect.runPromise(Effect.scoped(main))
