/**
 * A caller's retry `Schedule` (`RetryPolicy.fromSchedule`) on the Storage Write path: its input is the
 * failure, as the `BigQueryError` the write ends with if the schedule stops there, whichever budget
 * runs it (the in-band `retry`, the `recovery` of reconnects, table creation and `FlushRows`). A
 * schedule that reads its input sees one; a schedule that filters on it decides the retries.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { BigQueryError, WriteMethod } from "../../src/BigQuery/index.ts"
import { RetryPolicy } from "../../src/Sink.ts"
import type * as Fake from "../support/fakeBigQueryWrite.ts"
import { eoWriter, range, visibleIds, withEo } from "./exactlyOnceFixtures.ts"
import * as F from "./sinkFixtures.ts"

/** The code of a failure given as a schedule's input, read as the type promises: a `BigQueryError`. */
const codeOf = (input: unknown): string => {
  if (!(input instanceof BigQueryError.BigQueryError)) throw new TypeError(`not a BigQueryError: ${String(input)}`)
  const reason = input.reason
  return "code" in reason ? reason.code : reason._tag
}

/** A schedule of `times` quick retries that reads each input's code into `seen`. */
const reading = (seen: Array<string>, times = 5) =>
  RetryPolicy.fromSchedule(
    Schedule.spaced("1 millis").pipe(
      Schedule.upTo({ times }),
      Schedule.tap(({ input }) => Effect.sync(() => void seen.push(codeOf(input))))
    )
  )

/** A schedule that retries while the failure is `code` (and at most `times` times). */
const whileCode = (code: string, times = 5) =>
  RetryPolicy.fromSchedule(
    Schedule.spaced("1 millis").pipe(
      Schedule.upTo({ times }),
      Schedule.while(({ input }) => codeOf(input) === code)
    )
  )

/** Answers the first `n` appends with `answer`, the default to the rest. */
const firstAppends = (n: number, answer: Fake.Answer) => {
  let seen = 0
  return (_: Fake.AppendContext): Fake.Answer => (seen++ < n ? answer : { _tag: "default" })
}

const unavailable: Fake.Answer = { _tag: "error", code: 14, message: "unavailable" }
const reset: Fake.Answer = { _tag: "streamError", code: 14, message: "reset" }

describe("BigQuerySink: a caller's retry schedule sees the failure", () => {
  it.live("the in-band retry's schedule reads a BigQueryError for each transient answer", () =>
    Effect.scoped(F.withFake({ answer: firstAppends(2, unavailable) }, (fake) =>
      Effect.gen(function*() {
        const seen: Array<string> = []
        const summary = yield* F.writeRows(fake, 10, { writeMethod: { retry: reading(seen) } })
        assert.strictEqual(summary.recordsWritten, 10)
        assert.deepStrictEqual(seen, ["UNAVAILABLE", "UNAVAILABLE"])
      }))))

  it.live("an in-band schedule filtering on the failure retries what it accepts on the same connection", () =>
    Effect.scoped(F.withFake({ answer: firstAppends(2, unavailable) }, (fake) =>
      Effect.gen(function*() {
        const summary = yield* F.writeRows(fake, 10, { writeMethod: { retry: whileCode("UNAVAILABLE") } })
        assert.strictEqual(summary.recordsWritten, 10)
        assert.strictEqual(fake.stats.connections, 1, "re-sent in band, never reconnected")
      }))))

  it.live("the recovery schedule of reconnects reads a BigQueryError for each broken connection", () =>
    Effect.scoped(F.withFake({ answer: firstAppends(2, reset) }, (fake) =>
      Effect.gen(function*() {
        const seen: Array<string> = []
        const summary = yield* F.writeRows(fake, 10, { writeMethod: { recovery: reading(seen) } })
        assert.strictEqual(summary.recordsWritten, 10)
        // a request's n-th reconnect replays the schedule's first n steps (the core keeps no schedule
        // state between a request's attempts): each step sees the failure
        assert.isAtLeast(seen.length, 2)
        assert.deepStrictEqual(new Set(seen), new Set(["UNAVAILABLE"]))
      }))))

  it.live("a recovery schedule that refuses the failure ends the write with that failure", () =>
    Effect.scoped(F.withFake({ answer: firstAppends(1, reset) }, (fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(F.writeRows(fake, 10, { writeMethod: { recovery: whileCode("ABORTED") } }))
        assert.strictEqual(codeOf(error), "UNAVAILABLE")
        assert.strictEqual(error._tag === "BigQueryError" ? error.reason._tag : error._tag, "BigQueryRetriesExhausted")
      }))))

  it.live("table creation's REST retries give the recovery schedule a BigQueryError", () =>
    Effect.scoped(F.withFake({
      restAnswer: (() => {
        let refused = false
        return (method: string) => {
          if (method !== "POST" || refused) return undefined
          refused = true
          return 503
        }
      })()
    }, (fake) =>
      Effect.gen(function*() {
        const seen: Array<string> = []
        const summary = yield* F.writeRows(fake, 10, {
          createTable: false,
          writeMethod: { recovery: reading(seen) },
          sink: { createDisposition: "CREATE_IF_NEEDED" }
        })
        assert.strictEqual(summary.recordsWritten, 10)
        assert.isAtLeast(seen.length, 1)
        for (const code of seen) assert.strictEqual(code, "BigQueryTableAdminFailed")
      }))))

  it.live("FlushRows retries (exactly once) give the recovery schedule a BigQueryError", () =>
    withEo({
      buffered: { flush: (_stream, _offset, call) => (call === 0 ? { code: 14, message: "busy" } : undefined) }
    }, (
      fake
    ) =>
      Effect.gen(function*() {
        const seen: Array<string> = []
        const method = WriteMethod.exactlyOnce({ ...F.fastRetries, recovery: reading(seen) })
        const { writer } = yield* eoWriter(fake, "w", method)
        yield* writer.write(F.rows(10))
        yield* writer.checkpoint(10)
        assert.deepStrictEqual(visibleIds(fake), range(0, 10))
        assert.deepStrictEqual(seen, ["UNAVAILABLE"])
      })))
})
