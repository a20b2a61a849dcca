/**
 * bqemulator's Storage Write threads (issue 23), on a private emulator (this test holds its threads).
 *
 * bqemulator 1.4.0 serves its synchronous gRPC handlers on asyncio's default executor,
 * `min(32, cpus + 4)` threads: 6 on 2 cores. An open AppendRows call holds one of them between its
 * requests, so with 6 open a 7th connection gets no answer; and a call whose client went away
 * without its connection closing holds its thread for good. Crash proofs sharing one emulator (their
 * children, their zombies, other suites' writers) hung that way. `scripts/emulators/bqemulator_launch.py`
 * gives the server a pool of its own (`STORAGE_WRITE_WORKERS`, 64); this test pins it: more
 * AppendRows calls than the default pool has threads, each from its own child process, are all
 * answered while open together; the children are SIGKILLed, and a fresh append through the public
 * sink still completes within a bound.
 */
import { assert, layer } from "@effect/vitest"
import { Data, Effect, Layer, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import { fileURLToPath } from "node:url"
import { BigQuerySink, RowSerializer, TableDestination, TableSchema } from "../../../src/BigQuery/index.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { clientLayer } from "./emulatorClient.ts"

const child = fileURLToPath(new URL("../../support/appendRowsHoldChild.ts", import.meta.url))

/** The pool the launcher configures (`STORAGE_WRITE_WORKERS` in bqemulator_launch.py). */
const configuredWorkers = 64

/** Python's default `ThreadPoolExecutor` size, what grpc.aio runs synchronous handlers on without a pool. */
const defaultWorkers = Math.min(32, os.availableParallelism() + 4)

class ChildFailed extends Data.TaggedError("ChildFailed")<{ readonly message: string }> {}

/**
 * A child holding one AppendRows call open on `table`, once the server answered its request (its
 * handler holds a thread from then on); SIGKILLed when the scope closes, which waits for its exit.
 */
const holding = (target: string, table: string) =>
  Effect.acquireRelease(
    Effect.callback<ChildProcess, ChildFailed>((resume) => {
      const proc = spawn(process.execPath, [child, target, table], { stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      proc.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8")
        if (out.includes("open\n")) resume(Effect.succeed(proc))
      })
      proc.stderr.on("data", (chunk: Buffer) => void (out += chunk.toString("utf8")))
      proc.once("error", (error) => resume(Effect.fail(new ChildFailed({ message: String(error) }))))
      proc.once("exit", () => resume(Effect.fail(new ChildFailed({ message: `the child ended first: ${out}` }))))
      return Effect.sync(() => void proc.kill("SIGKILL"))
    }).pipe(
      Effect.timeoutOrElse({
        duration: "20 seconds",
        orElse: () =>
          Effect.fail(new ChildFailed({ message: "an AppendRows call was not answered within 20 s (threads held?)" }))
      })
    ),
    (proc) =>
      Effect.callback<void>((resume) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resume(Effect.void)
        proc.once("exit", () => resume(Effect.void))
        proc.kill("SIGKILL")
      })
  )

const schema: TableSchema.TableSchema = {
  fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })]
}

const testLayer = Layer.provideMerge(clientLayer, BigQueryEmulator.layerIsolated)

layer(testLayer, { timeout: "180 seconds", excludeTestServices: true })("bqemulator Storage Write threads", (it) => {
  // the layer excludes the test services: the bounds below are on the live clock
  it.effect(
    `${
      defaultWorkers + 2
    } AppendRows calls open at once are answered (default pool: ${defaultWorkers}), and appends go on after their clients are SIGKILLed`,
    () =>
      Effect.gen(function*() {
        const emulator = yield* BigQueryEmulator
        const bq = yield* Clients.bigQuery(emulator)
        const datasetId = Clients.uniqueId("threads")
        yield* Effect.tryPromise(() => bq.createDataset(datasetId))
        yield* Effect.tryPromise(() =>
          bq.dataset(datasetId).createTable("t", { schema: [{ name: "id", type: "INTEGER", mode: "REQUIRED" }] })
        )
        const tablePath = `projects/${emulator.projectId}/datasets/${datasetId}/tables/t`
        const target = `${emulator.grpcHost}:${emulator.grpcPort}`
        // every call open at once, each from its own process; then every process SIGKILLed
        yield* Effect.scoped(Effect.forEach(
          Array.from({ length: defaultWorkers + 2 }, (_, i) => i),
          () => holding(target, tablePath),
          { concurrency: "unbounded", discard: true }
        ))
        const table = yield* TableDestination.make({ projectId: emulator.projectId, datasetId, tableId: "t" })
        const summary = yield* Stream.run(
          Stream.make({ id: 1n }, { id: 2n }),
          BigQuerySink.make({ table, serializer: yield* RowSerializer.fromJson(schema) })
        ).pipe(
          Effect.timeoutOrElse({
            duration: "30 seconds",
            orElse: () => Effect.fail(new ChildFailed({ message: "the append after the kills hung for 30 s" }))
          })
        )
        assert.strictEqual(summary.recordsWritten, 2)
        const log = fs.readFileSync(emulator.logFile, "utf8")
        assert.include(log, `Storage Write thread pool: ${configuredWorkers} workers`)
      })
  )
})
