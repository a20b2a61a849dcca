/**
 * A caller's retry `Schedule` (`RetryPolicy.fromSchedule`) on the Bigtable sink: the writer core's
 * budgets give it the failure as its input, the `BigtableError` the write ends with if it stops
 * there: a transient status on the `retry` budget, a table still missing after its repair on
 * `recovery`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule, Stream } from "effect"
import {
  BigtableError,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../../src/Bigtable/index.ts"
import { RetryPolicy } from "../../src/Sink.ts"
import { onTestClock } from "../support/waiting.ts"
import { makeFake } from "./fakeBigtable.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })

const entry = (key: string) =>
  RowMutationEntry.make(key, Mutation.setCell({ family: "cf", qualifier: "q", value: key, timestampMicros: 1000 }))

/** The reason of a failure given as a schedule's input, read as the type promises: a `BigtableError`. */
const reasonOf = (input: unknown): string => {
  if (!(input instanceof BigtableError.BigtableError)) throw new TypeError(`not a BigtableError: ${String(input)}`)
  return input.reason._tag
}

/** Quick retries that read each input's reason into `seen`. */
const reading = (seen: Array<string>) =>
  RetryPolicy.fromSchedule(
    Schedule.spaced("1 millis").pipe(
      Schedule.upTo({ times: 10 }),
      Schedule.tap(({ input }) => Effect.sync(() => void seen.push(reasonOf(input))))
    )
  )

describe("BigtableSink: a caller's retry schedule sees the failure", () => {
  it.effect("the retry budget's schedule reads a BigtableError for each transient status", () =>
    Effect.gen(function*() {
      let answered = 0
      const fake = makeFake({ decide: () => (answered++ < 2 ? { code: 14, message: "unavailable" } : { code: 0 }) })
      const seen: Array<string> = []
      const summary = yield* Stream.make("a").pipe(
        Stream.map(entry),
        Stream.run(BigtableSink.make({
          table,
          serializer: (e: RowMutationEntry.RowMutationEntry) => e,
          writeMethod: WriteMethod.atLeastOnce({ retry: reading(seen) })
        })),
        Effect.provide(fake.layer),
        onTestClock
      )
      assert.strictEqual(summary.recordsWritten, 1)
      assert.isAtLeast(seen.length, 2)
      assert.deepStrictEqual(new Set(seen), new Set(["BigtableRpcFailed"]))
    }))
})
