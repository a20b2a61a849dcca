/**
 * The sinks side by side with Google's Go clients (issue 15), in one run: `npm run bench:peers`.
 *
 * Builds the Go programs of bench/peers/ (`go build` into the git-ignored bench/peers/.build; the
 * modules come from bench/peers/go.mod and go.sum, through the Go module proxy on the first build),
 * then interleaves, pass after pass:
 *
 * - BigQuery, into the fake BigQueryWrite server in its own process with 1 MiB windows (the BigQuery
 *   benchmark's setting, bench/fakeBigQueryProcess.ts): `sink.encode` (rows as objects through
 *   `RowSerializer.fromSchema`) against `go.encode` (the managedwriter, `proto.Marshal` of a generated
 *   struct per row), and `sink.bytes` (pre-encoded rows) against `go.bytes` (the managedwriter appending
 *   the same byte slices); `--rows` rows per pass (default 2,000,000) repeating 16,384 distinct rows,
 *   appends of up to `--batch-bytes` (512 KiB), `--depth` (100) in flight, on the default stream;
 * - Bigtable, into a private cbtemulator: the Bigtable sink against Go's `Table.ApplyBulk`, `--records`
 *   records per pass (default 100,000), 1 SetCell each, `--batch` (100) entries per call, `--concurrency`
 *   (10) calls in flight, each pass into fresh tables dropped afterwards. `--bigtable-fake`: every client's
 *   MutateRows calls go to a Go server that answers them at once, every entry OK, and passes the other
 *   calls on to the emulator (bench/bigtableFake.ts), so that no client waits on the emulator applying
 *   its entries; before timing, each client's entries are checked there (the same bytes).
 *
 * - the Node baselines of the other benchmarks, in the same passes (`--no-baselines` leaves them out): the
 *   raw grpc-js append loop and the Node managedwriter `JSONWriter` (bigquery.bench.ts), the gapic
 *   `mutateRows` loop (bigtable.bench.ts); each is compared with the Go peer of its path. With them,
 *   `bigtable.node.bare`, Node's floor for the Bigtable workload: the library's MutateRows call (its
 *   encoder and response reader) on a bare `node:http2` session (bench/bigtableHttp2.ts), the records
 *   turned into entries and cut into batches by a plain loop, no sink, credentials, deadlines or retries.
 *
 * Every method is timed in `--passes` passes (default 3), the first method of a pass rotating from pass
 * to pass; figures are medians, and `paired` is the median of each pass's own ratio of Go's CPU per item
 * to ours (steadier from run to run than the ratio of the medians). Each pass, ours as Go's, runs in a
 * fresh process that warms itself up first, for at least `--warmup-seconds` (BigQuery, default 8) or
 * `--bigtable-warmup-seconds` (8; see below) (bench/isolated.ts says why; `--shared-process` times ours
 * in this process instead, after one warm-up of each); the Bigtable passes share the emulator, each into
 * fresh tables. A pass of a sink and its Go peer holds both processes at once and times `--steps` (4)
 * passes of each, alternating, summed: the two sides of a comparison then share the machine's slow
 * spells (see `steps`). The baselines time one pass per process.
 * Next to throughput, the client's CPU per row: the CPU time of the process that ran the method (all its
 * threads) during the pass, over the rows: this process for our sinks (`process.cpuUsage`), the Go
 * program's own `getrusage` for Go (each Go process first runs its own warm-up).
 * On a loaded machine the wall-clock rate depends on what else runs; CPU per row much less.
 *
 * Before timing, the rows are checked byte for byte: a recording fake (`--record`) hashes every row it
 * receives, and `--verify-rows` rows (default 20,000) sent by each BigQuery method must give the same
 * digest.
 *
 *   npm run bench:peers [-- --passes 3 --rows 2000000 --records 100000 --only bigquery|bigtable --no-baselines
 *                          --batch-bytes 524288
 *                          --warmup-seconds 8 --bigtable-warmup-seconds 8 --warmup-passes 8
 *                          --bigtable-warmup-passes 20 --steps 4 --sink-per-pass --tls --pin --bigtable-fake]
 *
 * `--pin` (bench/pin.ts): the timed processes, ours and Go's, on CPU 0, the fake and the emulator on CPU 1.
 *
 * Prints a table and appends JSON lines to bench/results/peers.jsonl. Not part of `npm test` or CI: it
 * needs the Go toolchain (`go` on PATH, or $GO, or /usr/local/go/bin/go).
 */
import { v2 } from "@google-cloud/bigtable"
import { type Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BigQueryClient from "../src/BigQuery/BigQueryClient.ts"
import * as BigQuerySink from "../src/BigQuery/BigQuerySink.ts"
import * as RowSerializer from "../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../src/BigQuery/TableDestination.ts"
import * as WriteMethod from "../src/BigQuery/WriteMethod.ts"
import { BigtableClient, BigtableSink, TableDestination as BigtableTable } from "../src/Bigtable/index.ts"
import { encodeDescriptor } from "../src/internal/bigquery/encoding/descriptor.ts"
import * as AppendRequest from "../src/internal/bigquery/transport/appendRequest.ts"
import * as ClientInternal from "../src/internal/bigquery/transport/client.ts"
import type { Writer } from "../src/Sink.ts"
import { ensureInstalled } from "../test/support/emulatorInstall.ts"
import { startBigtable } from "../test/support/emulators.ts"
import { selfSigned } from "../test/support/selfSigned.ts"
import { flag, forwardedArgs, numberArg, optionalArg, textArg } from "./args.ts"
import * as Raw from "./bigqueryRaw.ts"
import * as BigtableFake from "./bigtableFake.ts"
import { bareMutateAll } from "./bigtableHttp2.ts"
import { runRaw } from "./bigtableRaw.ts"
import {
  createTable,
  dropTable as dropTableOf,
  gapicOptions,
  instanceId,
  projectId,
  tableName
} from "./bigtableSetup.ts"
import * as FakeProcess from "./fakeBigQueryProcess.ts"
import * as Isolated from "./isolated.ts"
import * as JsonWriter from "./jsonWriter.ts"
import * as Pin from "./pin.ts"
import { Row, rowGenerator } from "./rows.ts"
import { median, timePass } from "./timing.ts"
import { bigtableRecord, bigtableSinkRun, bigtableValue, bigtableWriteMethod, writeAndFlush } from "./workloads.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const here = path.dirname(new URL(import.meta.url).pathname)
const peersDir = path.join(here, "peers")
const buildDir = path.join(peersDir, ".build")

const rowCount = numberArg("rows", 2_000_000)
const distinct = numberArg("distinct", 16_384)
const passes = numberArg("passes", 3)
const depth = numberArg("depth", 100)
const flowWindow = numberArg("flowWindow", 1024 * 1024)
const verifyRows = numberArg("verify-rows", 20_000)
const records = numberArg("records", 100_000)
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)
const only = optionalArg("only")
/** `--batch-bytes`: the sink's `maxAppendRequestBytes`, and the cut of the Go peers' appends. */
const batchBytes = numberArg("batch-bytes", 512 * 1024)
/**
 * `--tls`: the BigQuery fake serves gRPC over TLS with a self-signed root made for the run (`openssl`), which
 * our client (its internal `tlsRoots`) and the Go program (`--tls-ca`) trust: the TLS cost a user meets
 * against the real service, on both sides. BigQuery only (the Bigtable emulator speaks plaintext), and
 * without the Node baselines (they dial plaintext). A child gets the certificate's directory (`--tls-dir`).
 */
