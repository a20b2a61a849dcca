/**
 * Reference section 2.6 row by row against the fake: the mid-run error table, the commit rules
 * (`FlushRows`) and the restore probe. Each test drives an exactly-once writer on `d.t` and checks
 * what became visible (exactly the rows expected, none twice) and what failed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option, Sink } from "effect"
import { TestClock } from "effect/testing"
import { type BigQueryFailure, BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import type * as Fake from "../support/fakeBigQueryWrite.ts"
import type * as Buffered from "../support/fakeBufferedStreams.ts"
import { eventually } from "../support/waiting.ts"
import { eoWriter, idOf, range, resume, visibleIds, withEo } from "./exactlyOnceFixtures.ts"
import { columns, destination, fastRetries, rows, serializer } from "./sinkFixtures.ts"

/** Small batches: 40 rows go in several appends (each row is ~12 bytes framed). */
const small = WriteMethod.exactlyOnce({ ...fastRetries, maxAppendRequestBytes: 120 })

const buffered = (c: Fake.AppendContext) => c.offset !== undefined

/** Answers `answer` to the `nth` append (0-based) on a buffered stream, the default to the others. */
const nth = (n: number, answer: Fake.Answer) => {
  let seen = 0
  return (c: Fake.AppendContext): Fake.Answer => (buffered(c) && seen++ === n ? answer : { _tag: "default" })
}

/**
 * Answers the buffered appends: row errors to the second (its survivors are then replayed at the
 * same offset), `replay` to that replay, the default to the others; counts the appends at the
 * rejected offset after the rejection (the replays).
 */
const failingReplay = (replay: Fake.Answer) => {
  const counted = { seen: 0, replays: 0 }
  let rejectedAt: number | undefined
  const answer = (c: Fake.AppendContext): Fake.Answer => {
    if (!buffered(c)) return { _tag: "default" }
    if (counted.seen++ === 1) {
      rejectedAt = c.offset
      return { _tag: "rowErrors", errors: [{ index: 0, message: "bad" }] }
    }
    if (c.offset !== rejectedAt) return { _tag: "default" }
    counted.replays++
    return replay
  }
  return { answer, counted }
}

const reasonOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "reason" in error &&
    typeof error.reason === "object" && error.reason !== null && "_tag" in error.reason
    ? String(error.reason._tag)
    : String(error)

const detailOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

/** Writes rows 0..n-1 through a fresh writer and checkpoints; the checkpoint's failure, if any. */
const writeAndCheckpoint = (fake: Fake.FakeBigQuery, n: number, method = small) =>
  Effect.gen(function*() {
    const { writer } = yield* eoWriter(fake, "w", method)
    yield* writer.write(rows(n))
    return yield* Effect.flip(writer.checkpoint(n)).pipe(Effect.option)
  })

