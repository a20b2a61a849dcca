/**
 * What the Bigtable write paths leave to the old generation: bytes a record promoted by V8's scavenges,
 * a count that does not move with the machine's load the way CPU time does (ADR 0056). Records that
 * die young cost a scavenge nothing; records something old keeps alive are copied, promoted, and then
 * paid for again by a full collection. A process whose figure is ten times the others' is in the slow
 * mode the CPU figures of `bench:peers` only hint at.
 *
 * Each method runs in `--processes` fresh processes (default 6) against one cbtemulator. A process
 * runs `--passes` passes (default 12) of `--records` records (100,000: one SetCell each, batches of
 * `--batch` 100, `--concurrency` 10 calls in flight) into its own table and reports, over the passes of
 * its second half with no full collection in them, the median growth of the old generation a record
 * and the median CPU a record:
 *
 * - `bigtable.sink`: `BigtableSink.make` on one client (a fresh sink a pass);
 * - `bigtable.writer`: one `BigtableSink.writer` for the process, each pass written and flushed (as
 *   bench:peers runs the sink): what a writer that lives long keeps (ADR 0064);
 * - `bigtable.node.bare`: Node's floor of bench:peers (the library's call path on a bare session);
 * - `bigtable.node.http2`: `node:http2` alone, each request encoded by the library and sent by a plain
 *   loop: what Node itself promotes (its stream objects).
 *
 *   npm run bench:promotion [-- --processes 6 --passes 12 --records 100000 --only bigtable.sink]
 *
 * Prints a table (one line a process: its median bytes and CPU a record) and the share of processes
 * above `--slow-bytes` (default 200) a record. Not part of `npm test` or CI.
 */
import { Effect, Stream } from "effect"
import * as http2 from "node:http2"
import * as v8 from "node:v8"
import { BigtableClient, BigtableSink, TableDestination } from "../src/Bigtable/index.ts"
import { encodeRequest } from "../src/internal/bigtable/transport/mutationProto.ts"
import { prefixLength, writePrefix } from "../src/internal/wire/http2/messageFrame.ts"
import { numberArg, optionalArg, textArg } from "./args.ts"
import { bareMutateAll, inBatches } from "./bigtableHttp2.ts"
import { createTable, emulatorWithGapic, instanceId, projectId, tableName } from "./bigtableSetup.ts"
import * as Isolated from "./isolated.ts"
import { median, timePass } from "./timing.ts"
import { bigtableRecord, bigtableSinkRun, bigtableWriteMethod, writeAndFlush } from "./workloads.ts"

process.env["METADATA_SERVER_DETECTION"] ??= "none"

const processes = numberArg("processes", 6)
const passes = numberArg("passes", 12)
const records = numberArg("records", 100_000)
const batch = numberArg("batch", 100)
const concurrency = numberArg("concurrency", 10)
const slowBytes = numberArg("slow-bytes", 200)
const methods = ["bigtable.sink", "bigtable.writer", "bigtable.node.bare", "bigtable.node.http2"] as const
type MethodName = (typeof methods)[number]

/** The old generation's bytes in use (old and large-object spaces). */
const oldBytes = (): number =>
  v8.getHeapSpaceStatistics()
    .filter((s) => s.space_name === "old_space" || s.space_name === "large_object_space")
    .reduce((sum, s) => sum + s.space_used_size, 0)

/** `node:http2` alone: each batch encoded by the library, framed, and sent as one MutateRows call. */
const http2Loop = (authority: string) => {
  const session = http2.connect(`http://${authority}`)
  session.on("error", () => {})
  const call = (framed: Buffer) =>
    new Promise<void>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/google.bigtable.v2.Bigtable/MutateRows",
        "content-type": "application/grpc",
        te: "trailers"
      })
      stream.on("data", () => {})
      stream.on("error", reject)
      stream.on("close", () => resolve())
      stream.end(framed)
    })
  const mutateAll = (table: string) =>
    inBatches({ records, batch, concurrency, serializer: bigtableRecord }, (entries, sizes) => {
      const framed = encodeRequest(table, undefined, entries, sizes, prefixLength)
      writePrefix(framed, 0, framed.length - prefixLength)
      return call(framed)
    })
  return { mutateAll, close: () => session.close() }
}