const tls = flag("tls") || optionalArg("tls-dir") !== undefined
let tlsDir = optionalArg("tls-dir")
/** `--no-baselines`: leave out the Node baselines of the other benchmarks (raw grpc-js, JSONWriter, gapic mutateRows). */
const baselines = !flag("no-baselines") && !tls
/** In a child (bench/isolated.ts): the one BigQuery method of ours it times, in one pass after a warm-up. */
const childOf = Isolated.childMethod()
/** `--shared-process`: time our BigQuery methods in this process, interleaved (the method before 2026-12-01). */
const sharedProcess = flag("shared-process")
/** `--bigtable-fake`: the Bigtable clients' MutateRows calls go to bench/bigtableFake.ts, not the emulator (see above). */
const bigtableFakeMode = flag("bigtable-fake")
/**
 * `--warmup-seconds`: each BigQuery pass (ours and Go's, each in a fresh process) is timed after warm-up
 * passes that last at least this long; `--bigtable-warmup-seconds` (default 8), each Bigtable pass. Go's managedwriter reaches its steady rate only
 * after about a second of streaming (a fresh process timed after one 2M-row warm-up pass ran at 4.8M
 * rows/s, at 10-11.8M from its fourth pass, at the same CPU per row); that ramp was why a fresh Go
 * process per pass and a long-lived Go worker disagreed (issue 38, item 4). Our Bigtable sink's is
 * longer: in one process, passes of 200,000 records cost 7.2, 5.4, 4.1, 3.8, then 3.3 µs a record from
 * the fifth on (V8 optimizes by call counts, and a Bigtable call carries 100 records where a BigQuery
 * append carries ~4,900 rows), so one 100,000-record warm-up pass timed the ramp: 3 s of warm-up gave
 * 4.2 µs a record, 8 s 3.5 µs; Go's CPU per record is the same after either. Our BigQuery paths ramp
 * too: what runs once a chunk or a request (admission, the span, the offers) is called a few hundred
 * times a pass, and after 3 s of warm-up V8 still compiled 72-75 such functions in the timed encode
 * pass (135-150 ms of compiler-thread CPU, 36-40 ns a row); after 8 s, one (under 1 ms).
 */
const warmupSeconds = numberArg("warmup-seconds", 8)
/**
 * `--steps` (default 4): a pass of a method with a Go peer (the BigQuery sink's two paths, the Bigtable
 * sink) is one process of ours and one of Go's, warmed up one after the other, then `steps` timed passes
 * of each, alternating (ABBA) and summed. This VM has spells, a few seconds long, in which the same code
 * runs 1.5-2x slower (BENCHMARKS.md, "Passes in step"); one timed pass per process charged a spell to
 * whichever side ran in it, and two runs of the same code disagreed by more than any change being
 * measured. `--steps 0`: one timed pass per fresh process (the form before 2026-12-07; ADR 0059).
 */
const steps = numberArg("steps", 4)
const bigtableWarmupSeconds = numberArg("bigtable-warmup-seconds", 8)
/**
 * `--warmup-passes` (BigQuery, default 8) and `--bigtable-warmup-passes` (20): the warm-up also runs at
 * least this many passes, ours and Go's alike. V8 tiers code up by the calls it has run, not by time: in a
 * slow spell of the machine 8 s held fewer passes, and the encode children that then compiled 10-40
 * functions in their timed pass were the slowest (BENCHMARKS.md, "The machine's slow spells"). 8 passes
 * of 2M rows, or 20 of 100,000 records, is about what 8 s holds at the machine's usual speed.
 */
const warmupPasses = numberArg("warmup-passes", 8)
const bigtableWarmupPasses = numberArg("bigtable-warmup-passes", 20)
/**
 * `--sink-per-pass`: each pass of our sinks runs `Stream.run(BigQuerySink.make(...))` (or Bigtable's)
 * on its own writer, the BigQuery one on a client built for it: a writer's whole life per pass (its
 * start, V8 re-optimizing the code the last writer's objects were embedded in, its drain), the form
 * before 2026-12-05. By default a process holds one client and one writer, built before its warm-up,
 * and each pass writes its chunks and flushes: the steady state of a long-running stream, and what the
 * Go peers measure (one `ManagedStream`, or one Bigtable client, per process across the warm-up and
 * the timed pass, each pass waiting on every result).
 */
const sinkPerPass = flag("sink-per-pass")

/** What a child takes over: the BigQuery workload. */
const forwarded = () => [
  ...forwardedArgs([
    "rows",
    "distinct",
    "depth",
    "flowWindow",
    "warmup-seconds",
    "warmup-passes",
    "input",
    "batch-bytes"
  ]),
  ...(Pin.pinning ? ["--pin"] : []),
  ...(sinkPerPass ? ["--sink-per-pass"] : []),
  ...(tlsDir === undefined ? [] : ["--tls-dir", tlsDir])
]

/** One timed pass of one method: the rows, the wall time, the CPU time of the process that ran it. */
interface Pass {
  readonly items: number
  readonly seconds: number
  readonly cpuSeconds: number
  /** Ours: of `cpuSeconds`, what threads other than the main one spent (bench/timing.ts). */
  readonly helperCpuSeconds?: number
  /** Ours: full collections during the pass. */
  readonly majorCollections?: number
}

/** A pass's CPU nanoseconds per item. */
const cpuNsPerItem = (p: Pass): number => p.cpuSeconds / p.items * 1e9

/** Of those, what threads other than the main one spent; unknown for Go's passes. */
const helperNsPerItem = (p: Pass): number | undefined =>
  p.helperCpuSeconds === undefined ? undefined : p.helperCpuSeconds / p.items * 1e9