describe("BigQuerySink.exactlyOnce: the mid-run error table (2.6)", () => {
  it.live("a transient in-band error is re-appended at the same offset", () =>
    withEo({ answer: nth(1, { _tag: "error", code: 14, message: "try again" }) }, (fake) =>
      Effect.gen(function*() {
        const failed = yield* writeAndCheckpoint(fake, 40)
        assert.isTrue(failed._tag === "None")
        assert.deepStrictEqual(visibleIds(fake), range(0, 40))
        const [stream] = fake.buffered.streams.values()
        assert.strictEqual(stream?.rows.length, 40)
      })))

  it.live("a broken connection (stream error) reconnects and re-appends at the same offset", () =>
    withEo({ answer: nth(2, { _tag: "streamError", code: 14, message: "reset" }) }, (fake) =>
      Effect.gen(function*() {
        assert.isTrue((yield* writeAndCheckpoint(fake, 40))._tag === "None")
        assert.deepStrictEqual(visibleIds(fake), range(0, 40))
      })))

  it.live("a lost response: the re-append meets OFFSET_ALREADY_EXISTS, which is success (no duplicate)", () =>
    withEo({ answer: nth(1, { _tag: "drop" }) }, (fake) =>
      Effect.gen(function*() {
        assert.isTrue((yield* writeAndCheckpoint(fake, 40))._tag === "None")
        assert.deepStrictEqual(visibleIds(fake), range(0, 40))
        const [stream] = fake.buffered.streams.values()
        assert.strictEqual(stream?.rows.length, 40, "appended once")
      })))

  it.live("OFFSET_ALREADY_EXISTS on a first attempt (another writer's rows there) is CheckpointConflict: no checkpoint past the stream's end", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const { writer } = yield* eoWriter(fake)
        yield* writer.write(rows(10))
        yield* writer.checkpoint(10)
        // a zombie appends 3 rows where this writer's next batch of 10 goes: the batch never landed
        const [name] = fake.buffered.streams.keys()
        fake.buffered.append(name ?? "", 10, Array.from({ length: 3 }, () => new Uint8Array([8, 99])))
        const error = yield* Effect.flip(Effect.andThen(writer.write(rows(10, 10)), writer.checkpoint(20)))
        // the one typed error for "another writer owns this now", whichever layer noticed
        assert.strictEqual(error._tag, "CheckpointConflict")
        if (error._tag !== "CheckpointConflict") return
        assert.include(error.detail, "OFFSET_ALREADY_EXISTS")
        assert.include(error.message, "taken over by another writer")
        assert.deepStrictEqual(visibleIds(fake), range(0, 10))
        const r = yield* resume()
        assert.deepStrictEqual(r.position, Option.some(10), "nothing saved past the stream's end")
        // the restart restores the last checkpoint and leaves the stream the zombie wrote to
        const next = yield* eoWriter(fake)
        yield* next.writer.write(rows(10, 10))
        yield* next.writer.checkpoint(20)
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
      })))

  it.effect("an unanswered append (the 5-minute watchdog) is re-appended at the same offset", () =>
    withEo({ answer: nth(1, { _tag: "hang" }) }, (fake) =>
      Effect.gen(function*() {
        let done = false
        const fiber = yield* writeAndCheckpoint(fake, 40).pipe(
          Effect.ensuring(Effect.sync(() => void (done = true))),
          Effect.forkChild
        )
        yield* eventually("the unanswered append", () => fake.stats.requests >= 2)
        yield* TestClock.withLive(Effect.sleep("150 millis"))
        const [before] = fake.buffered.streams.values()
        const landed = before?.rows.length ?? 0
        yield* TestClock.adjust("4 minutes")
        yield* TestClock.withLive(Effect.sleep("150 millis"))
        assert.isFalse(done, "still waiting before the timeout")
        // the timeout, then the recovery backoffs (milliseconds) on the TestClock, until the write ends (on a
        // loaded machine the recovery's round trips may need more turns than a fixed count gives them)
        for (let i = 0; i < 600 && fiber.pollUnsafe() === undefined; i++) {
          yield* TestClock.adjust("1 minute")
          yield* TestClock.withLive(Effect.sleep("50 millis"))
        }
        const failed = yield* Fiber.join(fiber)
        assert.isTrue(failed._tag === "None")
        assert.deepStrictEqual(visibleIds(fake), range(0, 40))
        const [stream] = fake.buffered.streams.values()
        assert.strictEqual(stream?.rows.length, 40, "appended once")
        assert.isTrue(landed < 40, "rows were still missing while the append hung")
      })))

  it.live("OFFSET_OUT_OF_RANGE mid-run (a cascade) is re-appended at the same offset", () =>
    withEo(
      { answer: nth(1, { _tag: "error", code: 11, message: "out of range", storageCode: 9 }) },
      (fake) =>
        Effect.gen(function*() {
          assert.isTrue((yield* writeAndCheckpoint(fake, 40))._tag === "None")
          assert.deepStrictEqual(visibleIds(fake), range(0, 40))
        })
    ))

  it.live("row-level rejection: failing rows routed, survivors and the batches behind at recomputed offsets", () =>
    withEo({
      answer: nth(1, { _tag: "rowErrors", errors: [{ index: 0, message: "bad value" }] })
    }, (fake) =>
      Effect.gen(function*() {
        const routed: Array<BigQueryFailure.BigQueryFailure> = []
        const r = yield* eoWriterWith(fake, (f) => void routed.push(f))
        yield* r.write(rows(40))
        yield* r.checkpoint(40)
        assert.strictEqual(routed.length, 1)
        const visible = visibleIds(fake)
        assert.strictEqual(visible.length, 39)
        assert.strictEqual(new Set(visible).size, 39)
        const [stream] = fake.buffered.streams.values()
        assert.strictEqual(stream?.rows.length, 39, "contiguous offsets: nothing stranded")
        const summary = yield* r.summary
        assert.strictEqual(summary.recordsWritten, 39)
        assert.strictEqual(summary.recordsFailed, 1)
      })))

  for (
    const [name, replay, detail] of [
      ["OFFSET_ALREADY_EXISTS", { _tag: "error", code: 6, message: "exists", storageCode: 8 }, "replaying"],
      [
        "OFFSET_OUT_OF_RANGE",
        { _tag: "error", code: 11, message: "out of range", storageCode: 9 },
        "OFFSET_OUT_OF_RANGE"
      ]
    ] as const
  ) {
    it.live(`during the replay, ${name} is terminal (not re-appended)`, () => {
      const { answer, counted } = failingReplay(replay)
      return withEo({ answer }, (fake) =>
        Effect.gen(function*() {
          const r = yield* eoWriterWith(fake, () => undefined)
          yield* r.write(rows(40))
          const error = yield* Effect.flip(r.checkpoint(40))
          assert.strictEqual(reasonOf(error), "BigQueryRequestRejected")
          assert.include(detailOf(error), detail)
          assert.strictEqual(counted.replays, 1, "the replay was not re-appended")
          assert.deepStrictEqual(visibleIds(fake), [])
        }))
    })
  }

  it.live("row errors naming no row of the batch are terminal", () =>
    withEo(
      { answer: nth(0, { _tag: "rowErrors", errors: [{ index: 99, message: "?" }] }) },
      (fake) =>
        Effect.gen(function*() {
          const failed = yield* writeAndCheckpoint(fake, 5)
          assert.isTrue(failed._tag === "Some" && reasonOf(failed.value) === "BigQueryRequestRejected")
          assert.deepStrictEqual(visibleIds(fake), [])
        })
    ))

  for (
    const [name, answer] of [
      ["STREAM_FINALIZED", { _tag: "error", code: 3, message: "finalized", storageCode: 6 }],
      ["STREAM_NOT_FOUND", { _tag: "error", code: 5, message: "no stream", storageCode: 3 }],
      ["INVALID_STREAM_STATE", { _tag: "error", code: 9, message: "bad state", storageCode: 5 }]
    ] as const
  ) {
    it.live(`${name} mid-run is terminal (a restart and restore is the repair)`, () =>
      withEo({ answer: nth(1, answer) }, (fake) =>
        Effect.gen(function*() {
          const failed = yield* writeAndCheckpoint(fake, 40)
          assert.isTrue(failed._tag === "Some" && reasonOf(failed.value) === "BigQueryRequestRejected")
          assert.deepStrictEqual(visibleIds(fake), [])
          assert.strictEqual(fake.buffered.stats.creates, 1, "no new stream mid-run")
        })))
  }

  it.live("a stream finalized between checkpoints fails the next append", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        const { writer } = yield* eoWriter(fake)
        yield* writer.write(rows(5))
        yield* writer.checkpoint(5)
        for (const name of fake.buffered.streams.keys()) fake.buffered.finalize(name)
        yield* writer.write(rows(5, 5))
        const error = yield* Effect.flip(writer.checkpoint(10))
        assert.strictEqual(reasonOf(error), "BigQueryRequestRejected")
        assert.deepStrictEqual(visibleIds(fake), range(0, 5))
      })))

  it.live("an acknowledgement echoing another offset is terminal", () =>
    withEo({ answer: nth(1, { _tag: "ok", echoOffset: 1234 }) }, (fake) =>
      Effect.gen(function*() {
        const failed = yield* writeAndCheckpoint(fake, 40)
        assert.isTrue(failed._tag === "Some")
        if (failed._tag === "Some") assert.include(detailOf(failed.value), "acknowledged at offset 1234")
        assert.deepStrictEqual(visibleIds(fake), [])
      })))

  it.live("schema mismatch with updates enabled: the table is widened, the same stream re-appended at the same offset", () =>
    withEo({ createTable: false }, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, columns.filter((c) => c.name !== "name"))
        const writer = yield* BigQuerySink.writer({
          table: yield* destination(fake),
          serializer: yield* serializer,
          writeMethod: WriteMethod.exactlyOnce(fastRetries),
          schemaUpdate: { allowNewFields: true },
          checkpoint: { resume: yield* eoResume }
        })
        yield* writer.write(rows(10))
        yield* writer.checkpoint(10)
        assert.deepStrictEqual(visibleIds(fake), range(0, 10))
        assert.strictEqual(fake.buffered.stats.creates, 1, "the same stream")
        assert.isTrue(fake.table(`${fake.projectId}.d.t`)?.schema.fields.some((f) => f.name === "name"))
      })))

  it.live("schema mismatch with updates disabled is terminal", () =>
    withEo({ createTable: false }, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, columns.filter((c) => c.name !== "name"))
        const failed = yield* writeAndCheckpoint(fake, 10)
        assert.isTrue(failed._tag === "Some" && reasonOf(failed.value) === "BigQuerySchemaMismatch")
      })))

  it.live("a missing table at stream creation: created under CREATE_IF_NEEDED, then the stream", () =>
    withEo({ createTable: false }, (fake) =>
      Effect.gen(function*() {
        assert.isTrue((yield* writeAndCheckpoint(fake, 10))._tag === "None")
        assert.deepStrictEqual(visibleIds(fake), range(0, 10))
        assert.isDefined(fake.table(`${fake.projectId}.d.t`))
        assert.strictEqual(fake.buffered.stats.creates, 2, "CreateWriteStream: NOT_FOUND, then created")
      })))

  it.live("a missing table under CREATE_NEVER is terminal at stream creation", () =>
    withEo({ createTable: false }, (fake) =>
      Effect.gen(function*() {
        const writer = yield* BigQuerySink.writer({
          table: yield* destination(fake),
          serializer: yield* serializer,
          writeMethod: WriteMethod.exactlyOnce(fastRetries),
          createDisposition: "CREATE_NEVER",
          checkpoint: { resume: yield* eoResume }
        })
        const error = yield* Effect.flip(Effect.andThen(writer.write(rows(3)), writer.checkpoint(3)))
        assert.strictEqual(reasonOf(error), "BigQueryTableNotFound")
        assert.isUndefined(fake.table(`${fake.projectId}.d.t`))
      })))

  it.live("a masked PERMISSION_DENIED at append is terminal (appends are never a propagation window)", () =>
    withEo({ answer: nth(0, { _tag: "error", code: 7, message: "denied" }) }, (fake) =>
      Effect.gen(function*() {
        const failed = yield* writeAndCheckpoint(fake, 5)
        assert.isTrue(failed._tag === "Some" && reasonOf(failed.value) === "BigQueryRequestRejected")
      })))
})

