/**
 * The table repair's recovery budget is spent per table: tables that go missing one after another,
 * each arriving while the previous one is being created, are all created however many there are;
 * only a table whose own rounds keep failing exhausts the budget.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Metric } from "effect"
import { TestClock } from "effect/testing"
import {
  BigtableError,
  BigtableMetrics,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../../../src/Bigtable/index.ts"
import { makeFake } from "../../../Bigtable/fakeBigtable.ts"

const tableOf = (tableId: string) => TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId })

/** `table/row`: one cell in family `cf` of row `row` of `table`. */
const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))

/**
 * Runs `step` (a move of the virtual clock) and polls `check` in real time (the fake answers on
 * real timers) until it holds, or fails after about five seconds.
 */
const until = (what: string, check: Effect.Effect<boolean, string>, step: Effect.Effect<void> = Effect.void) =>
  Effect.gen(function*() {
    for (let i = 0; i < 250; i++) {
      yield* step
      if (yield* check) return
      yield* TestClock.withLive(Effect.sleep("20 millis"))
    }
    assert.fail(`timed out waiting for ${what}`)
  })

// one at a time: the first test reads the process-wide parked-entries gauge
/** A writer routing `table/row` keys to their tables, creating missing ones on a 3-attempt recovery budget. */
const creatingWriter = (fake: ReturnType<typeof makeFake>) =>
  BigtableSink.writer({
    destinationResolver: (key: string) => tableOf(key.split("/")[0] ?? ""),
    serializer: entry,
    createDisposition: "CREATE_IF_NEEDED",
    tableCreateOptions: { columnFamilies: { cf: {} } },
    writeMethod: WriteMethod.atLeastOnce({
      // each entry is sent at once, not after the batch delay
      batchElementCount: 1,
      recovery: { initialBackoff: "1 second", maxBackoff: "1 second", maxAttempts: 3 }
    })
  }).pipe(Effect.provide(fake.layer))

describe("Bigtable table repair", { concurrent: false }, () => {
  it.effect("tables arriving while others are created are all created: the budget is per table", () =>
    Effect.gen(function*() {
      const tables = new Map<string, Set<string>>()
      const gates = new Map<string, () => void>()
      const fake = makeFake({
        tables,
        createTableGate: (name) => new Promise((resolve) => void gates.set(name, () => resolve()))
      })
      const names = Array.from({ length: 8 }, (_, i) => `t${i}`)
      const writer = yield* creatingWriter(fake)
      const parkedAtStart = (yield* Metric.value(BigtableMetrics.parkedEntries)).value
      // a failed writer fails even an empty write at once: the poll stops on it with its error
      const alive = Effect.flatMap(
        Effect.exit(writer.write([])),
        (exit) => Exit.isSuccess(exit) ? Effect.succeed(true) : Effect.fail(`the writer failed: ${exit.cause}`)
      )
      const creating = (name: string) =>
        Effect.flatMap(alive, () => {
          const pending = fake.admin.some((a) => a.startsWith(`CreateTable ${tableOf(name).tableName} `))
          return Effect.succeed(pending && gates.has(tableOf(name).tableName))
        })
      const parked = (n: number) =>
        Effect.flatMap(
          alive,
          () => Effect.map(Metric.value(BigtableMetrics.parkedEntries), (g) => g.value - parkedAtStart === n)
        )

      yield* writer.write([`${names[0]}/r`])
      yield* until("the first table's CreateTable", creating(names[0] ?? ""))
      for (let i = 1; i < names.length; i++) {
        const previous = tableOf(names[i - 1] ?? "").tableName
        // the next table goes missing while the previous one's round is under way
        yield* writer.write([`${names[i]}/r`])
        yield* until(`${names[i]}'s entry parked`, parked(2))
        gates.get(previous)?.()
        gates.delete(previous)
        // the next round waits out the recovery backoff (virtual time), then creates the new table
        yield* until(`${names[i]}'s CreateTable`, creating(names[i] ?? ""), TestClock.adjust("2 seconds"))
      }
      gates.get(tableOf(names[names.length - 1] ?? "").tableName)?.()
      yield* writer.flush
      assert.strictEqual(tables.size, names.length)
      assert.strictEqual(fake.applied.size, names.length)
      assert.strictEqual((yield* writer.summary).recordsWritten, names.length)
    }))

  it.effect("a table whose own rounds keep failing exhausts the budget, naming it, while others are created", () =>
    Effect.gen(function*() {
      const tables = new Map<string, Set<string>>()
      const unavailable = Object.assign(new Error("14 UNAVAILABLE"), { code: 14, details: "try later" })
      const fake = makeFake({
        tables,
        createTableGate: (name) => (name.endsWith("/bad") ? Promise.reject(unavailable) : Promise.resolve())
      })
      const writer = yield* creatingWriter(fake)
      yield* writer.write(["bad/r", "good/r"])
      let error: unknown
      yield* until(
        "the writer to fail",
        Effect.map(Effect.exit(writer.write([])), (exit) => {
          if (Exit.isFailure(exit)) error = Cause.squash(exit.cause)
          return Exit.isFailure(exit)
        }),
        TestClock.adjust("2 seconds")
      )
      assert.instanceOf(error, BigtableError.BigtableError)
      if (!(error instanceof BigtableError.BigtableError)) return
      assert.strictEqual(error.reason._tag, "BigtableRecoveryExhausted")
      assert.include(error.message, "p.i.bad")
      assert.include(error.message, "3 attempt")
      assert.isTrue(tables.has(tableOf("good").tableName), "the other table was created")
    }))
})