/** A child's timed pass as it reports it (bench/isolated.ts). */
const sampleOf = (p: Pass): Isolated.Sample => {
  const helper = helperNsPerItem(p)
  return {
    rowsPerSecond: p.items / p.seconds,
    cpuNsPerRow: cpuNsPerItem(p),
    ...(helper === undefined ? {} : { helperNsPerRow: helper }),
    ...(p.majorCollections === undefined ? {} : { majorCollections: p.majorCollections })
  }
}

/** The pass of `items` a child reported. */
const passOf = (items: number, sample: Isolated.Sample): Pass => ({
  items,
  seconds: items / sample.rowsPerSecond,
  cpuSeconds: sample.cpuNsPerRow * items / 1e9,
  ...(sample.helperNsPerRow === undefined ? {} : { helperCpuSeconds: sample.helperNsPerRow * items / 1e9 }),
  ...(sample.majorCollections === undefined ? {} : { majorCollections: sample.majorCollections })
})

/** A pass's line: its rate and CPU per item, then what only our passes report (helper threads, full collections). */
const passLine = (pass: number, name: string, p: Pass, unit: string): string => {
  const helper = helperNsPerItem(p)
  const ours = [
    ...(helper === undefined ? [] : [`helper threads ${helper.toFixed(0)}`]),
    ...(p.majorCollections === undefined ? [] : [`mark-compacts ${p.majorCollections}`])
  ]
  const rate = Math.round(p.items / p.seconds).toLocaleString("en").padStart(11)
  const cpu = cpuNsPerItem(p).toFixed(0)
  return `pass ${pass} ${name.padEnd(22)} ${rate} ${unit}s/s, ${cpu} ns CPU/${unit}${
    ours.length === 0 ? "" : ` (${ours.join(", ")})`
  }`
}

const goBinary = (): string => {
  if (process.env["GO"] !== undefined) return process.env["GO"]
  const found = spawnSync("go", ["version"])
  return found.status === 0 ? "go" : "/usr/local/go/bin/go"
}

const buildGo = () => {
  const go = goBinary()
  for (const program of ["bigquery", "bigtable", "bigtablefake"]) {
    const built = spawnSync(go, ["build", "-o", path.join(buildDir, program), `./cmd/${program}`], {
      cwd: peersDir,
      stdio: "inherit"
    })
    if (built.status !== 0) throw new Error(`go build ./cmd/${program} failed (is the Go toolchain installed?)`)
  }
}

/** Runs a Go program to the end; its JSON lines are its passes (bench/peers/measure). */
const runGo = (program: string, args: ReadonlyArray<string>): Promise<Array<Pass & { requests: number }>> =>
  new Promise((resolve, reject) => {
    const child = spawn(path.join(buildDir, program), args, { stdio: ["ignore", "pipe", "inherit"] })
    let stdout = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.on("error", reject)
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`${program} ${args.join(" ")} exited with ${code}`))
      resolve(stdout.trim().split("\n").map((line) => JSON.parse(line) as Pass & { requests: number }))
    })
  })

/** Times a method run in this process (bench/timing.ts) over `items`. */
const timeHere = async (items: number, method: () => Promise<void>): Promise<Pass> => ({
  items,
  ...(await timePass(method))
})

/** The methods this run timed in step with their peer (units of two); the baselines run one pass per process. */
const ranInStep = new Set<string>()

/** What a pass of the run times: one method, or ours and its Go peer in step (`--steps`). */
interface Unit {
  readonly names: ReadonlyArray<string>
  /** A pass of each of `names`, in that order. */
  readonly run: () => Promise<ReadonlyArray<Pass>>
}

/** One method's pass as a unit. */
const singleUnit = (name: string, pass: () => Promise<Pass>): Unit => ({
  names: [name],
  run: async () => [await pass()]
})

/** `passes` passes of every unit, who goes first rotating (a slow spell should not always hit the same one). */
const runUnits = async (order: ReadonlyArray<Unit>, samples: Record<string, Array<Pass>>, unit: string) => {
  for (let pass = 0; pass < passes; pass++) {
    for (let k = 0; k < order.length; k++) {
      const { names, run } = order[(k + pass) % order.length]!
      // oxlint-disable-next-line no-await-in-loop -- one pass at a time on the machine
      const ps = await run()
      if (names.length > 1) { for (const name of names) ranInStep.add(name) }
      names.forEach((name, i) => {
        const p = ps[i]
        if (p === undefined) throw new Error(`no pass of ${name}`)
        ;(samples[name] ??= []).push(p)
        console.log(passLine(pass + 1, name, p, unit))
      })
    }
  }
}

/** Passes summed: one side's figure for a pass of `--steps`. */
const sumOf = (ps: ReadonlyArray<Pass>): Pass => {
  const total = (f: (p: Pass) => number | undefined) => {
    let sum = 0
    for (const p of ps) {
      const x = f(p)
      if (x === undefined) return undefined
      sum += x
    }
    return sum
  }
  const helper = total((p) => p.helperCpuSeconds)
  const major = total((p) => p.majorCollections)
  return {
    items: total((p) => p.items) ?? 0,
    seconds: total((p) => p.seconds) ?? 0,
    cpuSeconds: total((p) => p.cpuSeconds) ?? 0,
    ...(helper === undefined ? {} : { helperCpuSeconds: helper }),
    ...(major === undefined ? {} : { majorCollections: major })
  }
}

/**
 * A pass of `--steps`: our method and its Go peer, each a warmed-up stepped child, Go's started first
 * (ours, timed right after its own warm-up, does not sit idle through Go's: a V8 process idle for
 * seconds ran its next passes up to 1.7x slower, the Bigtable sink most), alternating
 * (`Isolated.alternate`), each side's steps summed. Prints each side's steps (CPU per item, and wall time),
 * so a spell of slowness shows where it fell, and what of ours ran on helper threads (the JIT's compilers,
 * the collector's helpers), which is where a step still warming up shows.
 */
const inStep = async (
  ours: () => Isolated.Stepped,
  go: () => Isolated.Stepped,
  items: number
): Promise<{ readonly ours: Pass; readonly go: Pass }> => {
  const answers = await Isolated.alternate(go, ours, steps)
  const ourSteps = answers.second.map((answer) => passOf(items, answer as Isolated.Sample))
  const goSteps = answers.first.map((answer) => answer as Pass)
  const list = (ps: ReadonlyArray<Pass>, f: (p: Pass) => number | undefined) =>
    ps.map((p) => f(p)?.toFixed(0) ?? "-").join(" ")
  const wall = (p: Pass) => p.seconds * 1000
  console.log(`  steps, ns CPU per item: ours ${list(ourSteps, cpuNsPerItem)}; Go ${list(goSteps, cpuNsPerItem)}`)
  console.log(
    `  steps, of ours on helper threads: ${list(ourSteps, helperNsPerItem)}; wall ms: ours ${
      list(ourSteps, wall)
    }; Go ${list(goSteps, wall)}`
  )
  return { ours: sumOf(ourSteps), go: sumOf(goSteps) }
}

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>): Promise<A> => Effect.runPromise(Effect.scoped(effect))