const flushFault = (fault: Exclude<Buffered.BufferedFaults["flush"], undefined>) => ({ buffered: { flush: fault } })

describe("BigQuerySink.exactlyOnce: the commit rules (FlushRows)", () => {
  it.live("a FlushRows answering another offset is terminal", () =>
    withEo(flushFault(() => ({ answerOffset: 3 })), (fake) =>
      Effect.gen(function*() {
        const failed = yield* writeAndCheckpoint(fake, 10)
        assert.isTrue(failed._tag === "Some" && detailOf(failed.value).includes("answered offset 3"))
      })))

  it.live("ALREADY_EXISTS is success: a re-commit of a flushed offset", () =>
    withEo(flushFault((_s, _o, call) => (call === 0 ? { code: 6, message: "flushed", storageCode: 8 } : undefined)), (
      fake
    ) =>
      Effect.gen(function*() {
        assert.isTrue((yield* writeAndCheckpoint(fake, 10))._tag === "None")
      })))

  it.live("transient codes are retried in place", () =>
    withEo(
      flushFault((_s, _o, call) => (call < 2 ? { code: 14, message: "unavailable" } : undefined)),
      (fake) =>
        Effect.gen(function*() {
          assert.isTrue((yield* writeAndCheckpoint(fake, 10))._tag === "None")
          assert.deepStrictEqual(visibleIds(fake), range(0, 10))
          assert.strictEqual(fake.buffered.stats.flushes, 3)
        })
    ))

  it.live("a masked PERMISSION_DENIED is retried under CREATE_IF_NEEDED (a table just created)", () =>
    withEo(
      flushFault((_s, _o, call) => (call === 0 ? { code: 7, message: "denied" } : undefined)),
      (fake) =>
        Effect.gen(function*() {
          assert.isTrue((yield* writeAndCheckpoint(fake, 10))._tag === "None")
          assert.deepStrictEqual(visibleIds(fake), range(0, 10))
        })
    ))

  it.live("a masked PERMISSION_DENIED is terminal under CREATE_NEVER", () =>
    withEo(flushFault(() => ({ code: 7, message: "denied" })), (fake) =>
      Effect.gen(function*() {
        const writer = yield* BigQuerySink.writer({
          table: yield* destination(fake),
          serializer: yield* serializer,
          writeMethod: WriteMethod.exactlyOnce(fastRetries),
          createDisposition: "CREATE_NEVER",
          checkpoint: { resume: yield* eoResume }
        })
        yield* writer.write(rows(3))
        assert.strictEqual(reasonOf(yield* Effect.flip(writer.checkpoint(3))), "BigQueryRequestRejected")
        assert.strictEqual(fake.buffered.stats.flushes, 1)
      })))

  for (const [name, code] of [["NOT_FOUND", 5], ["INVALID_ARGUMENT", 3]] as const) {
    it.live(`${name} is terminal at commit`, () =>
      withEo(flushFault(() => ({ code, message: name })), (fake) =>
        Effect.gen(function*() {
          const failed = yield* writeAndCheckpoint(fake, 10)
          assert.isTrue(failed._tag === "Some" && reasonOf(failed.value) === "BigQueryRequestRejected")
          assert.strictEqual(fake.buffered.stats.flushes, 1)
        })))
  }
})

