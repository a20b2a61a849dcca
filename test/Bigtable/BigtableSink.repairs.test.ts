/**
 * Table repairs (`CREATE_IF_NEEDED`) on the writer core's repair engine, through the public sink and
 * the fake Bigtable: many entries waiting for one repair, and what the waits do to their budgets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination, WriteMethod } from "../../src/Bigtable/index.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
const tableName = table.tableName

const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))

const keys = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`)
const fast = { initialBackoff: "1 millis", maxBackoff: "2 millis", maxAttempts: 10 } as const

describe("BigtableSink repairs", () => {
  it.live(
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
})