// the generator is stateful: the distinct rows are made once, for our methods and the Go programs alike
const makeRow = rowGenerator(7)
const distinctRows = Array.from({ length: distinct }, (_, i) => makeRow(i))

/**
 * `--input chunks` (default): the rows reach the sink in chunks of 4,096 cut once, before the passes, as
 * the Go peers read a slice that exists before they run. `--input rechunk`: the form used before
 * 2026-12-05, `Stream.fromIterable(rows)` (one chunk of every row) re-cut by `Stream.rechunk(4096)`,
 * which pushes each row into a growing array: ~100 bytes of garbage a row, and arrays that outlive the
 * scavenges, charged to the sink's CPU.
 */
const inputForm = optionalArg("input") ?? "chunks"
const inputOf = <A>(rows: ReadonlyArray<A>): Stream.Stream<A> => {
  if (inputForm === "rechunk") return Stream.fromIterable(rows).pipe(Stream.rechunk(4096))
  const chunks: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < rows.length; i += 4096) chunks.push(rows.slice(i, i + 4096))
  return Stream.fromArrays(...chunks)
}

/** Runs `pass` and checks `fake` acknowledged at least `rowCount` rows meanwhile (`name` says whose). */
const acknowledging = async <A>(fake: FakeProcess.FakeProcess, name: string, pass: () => Promise<A>): Promise<A> => {
  const before = await fake.rowCount()
  const result = await pass()
  const acknowledged = (await fake.rowCount()) - before
  if (acknowledged < rowCount) throw new Error(`${name}: ${acknowledged} rows acknowledged`)
  return result
}

/** The BigQuery methods against one fake; `n` rows per call. */
const bigQueryMethods = async (fake: FakeProcess.FakeProcess, rowsFile: string) => {
  const serializer = await Effect.runPromise(RowSerializer.fromSchema(Row))
  const table = await Effect.runPromise(
    TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: "t" })
  )
  const distinctEncoded = distinctRows.map((r) => {
    const bytes = serializer.serialize(r, table)
    if (!(bytes instanceof Uint8Array)) throw new Error("unencodable benchmark row")
    return bytes
  })
  const clientOptions = { projectId: fake.projectId, emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint } }
  // over TLS: the client trusts the run's self-signed root (the internal `tlsRoots`, as the TLS tests do)
  const layer = tlsDir === undefined
    ? Layer.fresh(BigQueryClient.layer(clientOptions))
    : Layer.effect(
      BigQueryClient.BigQueryClient,
      Effect.flatMap(
        ClientInternal.settings(clientOptions),
        (settings) => ClientInternal.makeWith(settings, [fs.readFileSync(path.join(tlsDir ?? "", "cert.pem"))])
      ).pipe(Effect.map(BigQueryClient.BigQueryClient.of))
    )
  const writeMethod = WriteMethod.atLeastOnce({ maxInFlightRequests: depth, maxAppendRequestBytes: batchBytes })
  const bytesSerializer = {
    tableSchema: serializer.tableSchema,
    descriptor: () => RowSerializer.descriptorOf(serializer, table),
    serialize: (bytes: Uint8Array) => bytes
  }
  // one client and one writer per serializer for the process, built on first use (unless --sink-per-pass)
  const processScope = Scope.makeUnsafe()
  let clientContext: Promise<Context.Context<BigQueryClient.BigQueryClient>> | undefined
  const writerOf = <A>(rowSerializer: RowSerializer.RowSerializer<A>) => {
    let writer: Promise<Writer<A, unknown>> | undefined
    return () => (writer ??= (async () => {
      clientContext ??= Effect.runPromise(Layer.buildWithScope(layer, processScope))
      const context = await clientContext
      return Effect.runPromise(
        BigQuerySink.writer({ table, writeMethod, serializer: rowSerializer }).pipe(
          Effect.provideService(Scope.Scope, processScope),
          Effect.provide(context)
        )
      )
    })())
  }
  /** A pass of the sink over `input`: a run of its own, or the process's writer then a flush. */
  const sinkPass = <A>(rowSerializer: RowSerializer.RowSerializer<A>, input: Stream.Stream<A>): () => Promise<void> => {
    if (sinkPerPass) {
      return () =>
        run(
          input.pipe(
            Stream.run(BigQuerySink.make({ table, writeMethod, serializer: rowSerializer })),
            Effect.provide(layer),
            Effect.asVoid
          )
        )
    }
    const writer = writerOf(rowSerializer)
    return async () => writeAndFlush(await writer(), input)
  }
  const rowsOf = (n: number) => Array.from({ length: n }, (_, i) => distinctRows[i % distinct]!)
  const encodedOf = (n: number) => Array.from({ length: n }, (_, i) => distinctEncoded[i % distinct]!)
  /** The rows cut into appends by bytes, as the sink cuts them. */
  const batchesOf = (n: number) => {
    const batches: Array<Array<Uint8Array>> = [[]]
    let frame = 0
    for (const r of encodedOf(n)) {
      const f = AppendRequest.rowFrameLength(r.length)
      if (frame + f > batchBytes && batches.at(-1)!.length > 0) {
        batches.push([])
        frame = 0
      }
      batches.at(-1)!.push(r)
      frame += f
    }
    return batches
  }
  const goArgs = (mode: string, n: number, warmup: number, warmFor = 0) => [
    "--target",
    fake.grpcTarget,
    ...(tlsDir === undefined ? [] : ["--tls-ca", path.join(tlsDir, "cert.pem")]),
    "--project",
    fake.projectId,
    "--rows-file",
    rowsFile,
    "--mode",
    mode,
    "--rows",
    String(n),
    "--depth",
    String(depth),
    "--batch-bytes",
    String(batchBytes),
    "--warmup",
    String(warmup),
    "--warmup-seconds",
    String(warmFor),
    "--passes",
    "1"
  ]
  const go = (mode: string, n: number, warmup: number, warmFor = 0) =>
    runGo("bigquery", goArgs(mode, n, warmup, warmFor))
  return {
    sinkEncode: (n: number) => sinkPass(serializer, inputOf(rowsOf(n))),
    /** bigquery.bench.ts's `raw` baseline: the sink's batches, pre-encoded, written by hand on a grpc-js call. */
    raw: (n: number) => {
      const descriptor = encodeDescriptor(RowSerializer.descriptorOf(serializer, table))
      const batches = batchesOf(n)
      return () => Raw.grpcJs({ target: fake.grpcTarget, table, descriptor, batches, depth })
    },
    /** bigquery.bench.ts's `jsonWriter` baseline: the Node managedwriter's JSONWriter, appends of ~4,890 rows. */
    jsonWriter: (n: number) => {
      const rows = rowsOf(n)
      const rowsPerBatch = Math.ceil(n / batchesOf(n).length)
      return () =>
        JsonWriter.appendAll({
          projectId: fake.projectId,
          grpcTarget: fake.grpcTarget,
          tablePath: table.tablePath,
          rows,
          rowsPerBatch,
          depth
        })
    },
    sinkBytes: (n: number) => sinkPass(bytesSerializer, inputOf(encodedOf(n))),
    go,
    /** The Go peer as a stepped child (`--steps`), its rows counted by this fake after each pass. */
    goStepped: (mode: string): Isolated.Stepped => {
      const child = Isolated.steppedCommand(`bigquery.go.${mode}`, path.join(buildDir, "bigquery"), [
        ...goArgs(mode, rowCount, warmupPasses, warmupSeconds),
        "--stepped"
      ])
      return {
        ...child,
        pass: (arg) => acknowledging(fake, `bigquery.go.${mode}`, () => child.pass(arg))
      }
    },
    /** Closes the process's writers and client (their fibers and connections would keep it alive). */
    close: () => Effect.runPromise(Scope.close(processScope, Exit.void))
  }
}

