/**
 * Table repairs (`CREATE_IF_NEEDED`) on the writer core's repair engine, through the public sink and
 * the fake Bigtable: many entries waiting for one repair, and what the waits do to their budgets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } from "../../src/Bigtable/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import { onTestClock } from "../support/waiting.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const tableName = table.tableName

const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))

const keys = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`)
const fast = { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 10 } as const

describe("BigtableSink repairs", () => {
  it.effect(
    "more entries waiting for a table's creation than the owner's command queue holds all go again",
    () =>
      Effect.gen(function*() {
        const tables = new Map<string, Set<string>>()
        const fake = makeFake({ tables })
        // 2,000 entries in flight at once, each answered NOT_FOUND: 2,000 requests wait for one repair
        const summary = yield* Stream.fromIterable(keys(2000)).pipe(
          Stream.run(BigtableSink.make({
            table,
            serializer: (k: string) => entry(k),
            createDisposition: "CREATE_IF_NEEDED",
            tableCreateOptions: { columnFamilies: { cf: {} } },
            writeMethod: WriteMethod.atLeastOnce({ maxInFlightEntries: 4000, recovery: fast })
          })),
          Effect.provide(fake.layer),
          // the defect was a hang: a bounded wait turns it into a failure
          Effect.timeout("20 seconds")
        )
        assert.strictEqual(summary.recordsWritten, 2000)
        assert.strictEqual(fake.applied.size, 2000)
        assert.strictEqual(fake.admin.filter((a) => a.startsWith("CreateTable")).length, 1)
        assert.isTrue(tables.has(tableName))
      }),
    30_000
  )

  it.live("entries held through a table's creation go again in requests within batchElementCount", () =>
    Effect.gen(function*() {
      const tables = new Map<string, Set<string>>()
      // the creation takes a moment: the batches cut meanwhile are held for the table
      const fake = makeFake({ tables, createTableGate: () => new Promise((resolve) => setTimeout(resolve, 200)) })
      // the first entries find the table missing; the rest arrive while it is being created
      const [first, rest] = [keys(300).slice(0, 7), keys(300).slice(7)]
      const source = Stream.concat(
        Stream.fromIterable(first),
        Stream.fromIterable(rest).pipe(Stream.onStart(Effect.sleep("50 millis")))
      )
      const summary = yield* source.pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { cf: {} } },
          writeMethod: WriteMethod.atLeastOnce({
            maxInFlightEntries: 1000,
            batchElementCount: 7,
            batchByteSize: 400,
            recovery: fast
          })
        })),
        Effect.provide(fake.layer)
      )
      assert.strictEqual(summary.recordsWritten, 300)
      // the held entries went again after the creation: as the requests a batch would have been
      const after = fake.requests.filter((r) => r.method.endsWith("MutateRows")).slice(1)
      assert.isAbove(after.length, 1)
      for (const r of after) assert.isAtMost(r.rowKeys.length, 7)
    }))

  it.effect("an entry that waited through its table's creation keeps its whole retry budget for transient statuses", () =>
    Effect.gen(function*() {
      const tables = new Map<string, Set<string>>()
      // once the table exists, each entry is answered UNAVAILABLE twice before it is applied: a retry
      // budget of three attempts covers that, whatever the entry went through before
      const transient = new Map<string, number>()
      const fake = makeFake({
        tables,
        decide: ({ rowKey }) => {
          const seen = transient.get(rowKey) ?? 0
          transient.set(rowKey, seen + 1)
          return seen < 2 ? { code: 14, message: "unavailable" } : { code: 0 }
        }
      })
      const summary = yield* Stream.fromIterable(keys(5)).pipe(
        Stream.run(BigtableSink.make({
          table,
          serializer: (k: string) => entry(k),
          createDisposition: "CREATE_IF_NEEDED",
          tableCreateOptions: { columnFamilies: { cf: {} } },
          writeMethod: WriteMethod.atLeastOnce({
            recovery: fast,
            retry: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 3 }
          })
        })),
        Effect.provide(fake.layer),
        onTestClock
      )
      assert.strictEqual(summary.recordsWritten, 5)
      assert.strictEqual(fake.admin.filter((a) => a.startsWith("CreateTable")).length, 1)
    }))

  it.effect("an entry isolated from a rejected batch keeps its whole retry budget for transient statuses", () => {
    // a batch with a bad entry is rejected whole; each good entry, re-sent alone, then meets two
    // UNAVAILABLE answers before it is applied
    const alone = new Map<string, number>()
    const fake = makeFake({
      decide: ({ rowKey, solo }) => {
        if (rowKey === "bad") return { code: 3, message: "bad" }
        if (!solo) return { code: 3, message: "a bad entry in the batch" }
        const seen = alone.get(rowKey) ?? 0
        alone.set(rowKey, seen + 1)
        return seen < 2 ? { code: 14, message: "unavailable" } : { code: 0 }
      }
    })
    return Effect.gen(function*() {
      const writer = yield* BigtableSink.writer({
        table,
        serializer: (k: string) => entry(k),
        failureHandler: FailureHandler.logAndDrop,
        writeMethod: WriteMethod.atLeastOnce({
          retry: { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 3 }
        })
      })
      fake.hold()
      yield* writer.write(["a", "b", "bad"])
      fake.release()
      yield* onTestClock(writer.flush)
      const summary = yield* writer.summary
      assert.deepStrictEqual([summary.recordsWritten, summary.recordsFailed], [2, 1])
    }).pipe(Effect.scoped, Effect.provide(fake.layer))
  })
})