/** A first run checkpointing 10 rows; then `between`; then a second run writing 10 more. */
const twoRuns = (fake: Fake.FakeBigQuery, between: () => void) =>
  Effect.gen(function*() {
    yield* Effect.scoped(Effect.gen(function*() {
      const { writer } = yield* eoWriter(fake)
      yield* writer.write(rows(10))
      yield* writer.checkpoint(10)
    }))
    between()
    const { writer } = yield* eoWriter(fake)
    yield* writer.write(rows(10, 10))
    yield* writer.checkpoint(20)
  })

/**
 * A first run checkpointing 10 rows, then 5 more rows on its stream past the checkpoint (the crashed
 * run's): the next restore's probe at 10 meets OFFSET_ALREADY_EXISTS and abandons the stream.
 */
const crashedPastCheckpoint = (fake: Fake.FakeBigQuery) =>
  Effect.scoped(Effect.gen(function*() {
    const { writer } = yield* eoWriter(fake)
    yield* writer.write(rows(10))
    yield* writer.checkpoint(10)
    const [name] = fake.buffered.streams.keys()
    fake.buffered.append(name ?? "", 10, Array.from({ length: 5 }, () => new Uint8Array([8, 99])))
  }))

/** Answers the fresh stream's first append (after an abandon) with row errors for the rows `rejectOnFresh` picks. */
const abandonedWith = (rejectOnFresh: (c: Fake.AppendContext) => ReadonlyArray<number>) => {
  let first: string | undefined
  let rejected = false
  const answer = (c: Fake.AppendContext): Fake.Answer => {
    if (!buffered(c)) return { _tag: "default" }
    first ??= c.writeStream
    if (c.writeStream === first || rejected) return { _tag: "default" }
    rejected = true
    const errors = rejectOnFresh(c).map((index) => ({ index, message: "bad" }))
    return errors.length === 0 ? { _tag: "default" } : { _tag: "rowErrors", errors }
  }
  return answer
}