/** Byte equality: every BigQuery method sends `verifyRows` rows to a recording fake; the digests must agree. */
const verify = async (rowsFile: string) => {
  const fake = await FakeProcess.start(flowWindow, { record: true, tlsDir })
  Pin.pinServer(fake.pid)
  let opened: Awaited<ReturnType<typeof bigQueryMethods>> | undefined
  try {
    const methods = (opened = await bigQueryMethods(fake, rowsFile))
    const digests: Record<string, FakeProcess.RowDigest> = {}
    await methods.sinkEncode(verifyRows)()
    digests["sink.encode"] = await fake.digest()
    await methods.go("encode", verifyRows, 0)
    digests["go.encode"] = await fake.digest()
    await methods.sinkBytes(verifyRows)()
    digests["sink.bytes"] = await fake.digest()
    await methods.go("bytes", verifyRows, 0)
    digests["go.bytes"] = await fake.digest()
    const reference = digests["sink.encode"]
    for (const [name, d] of Object.entries(digests)) {
      console.log(
        `verify ${name.padEnd(11)} ${d.rows} rows, set digest ${d.unordered.slice(0, 16)}, in order ${
          d.ordered.slice(0, 16)
        }`
      )
      if (d.rows !== verifyRows || d.unordered !== reference.unordered || d.first !== reference.first) {
        throw new Error(
          `${name} sent other rows than sink.encode (${JSON.stringify(d)} vs ${JSON.stringify(reference)})`
        )
      }
    }
    return {
      rows: verifyRows,
      digest: reference.unordered,
      sameOrder: Object.values(digests).every((d) => d.ordered === reference.ordered)
    }
  } finally {
    await opened?.close()
    fake.close()
  }
}

const bigQuery = async (rowsFile: string, samples: Record<string, Array<Pass>>) => {
  const fake = await FakeProcess.start(flowWindow, { tlsDir })
  Pin.pinServer(fake.pid)
  let opened: Awaited<ReturnType<typeof bigQueryMethods>> | undefined
  try {
    const methods = (opened = await bigQueryMethods(fake, rowsFile))
    const sinkEncode = methods.sinkEncode(rowCount)
    const sinkBytes = methods.sinkBytes(rowCount)
    const counted = async (name: string, pass: () => Promise<Pass>) => {
      // a pass of ours in a child process goes to the child's own fake, which the child checks
      if (!sharedProcess && !name.startsWith("bigquery.go.")) return pass()
      return acknowledging(fake, name, pass)
    }
    const goPass = (mode: string) => async () => (await methods.go(mode, rowCount, warmupPasses, warmupSeconds))[0]!
    const ours: Record<string, () => Promise<void>> = {
      "bigquery.sink.encode": sinkEncode,
      "bigquery.sink.bytes": sinkBytes,
      ...(baselines
        ? { "bigquery.node.raw": methods.raw(rowCount), "bigquery.node.jsonWriter": methods.jsonWriter(rowCount) }
        : {})
    }
    // each Go pass runs in a fresh process that warms itself up; so does each of ours unless
    // --shared-process, which warms them up here once
    if (sharedProcess) {
      // oxlint-disable-next-line no-await-in-loop
      for (const method of Object.values(ours)) await method()
    }
    const ourPass = (name: string, method: () => Promise<void>) => async (): Promise<Pass> => {
      if (sharedProcess) return timeHere(rowCount, method)
      return passOf(rowCount, Isolated.once(new URL(import.meta.url).pathname, name, forwarded()))
    }
    const single = (name: string, pass: () => Promise<Pass>): Unit => singleUnit(name, () => counted(name, pass))
    // with --steps, ours and Go's in step, each in a process of its own that serves the pair's passes
    const paired = (name: string, mode: string, method: () => Promise<void>): Array<Unit> =>
      steps > 0 && !sharedProcess
        ? [{
          names: [name, `bigquery.go.${mode}`],
          run: async () => {
            const both = await inStep(
              () => Isolated.stepped(new URL(import.meta.url).pathname, name, forwarded()),
              () => methods.goStepped(mode),
              rowCount
            )
            return [both.ours, both.go]
          }
        }]
        : [single(name, ourPass(name, method)), single(`bigquery.go.${mode}`, goPass(mode))]
    const order: Array<Unit> = [
      ...paired("bigquery.sink.encode", "encode", sinkEncode),
      ...paired("bigquery.sink.bytes", "bytes", sinkBytes)
    ]
    for (const name of ["bigquery.node.raw", "bigquery.node.jsonWriter"]) {
      const method = ours[name]
      if (method !== undefined) order.push(single(name, ourPass(name, method)))
    }
    await runUnits(order, samples, "row")
  } finally {
    await opened?.close()
    fake.close()
  }
}

/** One pass of the Bigtable sink into `tableId`, on a client built once (as a service holds one). */
const bigtableSink = async (client: BigtableClient.BigtableClient["Service"], tableId: string) => {
  const summary = await Effect.runPromise(bigtableSinkRun(client, tableId, { records, batch, concurrency }))
  if (summary.recordsWritten !== records) throw new Error(`sink wrote ${summary.recordsWritten} of ${records}`)
}

