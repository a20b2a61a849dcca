/**
 * The Bigtable sink against cbtemulator, through the public API only. The official client reads the
 * results back. Known emulator deviations are pinned here.
 */
import { assert, layer } from "@effect/vitest"
import type { Bigtable } from "@google-cloud/bigtable"
import { Clock, Effect, Fiber, Layer, Stream } from "effect"
import {
  BigtableClient,
  type BigtableFailure,
  BigtableSink,
  GcRule,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../src/Bigtable/index.ts"
import { FailureHandler } from "../../../src/Sink.ts"
import { BigtableEmulator } from "../../support/BigtableEmulator.ts"
import * as Clients from "../../support/clients.ts"

const projectId = "test-project"
const instanceId = "sink"

const Live = Layer.unwrap(
  Effect.gen(function*() {
    const emulator = yield* BigtableEmulator
    return BigtableClient.layer({ projectId, emulator: { grpc: emulator.emulatorHost } })
  })
).pipe(Layer.provideMerge(BigtableEmulator.layer))

const destination = (tableId: string) => TableDestination.makeUnsafe({ projectId, instanceId, tableId })

const officialClient = Effect.gen(function*() {
  const emulator = yield* BigtableEmulator
  return yield* Clients.bigtable(emulator, { projectId })
})

const createTable = (client: Bigtable, tableId: string, families: ReadonlyArray<string>) =>
  Effect.tryPromise(() => client.instance(instanceId).createTable(tableId, { families: [...families] }))

type Cells = Record<string, Record<string, Array<{ value: Buffer; timestamp: string }>>>

const readRows = (client: Bigtable, tableId: string) =>
  Effect.tryPromise(() => client.instance(instanceId).table(tableId).getRows({ decode: false })).pipe(
    Effect.map(([rows]) => rows.map((row) => ({ key: String(row.id), data: row.data as Cells })))
  )

const countRows = (client: Bigtable, tableId: string) =>
  Effect.callback<number>((resume) => {
    let n = 0
    const stream = client.instance(instanceId).table(tableId).createReadStream({ decode: false })
    stream.on("data", () => void n++)
    stream.on("error", (e) => resume(Effect.die(e)))
    stream.on("end", () => resume(Effect.succeed(n)))
  })

const cell = (key: string, value: string, timestampMicros: number | undefined = 1_000_000) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "v", value, timestampMicros }))

// The official client's typings say `{} | string[]`; at runtime it takes `{ name, rule }` objects.
const familiesWithRule: {} = [{ name: "cf", rule: { versions: 3 } }]

const fastRecovery = { recovery: { initialBackoff: "20 millis", maxBackoff: "200 millis", maxAttempts: 10 } } as const

const collect = () => {
  const failures: Array<BigtableFailure.FailedMutation> = []
  const handler = FailureHandler.make({
    handle: (f: BigtableFailure.FailedMutation) => Effect.sync(() => void failures.push(f))
  })
  return { failures, handler }
}
// An entry without mutations: cbtemulator rejects a request whose entries carry no mutation at all
// with INVALID_ARGUMENT ("No mutations provided"), the status Bigtable gives a malformed entry.
const entryOrEmpty = (k: string) => (k.startsWith("empty") ? RowMutationEntry.make(k, []) : cell(k, k))