describe("BigQuerySink.exactlyOnce: the restore probe", () => {
  it.live("OFFSET_OUT_OF_RANGE at the probe abandons the stream for a fresh one", () => {
    let seen = 0
    return withEo({
      answer: (c) => (buffered(c) && c.offset === 10 && seen++ === 0
        ? { _tag: "error", code: 11, message: "out of range", storageCode: 9 }
        : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        yield* twoRuns(fake, () => undefined)
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 2)
        assert.strictEqual(fake.buffered.stats.finalizes, 0, "the abandoned stream is not finalized")
      }))
  })

  it.live("a finalized stream at the probe is abandoned", () =>
    withEo({}, (fake) =>
      Effect.gen(function*() {
        yield* twoRuns(fake, () => {
          for (const name of fake.buffered.streams.keys()) fake.buffered.finalize(name)
        })
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 2)
      })))

  it.live("a transient failure of the probe is retried on the same stream", () => {
    let seen = 0
    return withEo({
      answer: (c) => (buffered(c) && c.offset === 10 && seen++ === 0
        ? { _tag: "error", code: 14, message: "unavailable" }
        : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        yield* twoRuns(fake, () => undefined)
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 1, "adopted")
      }))
  })

  it.live("a row-level rejection at the probe keeps the stream", () => {
    let seen = 0
    return withEo({
      answer: (c) => (buffered(c) && c.offset === 10 && seen++ === 0
        ? { _tag: "rowErrors", errors: [{ index: 0, message: "bad" }] }
        : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const { writer } = yield* eoWriter(fake)
          yield* writer.write(rows(10))
          yield* writer.checkpoint(10)
        }))
        const writer = yield* eoWriterWith(fake, () => undefined)
        yield* writer.write(rows(10, 10))
        yield* writer.checkpoint(20)
        assert.strictEqual(visibleIds(fake).length, 19)
        assert.strictEqual(fake.buffered.stats.creates, 1)
      }))
  })

  it.live("an unknown stream at the probe (STREAM_NOT_FOUND) is abandoned, not finalized", () => {
    let seen = 0
    return withEo({
      answer: (c) => (buffered(c) && c.offset === 10 && seen++ === 0
        ? { _tag: "error", code: 5, message: "no stream", storageCode: 3 }
        : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        yield* twoRuns(fake, () => undefined)
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 2)
        assert.strictEqual(fake.buffered.stats.finalizes, 0)
      }))
  })

  it.live("a connection closed under the probe reconnects and re-sends it on the same stream", () => {
    let seen = 0
    return withEo({
      answer: (c) => (buffered(c) && c.offset === 10 && seen++ === 0
        ? { _tag: "streamError", code: 14, message: "reset" }
        : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        const connections = fake.stats.connections
        yield* twoRuns(fake, () => undefined)
        assert.strictEqual(seen, 2, "the probe was re-sent once")
        assert.isTrue(fake.stats.connections > connections + 2, "a new connection after the reset")
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 1, "the restored stream was adopted")
      }))
  })

  it.live("a schema mismatch at the probe reconciles and re-appends on the same stream at the same offset", () => {
    let seen = 0
    return withEo({
      answer: (c) => (buffered(c) && c.offset === 10 && seen++ === 0
        ? { _tag: "error", code: 3, message: "schema mismatch", storageCode: 7 }
        : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        const open = Effect.gen(function*() {
          return yield* BigQuerySink.writer({
            table: yield* destination(fake),
            serializer: yield* serializer,
            writeMethod: WriteMethod.exactlyOnce(fastRetries),
            schemaUpdate: { allowNewFields: true },
            checkpoint: { resume: yield* eoResume }
          })
        })
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* open
          yield* writer.write(rows(10))
          yield* writer.checkpoint(10)
        }))
        const writer = yield* open
        yield* writer.write(rows(10, 10))
        yield* writer.checkpoint(20)
        assert.strictEqual(seen, 2, "the probe was re-sent once")
        assert.deepStrictEqual(visibleIds(fake), range(0, 20))
        assert.strictEqual(fake.buffered.stats.creates, 1, "the restored stream was kept")
      }))
  })

  it.live("an abandoned probe with row errors: the survivors go at the fresh stream's offset, not the old one's", () => {
    const answer = abandonedWith(() => [0])
    return withEo({ answer }, (fake) =>
      Effect.gen(function*() {
        yield* crashedPastCheckpoint(fake)
        const routed: Array<BigQueryFailure.BigQueryFailure> = []
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* eoWriterWith(fake, (f) => void routed.push(f))
          yield* writer.write(rows(10, 10))
          yield* writer.checkpoint(20)
        }))
        assert.strictEqual(routed.length, 1)
        assert.deepStrictEqual(visibleIds(fake), [...range(0, 10), ...range(11, 20)])
        assert.strictEqual(fake.buffered.stats.creates, 2, "the restored stream was abandoned")
        // the next run restores the fresh stream and appends behind its rows
        const { writer } = yield* eoWriter(fake)
        yield* writer.write(rows(5, 20))
        yield* writer.checkpoint(25)
        assert.deepStrictEqual(visibleIds(fake), [...range(0, 10), ...range(11, 25)])
      }))
  })

  it.live("row errors reported before the offset check at a probe past which a crash appended: abandoned, every restart", () => {
    // the restored stream's probe at 10 meets row errors first (a service that reads the rows before
    // the offset); its survivors, re-sent at 10, then meet the crashed run's rows there
    let restored: string | undefined
    const answer = (c: Fake.AppendContext): Fake.Answer => {
      if (!buffered(c) || c.writeStream !== restored || c.offset !== 10) return { _tag: "default" }
      const errors = c.rows.flatMap((row, index) => idOf(row) === 10 ? [{ index, message: "row 10 is bad" }] : [])
      return errors.length === 0 ? { _tag: "default" } : { _tag: "rowErrors", errors, uncheckedOffset: true }
    }
    return withEo({ answer }, (fake) =>
      Effect.gen(function*() {
        yield* crashedPastCheckpoint(fake)
        restored = [...fake.buffered.streams.keys()][0]
        const routed: Array<BigQueryFailure.BigQueryFailure> = []
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* eoWriterWith(fake, (f) => void routed.push(f))
          yield* writer.write(rows(10, 10))
          yield* writer.checkpoint(20)
        }))
        assert.strictEqual(routed.length, 1, "the bad row is routed")
        assert.deepStrictEqual(visibleIds(fake), [...range(0, 10), ...range(11, 20)])
        assert.strictEqual(fake.buffered.stats.creates, 2, "the restored stream was abandoned")
        // and the next restart moves on from there
        const { writer } = yield* eoWriter(fake)
        yield* writer.write(rows(5, 20))
        yield* writer.checkpoint(25)
        assert.deepStrictEqual(visibleIds(fake), [...range(0, 10), ...range(11, 25)])
      }))
  })

  it.live("a probe whose rows are all rejected before the offset check leaves the next append the probe", () => {
    // the probe (row 10 alone) is rejected whole before the service looked at its offset: nothing
    // about the restored stream is known yet, so the next batch, at the same offset, is the probe
    // that meets the crashed run's rows there and abandons the stream (not a terminal failure)
    let restored: string | undefined
    const answer = (c: Fake.AppendContext): Fake.Answer => {
      if (!buffered(c) || c.writeStream !== restored || c.offset !== 10) return { _tag: "default" }
      const errors = c.rows.flatMap((row, index) => idOf(row) === 10 ? [{ index, message: "row 10 is bad" }] : [])
      return errors.length === 0 ? { _tag: "default" } : { _tag: "rowErrors", errors, uncheckedOffset: true }
    }
    return withEo({ answer }, (fake) =>
      Effect.gen(function*() {
        yield* crashedPastCheckpoint(fake)
        restored = [...fake.buffered.streams.keys()][0]
        const routed: Array<BigQueryFailure.BigQueryFailure> = []
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* eoWriterWith(fake, (f) => void routed.push(f))
          yield* writer.write(rows(1, 10))
          yield* writer.flush
          yield* writer.write(rows(9, 11))
          yield* writer.checkpoint(20)
        }))
        assert.strictEqual(routed.length, 1, "the bad row is routed")
        assert.deepStrictEqual(visibleIds(fake), [...range(0, 10), ...range(11, 20)])
        assert.strictEqual(fake.buffered.stats.creates, 2, "the restored stream was abandoned")
      }))
  })

  it.live("an abandoned probe whose rows are all rejected saves no commit past the fresh stream's end", () => {
    const answer = abandonedWith((c) => c.rows.map((_, i) => i))
    return withEo({ answer }, (fake) =>
      Effect.gen(function*() {
        yield* crashedPastCheckpoint(fake)
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* eoWriterWith(fake, () => undefined)
          yield* writer.write(rows(1, 10))
          yield* writer.checkpoint(11)
          yield* writer.write(rows(5, 11))
          yield* writer.checkpoint(16)
        }))
        assert.deepStrictEqual(visibleIds(fake), [...range(0, 10), ...range(11, 16)])
        // every restore re-runs the stored commits: none of them may point past a stream's end
        const { writer } = yield* eoWriter(fake)
        yield* writer.write(rows(4, 16))
        yield* writer.checkpoint(20)
        assert.deepStrictEqual(visibleIds(fake), [...range(0, 10), ...range(11, 20)])
      }))
  })

  it.live("any other failure of the probe is terminal", () => {
    let seen = 0
    return withEo({
      answer: (c) => (buffered(c) && c.offset === 10 && seen++ === 0
        ? { _tag: "error", code: 3, message: "invalid request" }
        : { _tag: "default" })
    }, (fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(twoRuns(fake, () => undefined))
        assert.strictEqual(reasonOf(error), "BigQueryRequestRejected")
        assert.deepStrictEqual(visibleIds(fake), range(0, 10), "only the first run's checkpoint")
        assert.strictEqual(fake.buffered.stats.creates, 1)
      }))
  })
})

const eoResume = resume()

/** An exactly-once writer whose failure handler hands each routed row to `onRouted`. */
const eoWriterWith = (fake: Fake.FakeBigQuery, onRouted: (f: BigQueryFailure.BigQueryFailure) => void) =>
  Effect.gen(function*() {
    return yield* BigQuerySink.writer({
      table: yield* destination(fake),
      serializer: yield* serializer,
      writeMethod: small,
      failureHandler: FailureHandler.deadLetter(
        Sink.forEach((f: BigQueryFailure.BigQueryFailure) => Effect.sync(() => onRouted(f)))
      ),
      checkpoint: { resume: yield* eoResume }
    })
  })