/**
 * The Bigtable sink as the Go peer runs: one writer for the process (built before the warm-up, on a
 * client built once), each pass into its own table (a `destinationResolver` reading the pass's table,
 * as Go opens a table handle per pass), each pass ended by a flush. `--sink-per-pass`: a
 * `Stream.run(BigtableSink.make(...))` per pass instead.
 */
const bigtableWriter = Effect.fnUntraced(function*(client: BigtableClient.BigtableClient["Service"]) {
  if (sinkPerPass) return (tableId: string) => bigtableSink(client, tableId)
  let current = BigtableTable.makeUnsafe({ projectId, instanceId, tableId: "unset" })
  const writer = yield* BigtableSink.writer({
    destinationResolver: () => current,
    serializer: bigtableRecord,
    writeMethod: bigtableWriteMethod({ records, batch, concurrency })
  }).pipe(Effect.provideService(BigtableClient.BigtableClient, client))
  return async (tableId: string) => {
    current = BigtableTable.makeUnsafe({ projectId, instanceId, tableId })
    const before = (await Effect.runPromise(writer.summary)).recordsWritten
    await writeAndFlush(writer, Stream.range(0, records - 1))
    const written = (await Effect.runPromise(writer.summary)).recordsWritten - before
    if (written !== records) throw new Error(`sink wrote ${written} of ${records}`)
  }
})

/** What a Bigtable child takes over: the workload. */
const bigtableForwarded = [
  ...(Pin.pinning ? ["--pin"] : []),
  ...forwardedArgs(["records", "batch", "concurrency", "bigtable-warmup-seconds", "bigtable-warmup-passes"]),
  ...(sinkPerPass ? ["--sink-per-pass"] : [])
]

/** Runs `pass` at least `minimum` times (and once), and again until `seconds` have passed. */
const warmUp = async (pass: () => Promise<void>, seconds: number, minimum: number): Promise<void> => {
  const start = performance.now()
  let ran = 0
  // oxlint-disable-next-line no-await-in-loop -- warm-up passes run one after another
  do await pass()
  while (++ran < minimum || performance.now() - start < seconds * 1000)
}

/**
 * A child's pass of one of our Bigtable methods (`--emulator`, `--table`, `--warmup-table` from the
 * parent): warm-up passes into the warm-up table (`warmUp`), then one timed pass, reported as
 * bench/isolated.ts reads it.
 */
const bigtableChildPass = async (name: string) => {
  const emulatorHost = textArg("emulator")
  const warm = textArg("warmup-table")
  // after the warm-up: the timed pass into `--table`, or one into each table the parent names (`--steps`)
  const timed = async (pass: (table: string) => Promise<void>) => {
    await warmUp(() => pass(warm), bigtableWarmupSeconds, bigtableWarmupPasses)
    const timedInto = async (table: string) => sampleOf(await timeHere(records, () => pass(table)))
    if (Isolated.isStepped()) await Isolated.serveSteps(timedInto)
    else Isolated.report(await timedInto(textArg("table")))
  }
  if (name === "bigtable.sink") {
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulatorHost } })
      const pass = yield* bigtableWriter(client)
      yield* Effect.promise(() => timed(pass))
    })))
  } else if (name === "bigtable.node.mutateRows") {
    const raw = new v2.BigtableClient(gapicOptions(emulatorHost))
    await timed(async (table) => {
      await runRaw(raw, tableName(table), { records, batch, concurrency, value: bigtableValue })
    })
    await raw.close()
  } else if (name === "bigtable.node.bare") {
    const bare = bareMutateAll(emulatorHost, { records, batch, concurrency, serializer: bigtableRecord })
    await timed((table) => bare.mutateAll(tableName(table)))
    bare.close()
  } else {
    throw new Error(`no Bigtable method ${name}`)
  }
}