// No TestClock: the writer's batch timer and backoffs run on the real clock.
layer(Live, { timeout: "120 seconds", excludeTestServices: true })("BigtableSink on cbtemulator", (it) => {
  it.effect("streams 100,000 records and every one is read back", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("bulk")
      yield* createTable(client, tableId, ["cf"])
      const n = 100_000
      const summary = yield* Stream.range(0, n - 1).pipe(
        Stream.run(BigtableSink.make({
          table: destination(tableId),
          serializer: (i: number) => cell(`row${String(i).padStart(6, "0")}`, String(i)),
          writeMethod: WriteMethod.atLeastOnce({ batchElementCount: 1000 })
        }))
      )
      assert.strictEqual(summary.recordsWritten, n)
      assert.strictEqual(summary.recordsFailed, 0)
      assert.strictEqual(yield* countRows(client, tableId), n)
    }), { timeout: 120_000 })

  it.effect(
    "a progress display keeps ticking while 100,000 records stream (the microtask owner starves no timer)",
    () =>
      Effect.gen(function*() {
        const client = yield* officialClient
        const tableId = Clients.uniqueId("ticks")
        yield* createTable(client, tableId, ["cf"])
        const n = 100_000
        const writer = yield* BigtableSink.writer({
          table: destination(tableId),
          serializer: (i: number) => cell(`row${String(i).padStart(6, "0")}`, String(i))
          // default options: 100 entries a request, the most owner work per record
        })
        // The display: wakes every 250 ms and reads the summary, as the demo's does.
        const ticks: Array<{ readonly at: number; readonly written: number }> = []
        const display = yield* Effect.forkChild(Effect.forever(
          Effect.gen(function*() {
            yield* Effect.sleep("250 millis")
            const summary = yield* writer.summary
            ticks.push({ at: yield* Clock.currentTimeMillis, written: summary.recordsWritten })
          })
        ))
        const start = yield* Clock.currentTimeMillis
        yield* Stream.range(0, n - 1).pipe(Stream.runForEachArray((chunk) => writer.write(chunk)))
        yield* writer.flush
        const end = yield* Clock.currentTimeMillis
        yield* Fiber.interrupt(display)
        const at = [start, ...ticks.filter((t) => t.at <= end).map((t) => t.at), end]
        const gaps = at.slice(1).map((t, i) => t - (at[i] ?? t))
        const maxGap = Math.max(...gaps)
        // Measured on 2 shared cores: ~1-3 s of streaming, the longest gap under 300 ms (a tick is
        // 250 ms). A starved timer would leave one gap as long as the whole run; a loaded machine (the
        // emulator, the other tests of the file) may stretch a gap past a second on a longer run, so the
        // bound grows with the run, and stays well under the whole of it.
        const bound = Math.max(1000, (end - start) / 3)
        assert.isBelow(maxGap, bound, `longest gap between display ticks ${maxGap} ms over ${end - start} ms`)
        assert.isTrue(
          ticks.some((t) => t.written > 0 && t.written < n),
          "the display saw progress between the first and the last record"
        )
        assert.strictEqual((yield* writer.summary).recordsWritten, n)
        console.log(`display: ${ticks.length} ticks over ${end - start} ms, longest gap ${maxGap} ms`)
      }).pipe(Effect.scoped),
    { timeout: 120_000 }
  )

  it.effect("routes records across four tables with a resolver", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const ids = [0, 1, 2, 3].map((i) => Clients.uniqueId(`dyn${i}`))
      yield* Effect.forEach(ids, (id) => createTable(client, id, ["cf"]), { discard: true })
      const summary = yield* Stream.range(0, 399).pipe(
        Stream.run(BigtableSink.make({
          destinationResolver: (i: number) => destination(ids[i % 4] ?? ""),
          serializer: (i: number) => cell(`k${i}`, String(i))
        }))
      )
      assert.strictEqual(summary.recordsWritten, 400)
      for (const [index, id] of ids.entries()) {
        const rows = yield* readRows(client, id)
        assert.strictEqual(rows.length, 100)
        assert.isTrue(rows.every((row) => Number(row.key.slice(1)) % 4 === index))
        assert.strictEqual(summary.destinations[`${projectId}.${instanceId}.${id}`]?.recordsWritten, 100)
      }
    }))

  it.effect("writes nothing for records the serializer skips", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("skip")
      yield* createTable(client, tableId, ["cf"])
      const summary = yield* Stream.range(0, 19).pipe(
        Stream.run(BigtableSink.make({
          table: destination(tableId),
          serializer: (i: number) => (i % 2 === 0 ? null : cell(`k${i}`, "v"))
        }))
      )
      assert.strictEqual(summary.recordsSkipped, 10)
      assert.strictEqual(summary.recordsWritten, 10)
      assert.deepStrictEqual((yield* readRows(client, tableId)).map((r) => r.key).toSorted(), [
        "k1",
        "k11",
        "k13",
        "k15",
        "k17",
        "k19",
        "k3",
        "k5",
        "k7",
        "k9"
      ])
    }))

  it.effect("routes a record the emulator rejects to the handler while the other records land", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("reject")
      yield* createTable(client, tableId, ["cf"])
      const { failures, handler } = collect()
      const summary = yield* Stream.make("a", "b", "empty", "c").pipe(
        Stream.run(BigtableSink.make({
          table: destination(tableId),
          serializer: entryOrEmpty,
          failureHandler: handler,
          writeMethod: WriteMethod.atLeastOnce({ batchElementCount: 1 })
        }))
      )
      assert.strictEqual(summary.recordsWritten, 3)
      assert.strictEqual(summary.recordsFailed, 1)
      assert.include(failures[0]?.message ?? "", "No mutations")
      assert.strictEqual(failures[0]?.destination, `${projectId}.${instanceId}.${tableId}`)
      assert.deepStrictEqual((yield* readRows(client, tableId)).map((r) => r.key).toSorted(), ["a", "b", "c"])
    }))

  it.effect("isolation pass on the emulator: a rejected batch is re-sent entry by entry and each rejection routed", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("isolate")
      yield* createTable(client, tableId, ["cf"])
      const { failures, handler } = collect()
      const summary = yield* Stream.make("empty1", "empty2", "empty3").pipe(
        Stream.run(
          BigtableSink.make({ table: destination(tableId), serializer: entryOrEmpty, failureHandler: handler })
        )
      )
      assert.strictEqual(summary.recordsFailed, 3)
      assert.deepStrictEqual(
        failures.map((f) => new TextDecoder().decode(f.rowKey)).toSorted(),
        ["empty1", "empty2", "empty3"]
      )
    }))

  it.effect("emulator deviation: an entry without mutations is accepted beside other entries (Bigtable rejects it)", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("lenient")
      yield* createTable(client, tableId, ["cf"])
      const { failures, handler } = collect()
      const summary = yield* Stream.make("a", "empty", "c").pipe(
        Stream.run(
          BigtableSink.make({ table: destination(tableId), serializer: entryOrEmpty, failureHandler: handler })
        )
      )
      assert.strictEqual(summary.recordsWritten, 3)
      assert.strictEqual(failures.length, 0)
    }))

  it.effect("emulator deviation: a malformed cell is INTERNAL on cbtemulator (INVALID_ARGUMENT on Bigtable), so it fails the write", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("deviation")
      yield* createTable(client, tableId, ["cf"])
      const failures: Array<BigtableFailure.FailedMutation> = []
      // A timestamp that is not a multiple of 1000: Bigtable answers INVALID_ARGUMENT (routed to the
      // handler); cbtemulator answers INTERNAL "invalid timestamp", which the classification treats as fatal.
      const error = yield* Stream.make("ok", "bad").pipe(
        Stream.run(BigtableSink.make({
          table: destination(tableId),
          serializer: (k: string) => cell(k, k, k === "bad" ? 1_001 : 2_000),
          failureHandler: FailureHandler.make({
            handle: (f: BigtableFailure.FailedMutation) => Effect.sync(() => void failures.push(f))
          })
        })),
        Effect.flip
      )
      assert.strictEqual(error._tag, "BigtableError")
      if (error._tag === "BigtableError" && error.reason._tag === "BigtableRpcFailed") {
        assert.strictEqual(error.reason.status, "INTERNAL")
        assert.include(error.reason.description, "invalid timestamp")
      } else assert.fail(`unexpected ${String(error)}`)
      assert.strictEqual(failures.length, 0)
    }))

  it.effect("emulator deviation: an unknown column family is INTERNAL on cbtemulator (NOT_FOUND on Bigtable)", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("nofamily")
      yield* createTable(client, tableId, ["cf"])
      const error = yield* Stream.make("a").pipe(
        Stream.run(BigtableSink.make({
          table: destination(tableId),
          serializer: (k: string) =>
            RowMutationEntry.make(k, Mutation.setCell({ family: "ghost", qualifier: "q", value: "v" }))
        })),
        Effect.flip
      )
      assert.include(error.message, "INTERNAL")
      assert.include(error.message, "unknown family")
    }))

  it.effect("CREATE_NEVER fails fast on a missing table, naming the table and the disposition", () =>
    Effect.gen(function*() {
      const tableId = Clients.uniqueId("never")
      const error = yield* Stream.make("a").pipe(
        Stream.run(BigtableSink.make({ table: destination(tableId), serializer: (k: string) => cell(k, k) })),
        Effect.flip
      )
      assert.strictEqual(error._tag, "BigtableError")
      assert.include(error.message, `${projectId}.${instanceId}.${tableId}`)
      assert.include(error.message, "CREATE_NEVER")
    }))

  it.effect("CREATE_IF_NEEDED creates every missing table of a resolver with the declared families", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const ids = [0, 1, 2].map((i) => Clients.uniqueId(`create${i}`))
      const summary = yield* Stream.range(0, 89).pipe(
        Stream.run(BigtableSink.make({
          destinationResolver: (i: number) => destination(ids[i % 3] ?? ""),
          // Server timestamps: the 30-day GC rule would drop cells stamped in 1970.
          serializer: (i: number) => cell(`k${i}`, String(i), undefined),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: {
            columnFamilies: { cf: { gcRule: GcRule.union(GcRule.maxVersions(1), GcRule.maxAge("30 days")) }, aux: {} }
          },
          writeMethod: WriteMethod.atLeastOnce(fastRecovery)
        }))
      )
      assert.strictEqual(summary.recordsWritten, 90)
      for (const id of ids) {
        assert.strictEqual((yield* readRows(client, id)).length, 30)
        const [metadata] = yield* Effect.tryPromise(() =>
          client.instance(instanceId).table(id).getMetadata({ view: "schema" })
        )
        assert.deepStrictEqual(Object.keys(metadata.columnFamilies ?? {}).toSorted(), ["aux", "cf"])
      }
    }))

  it.effect("CREATE_IF_NEEDED adds a missing declared family to an existing table, leaving existing rules alone; AddToCell sums", () =>
    Effect.gen(function*() {
      const client = yield* officialClient
      const tableId = Clients.uniqueId("addfamily")
      yield* Effect.tryPromise(() => client.instance(instanceId).createTable(tableId, { families: familiesWithRule }))
      const summary = yield* Stream.make(5, 9, 3).pipe(
        Stream.run(BigtableSink.make({
          table: destination(tableId),
          serializer: (n: number) =>
            RowMutationEntry.make("counter", [
              Mutation.addToCell({ family: "views", qualifier: "total", input: n }),
              Mutation.setCell({ family: "cf", qualifier: "last", value: BigInt(n), timestampMicros: n * 1000 })
            ]),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: {
            columnFamilies: { cf: { gcRule: GcRule.maxVersions(1) }, views: { type: "INT64_SUM" } }
          },
          writeMethod: WriteMethod.atLeastOnce(fastRecovery)
        }))
      )
      assert.strictEqual(summary.recordsWritten, 3)
      const [row] = yield* readRows(client, tableId)
      // The official client hands aggregate cells back as numbers.
      const total: unknown = row?.data["views"]?.["total"]?.[0]?.value
      assert.strictEqual(total, 17)
      const [metadata] = yield* Effect.tryPromise(() =>
        client.instance(instanceId).table(tableId).getMetadata({ view: "schema" })
      )
      // The existing family kept its rule (3 versions), not the declared one.
      assert.strictEqual(metadata.columnFamilies?.["cf"]?.gcRule?.maxNumVersions, 3)
      assert.isDefined(metadata.columnFamilies?.["views"])
    }))
})
