/**
 * User code the sink calls per record (resolver, `serialize`, `encodeInto`, `fingerprint`) that
 * throws: the record is routed to the failure handler (a resolver's as unroutable, the others as a
 * failed row of their destination), as the README's failure model says and as the Bigtable sink
 * does; the write goes on under `logAndDrop` and fails with `RecordFailed` under `failJob`, never
 * with the raw exception.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Sink, Stream } from "effect"
import {
  type BigQueryFailure,
  BigQuerySink,
  type RowSerializer,
  type TableDestination
} from "../../src/BigQuery/index.ts"
import { DeadLetterStalled, FailureHandler } from "../../src/Sink.ts"
import * as F from "./sinkFixtures.ts"

class Thrown extends Error {}

const thrower = (what: string) => (row: F.Row): void => {
  if (row.id % 2n === 1n) throw new Thrown(`${what} broke on ${row.id}`)
}

type Variant = "resolver" | "serialize" | "encodeInto" | "fingerprint"

/** A sink whose `variant` throws for odd ids; the others behave. */
const sinkOptions = (
  variant: Variant,
  table: TableDestination.TableDestination,
  base: RowSerializer.RowSerializer<F.Row>
) => {
  const check = thrower(variant)
  const serializer: RowSerializer.RowSerializer<F.Row> = variant === "serialize"
    ? {
      ...base,
      encodeInto: undefined,
      serialize: (row, d) => {
        check(row)
        return base.serialize(row, d)
      }
    }
    : variant === "encodeInto"
    ? {
      ...base,
      encodeInto: (buffer, row, d) => {
        const encode = base.encodeInto
        if (encode === undefined) return base.serialize(row, d) === null ? null : undefined
        // half a row written before the throw: the sink must drop those bytes
        buffer.ensure(3)
        buffer.buf[buffer.pos++] = 0x08
        check(row)
        buffer.pos--
        return encode(buffer, row, d)
      }
    }
    : variant === "fingerprint"
    ? { ...base, fingerprint: () => "v1" }
    : base
  let calls = 0
  const fingerprinted: RowSerializer.RowSerializer<F.Row> = variant === "fingerprint"
    ? {
      ...serializer,
      // the first call (opening the destination) succeeds; later per-record calls throw every other time
      fingerprint: () => {
        calls++
        if (calls > 1 && calls % 2 === 0) throw new Thrown(`fingerprint broke on call ${calls}`)
        return "v1"
      }
    }
    : serializer
  return {
    destinationResolver: (row: F.Row) => {
      if (variant === "resolver") check(row)
      return table
    },
    serializer: fingerprinted
  }
}

const variants: ReadonlyArray<Variant> = ["resolver", "serialize", "encodeInto", "fingerprint"]