const bigtable = (samples: Record<string, Array<Pass>>) =>
  Effect.gen(function*() {
    const manifest = yield* ensureInstalled
    const emulator = yield* startBigtable(manifest)
    Pin.pinServer(emulator.pid)
    const admin = new v2.BigtableTableAdminClient(gapicOptions(emulator.emulatorHost))
    yield* Effect.addFinalizer(() => Effect.promise(() => admin.close()))
    const fake = bigtableFakeMode
      ? yield* Effect.acquireRelease(
        Effect.promise(() => BigtableFake.start(path.join(buildDir, "bigtablefake"), emulator.emulatorHost)),
        (f) => Effect.sync(f.close)
      )
      : undefined
    if (fake !== undefined) Pin.pinServer(fake.pid)
    // where every client's data calls go; the tables' admin calls go to the emulator
    const dataHost = fake?.host ?? emulator.emulatorHost
    const client = yield* BigtableClient.make({ projectId, emulator: { grpc: dataHost } })
    let tables = 0
    const freshTable = async () => {
      const tableId = `t${tables++}`
      await createTable(admin, tableId, { cf: {} })
      return tableId
    }
    const dropTable = (tableId: string) => dropTableOf(admin, tableId)
    const sink = (tableId: string) => bigtableSink(client, tableId)
    // unless --shared-process, each pass of ours runs in a fresh process that warms itself up (as each
    // Go pass does, and as the BigQuery passes do: ADR 0025), each into fresh tables
    const isolatedPass = (name: string) => async (): Promise<Pass> => {
      const warm = await freshTable()
      const tableId = await freshTable()
      const sample = Isolated.once(new URL(import.meta.url).pathname, name, [
        ...bigtableForwarded,
        "--emulator",
        dataHost,
        "--table",
        tableId,
        "--warmup-table",
        warm
      ])
      await dropTable(warm)
      await dropTable(tableId)
      return passOf(records, sample)
    }
    const sinkPass = sharedProcess ?
      async () => {
        const tableId = await freshTable()
        const p = await timeHere(records, () => sink(tableId))
        await dropTable(tableId)
        return p
      } :
      isolatedPass("bigtable.sink")
    const goArgs = (warm: string) => [
      "--emulator",
      dataHost,
      "--project",
      projectId,
      "--instance",
      instanceId,
      "--warmup-table",
      warm,
      "--records",
      String(records),
      "--batch",
      String(batch),
      "--concurrency",
      String(concurrency),
      "--warmup-seconds",
      String(bigtableWarmupSeconds),
      "--warmup-passes",
      String(bigtableWarmupPasses)
    ]
    const goPass = async () => {
      const warm = await freshTable()
      const tableId = await freshTable()
      const [p] = await runGo("bigtable", [...goArgs(warm), "--table", tableId])
      await dropTable(warm)
      await dropTable(tableId)
      return p!
    }
    /** A stepped child whose every pass writes into a fresh table, dropped after it. */
    const freshTables = (child: Isolated.Stepped): Isolated.Stepped => ({
      ...child,
      pass: async () => {
        const tableId = await freshTable()
        try {
          return await child.pass(tableId)
        } finally {
          await dropTable(tableId)
        }
      }
    })
    /** `--steps`: the sink and Go's `ApplyBulk` in step, each warmed up into a table of its own. */
    const inStepPass = async (): Promise<ReadonlyArray<Pass>> => {
      const warmOurs = await freshTable()
      const warmGo = await freshTable()
      try {
        const both = await inStep(
          () =>
            freshTables(
              Isolated.stepped(new URL(import.meta.url).pathname, "bigtable.sink", [
                ...bigtableForwarded,
                "--emulator",
                dataHost,
                "--warmup-table",
                warmOurs
              ])
            ),
          () =>
            freshTables(
              Isolated.steppedCommand("bigtable.go.applyBulk", path.join(buildDir, "bigtable"), [
                ...goArgs(warmGo),
                "--stepped"
              ])
            ),
          records
        )
        return [both.ours, both.go]
      } finally {
        await dropTable(warmOurs)
        await dropTable(warmGo)
      }
    }
    if (sharedProcess) {
      // warm-up of the sink (JIT)
      const warm = yield* Effect.promise(freshTable)
      yield* Effect.promise(() => warmUp(() => sink(warm), bigtableWarmupSeconds, bigtableWarmupPasses))
      yield* Effect.promise(() => dropTable(warm))
    }
    const order: Array<Unit> = steps > 0 && !sharedProcess
      ? [{ names: ["bigtable.sink", "bigtable.go.applyBulk"], run: inStepPass }]
      : [singleUnit("bigtable.sink", sinkPass), singleUnit("bigtable.go.applyBulk", goPass)]
    if (baselines) {
      // bigtable.bench.ts's `raw` baseline: the official client's gapic mutateRows, the same batches and depth
      if (sharedProcess) {
        const raw = new v2.BigtableClient(gapicOptions(dataHost))
        yield* Effect.addFinalizer(() => Effect.promise(() => raw.close()))
        const rawPass = async () => {
          const tableId = await freshTable()
          const p = await timeHere(records, async () => {
            await runRaw(raw, tableName(tableId), { records, batch, concurrency, value: bigtableValue })
          })
          await dropTable(tableId)
          return p
        }
        yield* Effect.promise(rawPass)
        order.push(singleUnit("bigtable.node.mutateRows", rawPass))
      } else {
        order.push(singleUnit("bigtable.node.mutateRows", isolatedPass("bigtable.node.mutateRows")))
        order.push(singleUnit("bigtable.node.bare", isolatedPass("bigtable.node.bare")))
      }
    }
    if (fake !== undefined) {
      // the sink as the timed passes run it: one writer for the run (or a sink a pass, `--sink-per-pass`)
      const sinkAsTimed = yield* bigtableWriter(client)
      yield* Effect.promise(() =>
        verifyBigtable(
          fake,
          dataHost,
          {
            "bigtable.sink": sinkAsTimed,
            "bigtable.go.applyBulk": (tableId) => runGo("bigtable", [...goArgs(""), "--table", tableId]),
            ...(baselines
              ? {
                "bigtable.node.bare": (tableId) => {
                  const bare = bareMutateAll(dataHost, { records, batch, concurrency, serializer: bigtableRecord })
                  return bare.mutateAll(tableName(tableId)).finally(() => bare.close())
                }
              }
              : {})
          },
          freshTable,
          dropTable
        )
      )
    }
    yield* Effect.promise(() => runUnits(order, samples, "record"))
  })

/**
 * `--bigtable-fake`: each client writes `records` records once through the fake, and the fake's digest of
 * each must be the same: `records` entries, and the sum of the entries' hashes (their bytes: row key and
 * mutations) of the first client's.
 */
const verifyBigtable = async (
  fake: BigtableFake.BigtableFake,
  dataHost: string,
  methods: Record<string, (tableId: string) => Promise<unknown>>,
  freshTable: () => Promise<string>,
  dropTable: (tableId: string) => Promise<unknown>
) => {
  const raw = new v2.BigtableClient(gapicOptions(dataHost))
  const all: Record<string, (tableId: string) => Promise<unknown>> = {
    ...methods,
    "bigtable.node.mutateRows": (tableId) =>
      runRaw(raw, tableName(tableId), { records, batch, concurrency, value: bigtableValue })
  }
  const digestOf = async (method: (tableId: string) => Promise<unknown>) => {
    const tableId = await freshTable()
    await method(tableId)
    await dropTable(tableId)
    return fake.digest()
  }
  await fake.digest()
  let reference: BigtableFake.Digest | undefined
  try {
    for (const [name, method] of Object.entries(all)) {
      // oxlint-disable-next-line no-await-in-loop -- one client at a time: the fake's digest is per client
      const d = await digestOf(method)
      console.log(`verify ${name.padEnd(24)} ${d.entries} entries, digest ${d.sum}`)
      reference ??= d
      if (d.entries !== records || d.sum !== reference.sum) {
        throw new Error(`${name} sent other entries through the fake than the first (${JSON.stringify(d)})`)
      }
    }
  } finally {
    await raw.close()
  }
}

/** A child's pass: one of our BigQuery methods, warmed up, then timed once, against a fake of its own. */
const childPass = async (name: string) => {
  const fake = await FakeProcess.start(flowWindow, { tlsDir })
  Pin.pinServer(fake.pid)
  let opened: Awaited<ReturnType<typeof bigQueryMethods>> | undefined
  try {
    const methods = (opened = await bigQueryMethods(fake, ""))
    const byName: Record<string, (n: number) => () => Promise<void>> = {
      "bigquery.sink.encode": methods.sinkEncode,
      "bigquery.sink.bytes": methods.sinkBytes,
      "bigquery.node.raw": methods.raw,
      "bigquery.node.jsonWriter": methods.jsonWriter
    }
    const method = byName[name]?.(rowCount)
    if (method === undefined) throw new Error(`no method ${name}`)
    // each warm-up pass also asks the fake for its count, as the timed pass is preceded by: the answer
    // takes paths (another stream, other promises) that deoptimized Node's tick and stream code, which
    // the timed pass then paid to compile again
    await warmUp(
      async () => {
        await method()
        await fake.rowCount()
      },
      warmupSeconds,
      warmupPasses
    )
    const timed = async () => sampleOf(await acknowledging(fake, name, () => timeHere(rowCount, method)))
    if (Isolated.isStepped()) await Isolated.serveSteps(timed)
    else Isolated.report(await timed())
  } finally {
    await opened?.close()
    fake.close()
  }
}

