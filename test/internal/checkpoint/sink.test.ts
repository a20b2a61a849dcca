/**
 * The exactly-once sink form on the toy backend: checkpoints every N records or on a timer, always
 * at the end of input, at the position of the last record written; the `checkpoint` option's
 * decoding into `SinkConfigError`s.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Cause, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Queue, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as checkpoint from "../../../src/internal/checkpoint/protocol.ts"
import * as checkpointSink from "../../../src/internal/checkpoint/sink.ts"
import { Checkpoint, CheckpointStore } from "../../../src/Sink.ts"
import { FailureHandler } from "../../../src/Sink/FailureHandler.ts"
import type { Writer } from "../../../src/Sink/Writer.ts"
import * as toy from "../core/toyBackend.ts"

/** A writer on the toy backend whose checkpoints are logged (position and what was accepted). */
const logged = (service: toy.Service, checkpoints: Array<string>) =>
  Effect.map(toy.make({ service, handler: FailureHandler.failJob }), (w): Writer<string, unknown, number> => ({
    ...w,
    checkpoint: (position) =>
      Effect.tap(w.flush, () => Effect.sync(() => void checkpoints.push(`${position}@${service.accepted.length}`)))
  }))

/** A participant with nothing to commit: the protocol's drain, save and latch are what is tested. */
const participant: checkpoint.Participant<number, unknown> = {
  commitSchema: Schema.Int,
  prepare: Effect.succeed([]),
  commit: () => Effect.void,
  restore: () => Effect.void
}

const record = (i: number) => `t:r${i}`
const positionOf = (r: string) => Number(r.slice(3)) + 1
const position = (a: string) => a.length

/** The sink form's `checkpoint` decode. */
const decodeSinkForm = (input: unknown) => checkpointSink.decode(input, "sink", "an exactly-once method")

describe("checkpoint sink", () => {
  it.effect("every N records, at chunk ends, and once more at the end of input", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const checkpoints: Array<string> = []
      const sink = checkpointSink.make(Effect.map(logged(service, checkpoints), (writer) => ({
        writer,
        every: { _tag: "Records" as const, records: 4 },
        position: positionOf
      })))
      const summary = yield* Stream.range(0, 9).pipe(Stream.rechunk(3), Stream.map(record), Stream.run(sink))
      // chunks [0-2] [3-5] [6-8] [9]: 6 records by the second chunk, 4 more by the last, then the end
      assert.deepStrictEqual(checkpoints, ["6@6", "10@10"])
      assert.strictEqual(summary.recordsWritten, 10)
    }))

  it.effect("the end of input checkpoints what the last checkpoint did not cover", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const checkpoints: Array<string> = []
      const sink = checkpointSink.make(Effect.map(logged(service, checkpoints), (writer) => ({
        writer,
        every: { _tag: "Records" as const, records: 100 },
        position: positionOf
      })))
      yield* Stream.range(0, 4).pipe(Stream.map(record), Stream.run(sink))
      assert.deepStrictEqual(checkpoints, ["5@5"])
      yield* Stream.empty.pipe(Stream.run(sink))
      assert.deepStrictEqual(checkpoints, ["5@5"], "nothing written: no checkpoint")
    }))

  it.effect("on a timer, only when something was written since the last checkpoint", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const checkpoints: Array<string> = []
      const input = yield* Queue.unbounded<string, Cause.Done>()
      const sink = checkpointSink.make(Effect.map(logged(service, checkpoints), (writer) => ({
        writer,
        every: { _tag: "Interval" as const, interval: Duration.seconds(1) },
        position: positionOf
      })))
      const fiber = yield* Stream.fromQueue(input).pipe(Stream.run(sink), Effect.forkChild)
      yield* Queue.offerAll(input, [record(0), record(1)])
      yield* TestClock.adjust("1 second")
      yield* Effect.yieldNow
      yield* TestClock.adjust("1 second")
      yield* Queue.offer(input, record(2))
      yield* TestClock.adjust("1 second")
      yield* Queue.end(input)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(checkpoints.map((c) => c.split("@")[0]), ["2", "3"])
    }))

  it.effect("input that ends during a timer checkpoint waits for it, then takes the final one", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const saves: Array<unknown> = []
      const saving = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // A store whose first save holds until released: the timer's checkpoint holds the lock there.
      const store = Layer.effect(
        CheckpointStore,
        Effect.map(CheckpointStore, (inner) =>
          CheckpointStore.of({
            load: inner.load,
            claim: inner.claim,
            save: (writerId, saved, expected) =>
              Effect.gen(function*() {
                if (saves.length === 0) {
                  yield* Deferred.succeed(saving, undefined)
                  yield* Deferred.await(release)
                }
                yield* inner.save(writerId, saved, expected)
                saves.push(saved.position)
              })
          }))
      ).pipe(Layer.provide(CheckpointStore.memory))
      const input = yield* Queue.unbounded<string, Cause.Done>()
      const run = Effect.gen(function*() {
        const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Int })
        const sink = checkpointSink.make(Effect.gen(function*() {
          const base = yield* toy.make({ service, handler: FailureHandler.failJob })
          const writer = yield* checkpoint.make({ name: "ToySink", writer: base, resume, participant })
          return { writer, every: { _tag: "Interval" as const, interval: Duration.seconds(1) }, position: positionOf }
        }))
        return yield* Stream.fromQueue(input).pipe(Stream.run(sink))
      }).pipe(Effect.provide(store))
      const fiber = yield* Effect.forkChild(Effect.exit(run))
      yield* Queue.offerAll(input, [record(0), record(1)])
      yield* TestClock.adjust("1 second")
      yield* Deferred.await(saving)
      // the input ends while the timer's checkpoint is saving
      yield* Queue.end(input)
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      yield* Deferred.succeed(release, undefined)
      const exit = yield* Fiber.join(fiber)
      assert.isTrue(Exit.isSuccess(exit), `the run must succeed, was ${String(exit)}`)
      assert.deepStrictEqual(saves, [2], "the timer's checkpoint covered everything: no second save")
    }))

  it.effect("the checkpoint option is decoded into SinkConfigErrors naming its field", () =>
    Effect.gen(function*() {
      const resume = yield* Checkpoint.resume({ writerId: "w", positionSchema: Schema.Int })
      const ok = yield* decodeSinkForm({ resume, every: 10, position })
      assert.deepStrictEqual(ok.every, { _tag: "Records", records: 10 })
      const timed = yield* decodeSinkForm({ resume, every: "2 seconds", position })
      assert.deepStrictEqual(timed.every, { _tag: "Interval", interval: Duration.seconds(2) })
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [undefined, "checkpoint", "is required"],
        [{ resume, every: 0, position }, "checkpoint.every", "at least 1"],
        [{ resume, every: 1.5, position }, "checkpoint.every", "integer"],
        [{ resume, every: "0 millis", position }, "checkpoint.every", "at least 1 ms"],
        [{ resume, every: true, position }, "checkpoint.every", "number of records or a duration"],
        [{ resume, every: 1, position: 3 }, "checkpoint.position", "must be a function"],
        [{ resume: { writerId: "w" }, every: 1, position }, "checkpoint.resume", "Checkpoint.resume"],
        [{ resume, every: 1, position, store: 1 }, "checkpoint.store", "is not an option"]
      ]
      for (const [input, path, message] of cases) {
        const error = yield* Effect.flip(decodeSinkForm(input))
        assert.strictEqual(error.path, path)
        assert.include(error.message, message)
      }
      assert.isTrue(Option.isNone(resume.position))
    }).pipe(Effect.provide(CheckpointStore.memory)))
})