describe("BigQuerySink: user code that throws", () => {
  for (const variant of variants) {
    it.live(`a throwing ${variant} routes the record under logAndDrop; the other rows land`, () =>
      F.withFake({}, (fake) =>
        Effect.gen(function*() {
          fake.createTable(`${fake.projectId}.d.t`, F.columns)
          const seen: Array<BigQueryFailure.BigQueryFailure> = []
          const recording = FailureHandler.make({
            handle: (f: BigQueryFailure.BigQueryFailure) => Effect.sync(() => void seen.push(f))
          })
          const options = sinkOptions(variant, yield* F.destination(fake), yield* F.serializer)
          const summary = yield* Stream.fromIterable(F.rows(10)).pipe(
            Stream.run(BigQuerySink.make({ ...options, failureHandler: recording }))
          )
          assert.strictEqual(summary.recordsWritten + summary.recordsFailed, 10)
          assert.isAbove(summary.recordsFailed, 0)
          assert.strictEqual(seen.length, summary.recordsFailed)
          assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, summary.recordsWritten)
          for (const f of seen) {
            assert.strictEqual(f._tag, variant === "resolver" ? "UnroutableRecord" : "FailedRow")
            if (variant !== "resolver") assert.strictEqual(f.destination, `${fake.projectId}.d.t`)
            assert.include(f.message, "broke")
            assert.instanceOf(f.cause, Thrown)
          }
          // logAndDrop as well: the write completes
          const dropped = yield* Stream.fromIterable(F.rows(10, 10)).pipe(
            Stream.run(BigQuerySink.make({ ...options, failureHandler: FailureHandler.logAndDrop }))
          )
          assert.strictEqual(dropped.recordsWritten + dropped.recordsFailed, 10)
          assert.isAbove(dropped.recordsFailed, 0)
        })))

    it.live(`a throwing ${variant} fails the write with RecordFailed under failJob, not the raw exception`, () =>
      F.withFake({}, (fake) =>
        Effect.gen(function*() {
          fake.createTable(`${fake.projectId}.d.t`, F.columns)
          const options = sinkOptions(variant, yield* F.destination(fake), yield* F.serializer)
          const exit = yield* Effect.exit(Stream.fromIterable(F.rows(10)).pipe(Stream.run(BigQuerySink.make(options))))
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) {
            const reason = exit.cause.reasons[0]
            assert.strictEqual(reason?._tag, "Fail", "a typed failure, not a defect")
            const error: unknown = reason?._tag === "Fail" ? reason.error : undefined
            assert.strictEqual((error as { _tag?: string } | undefined)?._tag, "RecordFailed")
          }
        })))
  }
})

describe("BigQuerySink: a throwing fingerprint", () => {
  it.live("routes the record under its own destination, not the previous record's", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const t = yield* F.destination(fake, "t")
        const u = yield* F.destination(fake, "u")
        const base = yield* F.serializer
        const seen: Array<BigQueryFailure.BigQueryFailure> = []
        const summary = yield* Stream.fromIterable(F.rows(10, 1)).pipe( // the first record (id 1) goes to u
          Stream.run(BigQuerySink.make({
            // even ids to t, odd ids to u, whose fingerprint throws
            destinationResolver: (row: F.Row) => (row.id % 2n === 0n ? t : u),
            serializer: {
              ...base,
              fingerprint: (d) => {
                if (d.toString() === u.toString()) throw new Thrown("fingerprint broke")
                return "v1"
              }
            },
            failureHandler: FailureHandler.make({
              handle: (f: BigQueryFailure.BigQueryFailure) => Effect.sync(() => void seen.push(f))
            })
          }))
        )
        assert.deepStrictEqual([summary.recordsWritten, summary.recordsFailed], [5, 5])
        assert.deepStrictEqual(seen.map((f) => f.destination), Array(5).fill(u.toString()))
      })))
})

describe("BigQuerySink: a dead-letter sink that consumes nothing", () => {
  it.live("the write fails with DeadLetterStalled instead of re-running the sink for ever on the owner", () =>
    F.withFake({
      answer: (c) => (c.request === 0 ? { _tag: "rowErrors", errors: [{ index: 0, message: "bad value" }] } : {
        _tag: "default"
      })
    }, (fake) =>
      Effect.gen(function*() {
        let runs = 0
        const exit = yield* F.writeRows(fake, 10, {
          failureHandler: FailureHandler.deadLetter(Sink.fromEffect(Effect.sync(() => void runs++)))
        }).pipe(Effect.timeoutOption("5 seconds"), Effect.exit)
        assert.isTrue(Exit.isFailure(exit), `no typed failure (the sink ran ${runs} times)`)
        if (Exit.isSuccess(exit)) return
        const reason = exit.cause.reasons[0]
        assert.strictEqual(reason?._tag, "Fail", "a typed failure, not a defect")
        const error: unknown = reason?._tag === "Fail" ? reason.error : undefined
        assert.instanceOf(error, DeadLetterStalled)
        assert.strictEqual(runs, 1)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 9)
      })))
})