const main = async () => {
  Pin.pinClient()
  if (childOf !== undefined) return childOf.startsWith("bigtable.") ? bigtableChildPass(childOf) : childPass(childOf)
  buildGo()
  fs.mkdirSync(buildDir, { recursive: true })
  if (tls && tlsDir === undefined) {
    // the run's self-signed root for `localhost`, written where the fakes and the Go program read it
    const made = await Effect.runPromise(Effect.scoped(selfSigned))
    tlsDir = path.join(buildDir, "tls")
    fs.mkdirSync(tlsDir, { recursive: true })
    fs.writeFileSync(path.join(tlsDir, "key.pem"), made.key)
    fs.writeFileSync(path.join(tlsDir, "cert.pem"), made.cert)
  }
  const rowsFile = path.join(buildDir, "rows.json")
  // the distinct rows for the Go program: the same values, TIMESTAMP as microseconds (what the encoder writes)
  fs.writeFileSync(
    rowsFile,
    JSON.stringify(distinctRows.map((r) => Object.assign({}, r, { ts: undefined, tsMicros: r.ts.getTime() * 1000 })))
  )
  const samples: Record<string, Array<Pass>> = {}
  let verified: Awaited<ReturnType<typeof verify>> | undefined
  if (only === undefined || only === "bigquery") {
    verified = await verify(rowsFile)
    await bigQuery(rowsFile, samples)
  }
  if ((only === undefined || only === "bigtable") && !tls) {
    await Effect.runPromise(Effect.scoped(bigtable(samples)))
  }

  const date = new Date().toISOString()
  const figure = (name: string) => {
    const xs = samples[name]
    if (xs === undefined) return undefined
    const helpers = xs.flatMap((p) => helperNsPerItem(p) ?? [])
    return {
      rate: median(xs.map((p) => p.items / p.seconds)),
      cpuNs: median(xs.map(cpuNsPerItem)),
      cores: median(xs.map((p) => p.cpuSeconds / p.seconds)),
      helperNs: helpers.length === xs.length ? median(helpers) : undefined
    }
  }
  /**
   * Go's CPU per item over ours, pass by pass (the two timed in the same pass, minutes apart at most),
   * then the median: the machine's drift from pass to pass moves both sides of a pair, so this ratio
   * spreads less between runs than the ratio of the two medians.
   */
  const pairedCpuRatio = (name: string, go: string): number | undefined => {
    const ours = samples[name]
    const theirs = samples[go]
    if (ours === undefined || theirs === undefined || ours.length !== theirs.length) return undefined
    return median(ours.map((p, i) => cpuNsPerItem(theirs[i] as Pass) / cpuNsPerItem(p)))
  }
  /** Each method and the Go peer it is compared with. */
  const peerOf: Record<string, string> = {
    "bigquery.sink.encode": "bigquery.go.encode",
    "bigquery.node.jsonWriter": "bigquery.go.encode",
    "bigquery.go.encode": "bigquery.go.encode",
    "bigquery.sink.bytes": "bigquery.go.bytes",
    "bigquery.node.raw": "bigquery.go.bytes",
    "bigquery.go.bytes": "bigquery.go.bytes",
    "bigtable.sink": "bigtable.go.applyBulk",
    "bigtable.node.mutateRows": "bigtable.go.applyBulk",
    "bigtable.node.bare": "bigtable.go.applyBulk",
    "bigtable.go.applyBulk": "bigtable.go.applyBulk"
  }
  const lines: Array<Record<string, unknown>> = []
  console.log(
    `\npeers: ${passes} passes, medians${
      steps > 0 && !sharedProcess ? `; a pass of ours and Go's: ${steps} steps each, in step` : ""
    }; node ${process.version}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(" ")}${
      Pin.pinning ? "; pinned (client CPU 0, server CPU 1)" : ""
    }${bigtableFakeMode ? "; Bigtable's MutateRows answered by the fake (--bigtable-fake)" : ""}`
  )
  console.log(
    "method                        items/s   CPU/item   cores busy   vs Go (items/s)   vs Go (CPU/item: Go's / ours)   paired"
  )
  for (const [name, go] of Object.entries(peerOf)) {
    const a = figure(name)
    const b = figure(go)
    if (a === undefined || b === undefined) continue
    const paired = pairedCpuRatio(name, go)
    console.log(
      `${name.padEnd(26)} ${Math.round(a.rate).toLocaleString("en").padStart(10)} ${
        a.cpuNs.toFixed(0).padStart(7)
      } ns ${a.cores.toFixed(2).padStart(10)} ${(a.rate / b.rate).toFixed(2).padStart(16)}x ${
        (b.cpuNs / a.cpuNs).toFixed(2).padStart(16)
      }x ${paired === undefined ? "" : `${paired.toFixed(2).padStart(15)}x`}`
    )
    lines.push({
      bench: "peers",
      metric: `${name}.perSecond.median`,
      value: Math.round(a.rate),
      unit: name.startsWith("bigtable") ? "records/s" : "rows/s",
      baseline: Math.round(b.rate),
      ratio: Number((a.rate / b.rate).toFixed(3)),
      peer: go,
      cpuNsPerItem: Math.round(a.cpuNs),
      ...(a.helperNs === undefined ? {} : { helperNsPerItem: Math.round(a.helperNs) }),
      cpuRatio: Number((b.cpuNs / a.cpuNs).toFixed(3)),
      ...(paired === undefined ? {} : { cpuRatioPaired: Number(paired.toFixed(3)) }),
      coresBusy: Number(a.cores.toFixed(2)),
      passes,
      // each pass of a method with a Go peer: this many timed passes of each, in step (0: one, in a fresh process)
      steps: ranInStep.has(name) ? steps : 0,
      tls,
      pinned: Pin.pinning,
      // ours on one writer per process (ADR 0048), or a writer per pass (`--sink-per-pass`)
      writer: sinkPerPass ? "perPass" : "perProcess",
      ...(name.startsWith("bigtable")
        ? {
          records,
          batch,
          concurrency,
          warmupSeconds: bigtableWarmupSeconds,
          warmupPasses: bigtableWarmupPasses,
          // the MutateRows server: the emulator, or the fake in front of it (`--bigtable-fake`)
          server: bigtableFakeMode ? "fake" : "emulator"
        }
        : { rows: rowCount, depth, batchBytes, distinct, flowWindow, verified, warmupSeconds, warmupPasses }),
      // children timed without a forced collection before the pass (bench/timing.ts)
      collected: sharedProcess,
      date,
      node: process.version
    })
  }
  const results = path.join(here, "results")
  fs.mkdirSync(results, { recursive: true })
  fs.appendFileSync(path.join(results, "peers.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`)
}

await main()