/** One pass of `name` into `tableId`, and what closes it. */
const methodOf = (name: MethodName, emulatorHost: string, tableId: string) =>
  Effect.gen(function*() {
    if (name === "bigtable.sink") {
      const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulatorHost } })
      return {
        pass: () => Effect.runPromise(bigtableSinkRun(client, tableId, { records, batch, concurrency })),
        close: () => {}
      }
    }
    if (name === "bigtable.writer") {
      const client = yield* BigtableClient.make({ projectId, emulator: { grpc: emulatorHost } })
      const writer = yield* BigtableSink.writer({
        table: TableDestination.makeUnsafe({ projectId, instanceId, tableId }),
        serializer: bigtableRecord,
        writeMethod: bigtableWriteMethod({ records, batch, concurrency })
      }).pipe(Effect.provideService(BigtableClient.BigtableClient, client))
      const pass = () => writeAndFlush(writer, Stream.range(0, records - 1))
      return { pass, close: () => {} }
    }
    const made = name === "bigtable.node.bare"
      ? bareMutateAll(emulatorHost, { records, batch, concurrency, serializer: bigtableRecord })
      : http2Loop(emulatorHost)
    return { pass: () => made.mutateAll(tableName(tableId)), close: made.close }
  })

/** A child's passes of `name` into `tableId`: its median old-generation growth and CPU a record. */
const childPasses = (name: MethodName, emulatorHost: string, tableId: string) =>
  Effect.gen(function*() {
    const method = yield* methodOf(name, emulatorHost, tableId)
    const promoted: Array<number> = []
    const cpu: Array<number> = []
    const rate: Array<number> = []
    for (let p = 0; p < passes; p++) {
      const before = oldBytes()
      // oxlint-disable-next-line no-await-in-loop -- passes run one after another
      const timed = yield* Effect.promise(() => timePass(method.pass, { collect: false }))
      // the second half, and only passes no full collection shrank
      if (p >= passes / 2 && timed.majorCollections === 0) {
        promoted.push((oldBytes() - before) / records)
        cpu.push(timed.cpuSeconds * 1e9 / records)
        rate.push(records / timed.seconds)
      }
    }
    method.close()
    if (promoted.length === 0) throw new Error(`${name}: every measured pass had a full collection`)
    Isolated.report({
      rowsPerSecond: median(rate),
      cpuNsPerRow: median(cpu),
      extra: { promotedBytesPerRecord: [median(promoted)] }
    })
  })

/** Every method in `--processes` fresh processes, alternating, each into a fresh table. */
const parent = Effect.gen(function*() {
  const only = optionalArg("only")
  const chosen = methods.filter((m) => only === undefined || m === only)
  if (chosen.length === 0) throw new Error(`--only: no method ${only ?? ""} (one of ${methods.join(", ")})`)
  const { admin, emulator } = yield* emulatorWithGapic
  const results = new Map<MethodName, Array<number>>()
  let tables = 0
  for (let i = 0; i < processes; i++) {
    for (const name of chosen) {
      const tableId = `p${tables++}`
      yield* Effect.promise(() => createTable(admin, tableId, { cf: {} }))
      const sample = Isolated.once(new URL(import.meta.url).pathname, name, [
        "--emulator",
        emulator.emulatorHost,
        "--table",
        tableId,
        ...["--passes", passes, "--records", records, "--batch", batch, "--concurrency", concurrency].map(String)
      ])
      const bytes = sample.extra?.["promotedBytesPerRecord"]?.[0] ?? Number.NaN
      const list = results.get(name) ?? []
      list.push(bytes)
      results.set(name, list)
      console.log(
        `${name.padEnd(22)} process ${i + 1}: ${bytes.toFixed(0).padStart(5)} B promoted a record, ${
          sample.cpuNsPerRow.toFixed(0)
        } ns CPU a record`
      )
    }
  }
  console.log(`\n${records} records a pass, median of the second half of ${passes} passes in each process`)
  for (const [name, list] of results) {
    const slow = list.filter((bytes) => bytes > slowBytes).length
    console.log(
      `${name.padEnd(22)} promoted ${list.map((bytes) => bytes.toFixed(0)).join(", ")} B a record; ` +
        `above ${slowBytes}: ${slow} of ${list.length}`
    )
  }
})

const child = Isolated.childMethod()
const main = child === undefined
  ? parent
  : childPasses(child as MethodName, textArg("emulator"), textArg("table"))
Effect.runPromise(Effect.scoped(main)).then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
