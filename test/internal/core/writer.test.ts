/**
 * The writer core's own rules, on a toy backend: the failure latch, barrier ordering, the handler's
 * lifecycle (flushed once per barrier, once at close, never after a failure), `recordsFailed`
 * counted once the handler dropped the record, retries, and gauges returned by delta at close.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Metric, Option, Ref, Schedule, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as writer from "../../../src/internal/core/writer.ts"
import type { FailedElement } from "../../../src/Sink/FailedElement.ts"
import { FailureHandler } from "../../../src/Sink/FailureHandler.ts"
import { stepUntil } from "../../support/waiting.ts"
import * as toy from "./toyBackend.ts"

const logging = (log: Array<string>, handle?: (f: FailedElement) => Effect.Effect<void, unknown>) =>
  FailureHandler.make({
    open: Effect.sync(() => void log.push("open")),
    handle: (f: FailedElement) =>
      Effect.andThen(handle?.(f) ?? Effect.void, Effect.sync(() => void log.push(`handle ${f.message}`))),
    flush: Effect.sync(() => void log.push("flush")),
    close: Effect.sync(() => void log.push("close"))
  })

/** Lets the owner fiber take what was offered, and 20 ms pass on the TestClock (ticks, batch delays). */
const settle = TestClock.adjust("20 millis")

/** Waits until `condition` holds (the owner got to it), in 5 ms steps of the TestClock; dies after two seconds of it. */
const eventually = (condition: () => boolean) => stepUntil(condition, { step: "5 millis", steps: 400 })

/**
 * The real-clock forms, for the tests that probe a blocked wait with a timeout (a write that would
 * hang, a tick a minute away at start).
 */
const settleLive = Effect.sleep("20 millis")
const eventuallyLive = (condition: () => boolean) =>
  Effect.suspend(() => (condition() ? Effect.void : Effect.fail("not yet"))).pipe(
    Effect.retry(Schedule.spaced("5 millis")),
    Effect.timeout("2 seconds"),
    Effect.orDie
  )

const gaugeValue = (metric: Metric.Gauge<number>) => Effect.map(Metric.value(metric), (state) => state.value)

describe("writer core", () => {
  it.effect("a fatal outcome is latched: the flush, and every later write and flush, fail with it", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const w = yield* toy.make({ service, handler: logging([]) })
      yield* w.write(["t:a", "t:fatal1"])
      const first = yield* Effect.flip(w.flush)
      assert.deepStrictEqual(first, new toy.ToyError({ reason: "fatal fatal1" }))
      assert.strictEqual(yield* Effect.flip(w.write(["t:b"])), first)
      assert.strictEqual(yield* Effect.flip(w.flush), first)
      assert.deepStrictEqual(service.accepted, ["a"])
    }).pipe(Effect.scoped))

  it.effect("flush returns once every earlier record is written or routed, then flushes the handler", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      const log: Array<string> = []
      const w = yield* toy.make({ service, handler: logging(log) })
      yield* w.write(["t:a", "t:b", "t:rej1", "t:c", "t:bad1"])
      const flushing = yield* Effect.forkChild(w.flush)
      yield* eventually(() => log.length === 2 && service.calls === 2)
      yield* settle
      assert.isUndefined(flushing.pollUnsafe(), "the barrier waits for the held calls")
      assert.deepStrictEqual(log, ["open", "handle unserializable"])
      yield* Deferred.succeed(service.hold, undefined)
      yield* Fiber.join(flushing)
      assert.deepStrictEqual(log, ["open", "handle unserializable", "handle rejected", "flush"])
      const summary = yield* w.summary
      assert.deepStrictEqual([summary.recordsWritten, summary.recordsFailed], [3, 2])
    }).pipe(Effect.scoped))

  it.effect("the handler is flushed once per barrier and once at close, not again after a last flush", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const scope = yield* Scope.make()
      const w = yield* toy.make({ service: toy.makeService(), handler: logging(log) }).pipe(Scope.provide(scope))
      yield* w.write(["t:a"])
      yield* w.flush
      yield* w.flush
      yield* w.write(["t:b"])
      yield* w.flush
      assert.strictEqual(log.filter((l) => l === "flush").length, 3)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(log.filter((l) => l === "flush").length, 3, "nothing written since: no flush at close")
      assert.strictEqual(log.at(-1), "close")

      const log2: Array<string> = []
      const scope2 = yield* Scope.make()
      const w2 = yield* toy.make({ service: toy.makeService(), handler: logging(log2) }).pipe(Scope.provide(scope2))
      yield* w2.write(["t:a", "t:b", "t:c"])
      yield* Scope.close(scope2, Exit.void)
      assert.deepStrictEqual(log2, ["open", "flush", "close"], "closing after success is one barrier")
    }))

  it.effect("closing after a failure releases without flushing", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const service = toy.makeService()
      const scope = yield* Scope.make()
      const w = yield* toy.make({ service, handler: logging(log) }).pipe(Scope.provide(scope))
      yield* w.write(["t:fatal1", "t:x"])
      assert.isTrue(Exit.isFailure(yield* Effect.exit(w.flush)))
      yield* w.write(["t:y"]).pipe(Effect.exit)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(log, ["open", "close"])
    }))

  it.effect("a call that dies fails the writer: flush fails with the defect, and closing the scope returns", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const scope = yield* Scope.make()
      const w = yield* toy.make({ service: toy.makeService(), handler: logging(log) }).pipe(Scope.provide(scope))
      yield* w.write(["t:a", "t:die1"])
      const exit = yield* w.flush.pipe(Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), "the flush fails with the call's defect")
      assert.isTrue(Exit.isFailure(yield* Effect.exit(w.write(["t:b"]))), "later writes fail with it")
      const closed = yield* Scope.close(scope, Exit.void).pipe(Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isSuccess(closed), "closing the scope after success does not hang")
      assert.deepStrictEqual(log, ["open", "close"])
    }))

  it.live("a barrier step that dies (evictIdle) fails the writer: the flush and later writes fail, none hangs", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const scope = yield* Scope.make()
      const w = yield* toy.make({ service, handler: logging([]) }).pipe(Scope.provide(scope))
      yield* eventuallyLive(() => service.evictions === 1) // the first tick's eviction; the next is a minute away
      service.evictDies = true
      yield* w.write(["t:a"])
      const exit = yield* w.flush.pipe(Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), "the flush fails with the defect")
      const later = yield* w.write(["t:b"]).pipe(Effect.andThen(w.flush), Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isFailure(later) && Cause.hasDies(later.cause), "later writes and flushes fail with it")
      const closed = yield* Scope.close(scope, Exit.void).pipe(Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isSuccess(closed), "closing the scope does not hang")
    }))

  it.effect("an owner fiber that stops (its scope closed) fails later writes and flushes instead of hanging them", () =>
    Effect.gen(function*() {
      const outer = yield* Scope.make()
      const w = yield* toy.make({ service: toy.makeService(), handler: logging([]) }).pipe(Scope.provide(outer))
      yield* w.write(["t:a"])
      yield* w.flush
      yield* Scope.close(outer, Exit.interrupt(0))
      const exit = yield* w.write(["t:b"]).pipe(Effect.andThen(w.flush), Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isFailure(exit) && !Cause.hasFails(exit.cause), "the stopped owner is the failure")
      assert.isFalse(
        Exit.isFailure(exit) && Cause.pretty(exit.cause).includes("TimeoutError"),
        "not a timeout: nothing hangs"
      )
    }))

  it.effect("a write waiting for in-flight permits ends with the writer's failure (its owner stopped), none hangs", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      const outer = yield* Scope.make()
      const w = yield* toy.make({ service, handler: logging([]), maxUnits: 1, batchSize: 1 }).pipe(
        Scope.provide(outer)
      )
      yield* w.write(["t:a"]) // its call is held: the one permit stays taken
      const blocked = yield* Effect.forkChild(w.write(["t:b"]))
      yield* eventually(() => service.calls === 1)
      yield* settle
      assert.isUndefined(blocked.pollUnsafe(), "the second write waits for the permit")
      yield* Scope.close(outer, Exit.interrupt(0))
      // the 2 s bound on the TestClock: moved once, it fires only for a write that still hangs
      yield* Effect.forkChild(TestClock.adjust("2 seconds"))
      const exit = yield* Fiber.await(blocked).pipe(Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isSuccess(exit), "the waiting write ended")
      assert.isTrue(Exit.isSuccess(exit) && Exit.isFailure(exit.value), "with the failure, not a success")
    }))

  it.effect("a write waiting for a staging place ends with the writer's failure, none hangs", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const outer = yield* Scope.make()
      const w = yield* toy.make({
        service: toy.makeService(),
        handler: logging([], () => Deferred.await(gate)),
        maxUnits: 100,
        batchSize: 100
      }).pipe(Scope.provide(outer))
      yield* w.write(["t:bad0"]) // the handler holds the owner: no slice is taken
      yield* settle
      for (let i = 0; i < writer.maxStagedSlices; i++) yield* w.write([`t:a${i}`])
      const blocked = yield* Effect.forkChild(w.write(["t:late"]))
      yield* settle
      assert.isUndefined(blocked.pollUnsafe(), "the write waits for a staging place")
      yield* Scope.close(outer, Exit.interrupt(0)).pipe(Effect.forkChild)
      // the 2 s bound on the TestClock: moved once, it fires only for a write that still hangs
      yield* Effect.forkChild(TestClock.adjust("2 seconds"))
      const exit = yield* Fiber.await(blocked).pipe(Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isSuccess(exit) && Exit.isFailure(exit.value), "the waiting write failed, it did not hang")
      yield* Deferred.succeed(gate, undefined)
    }))

  it.live("a write interrupted while the command queue is full gives its permit back", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const log: Array<string> = []
      const handler = logging(log, () => Deferred.await(gate))
      const w = yield* toy.make({ service: toy.makeService(), handler, maxUnits: 1100, batchSize: 1100 })
      yield* w.write(["t:bad0"]) // the handler holds the owner: nothing leaves the queue
      yield* settleLive
      // fill the queue with routed records (they take no permit and no staging place)
      // (100 ms: a write that does not block ends long before; one that the scheduler yields and a loaded
      // machine delays must not be taken for one that blocks)
      for (let i = 1; i <= 1024; i++) {
        if (Option.isNone(yield* w.write([`t:bad${i}`]).pipe(Effect.timeoutOption("100 millis")))) break
      }
      // a write that took its permit and then has to wait to offer is interrupted (by its timeout)
      const interrupted = Option.isNone(yield* w.write(["t:a0"]).pipe(Effect.timeoutOption("100 millis")))
      assert.isTrue(interrupted, "a write waited on the full queue and was interrupted")
      yield* Deferred.succeed(gate, undefined)
      yield* w.flush.pipe(Effect.timeout("1 second"), Effect.orDie)
      const all = Array.from({ length: 1100 }, (_, i) => `t:b${i}`)
      const exit = yield* w.write(all).pipe(Effect.timeout("1 second"), Effect.exit)
      assert.isTrue(Exit.isSuccess(exit), "every permit is free again: a write of maxUnits is admitted")
    }))

  it.live("ticks do not pile up while the owner is busy: at most one waits in the queue", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const handler = logging([], () => Deferred.await(gate))
      const w = yield* toy.make({ service: toy.makeService(), handler, maxUnits: 2000, batchSize: 2000 })
      yield* w.write(["t:bad0"]) // the handler holds the owner
      yield* Effect.sleep("550 millis") // five ticks
      let admitted = 0
      // routed records: each write is one command (slices would wait on the staging bound first)
      for (let i = 1; i <= 2 * 1024; i++) {
        if (Option.isNone(yield* w.write([`t:bad${i}`]).pipe(Effect.timeoutOption("100 millis")))) break
        admitted++
      }
      assert.isAtLeast(admitted, 1023, "the queue holds the writes and one tick")
      yield* Deferred.succeed(gate, undefined)
    }))

  it.live("at most maxStagedSlices slices wait for the owner; a write waiting for a place gives its permit back", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const service = toy.makeService()
      const handler = logging([], () => Deferred.await(gate))
      const w = yield* toy.make({ service, handler, maxUnits: 100, batchSize: 100 })
      yield* w.write(["t:bad0"]) // the handler holds the owner: no slice is taken
      yield* settleLive
      let staged = 0
      for (let i = 0; i < 10; i++) {
        if (Option.isNone(yield* w.write([`t:a${i}`]).pipe(Effect.timeoutOption("100 millis")))) break
        staged++
      }
      assert.strictEqual(staged, writer.maxStagedSlices, "the next slice waits until the owner takes one")
      yield* Deferred.succeed(gate, undefined)
      yield* w.flush.pipe(Effect.timeout("1 second"), Effect.orDie)
      const all = Array.from({ length: 100 }, (_, i) => `t:b${i}`)
      const exit = yield* w.write(all).pipe(Effect.timeout("1 second"), Effect.exit)
      assert.isTrue(Exit.isSuccess(exit), "the interrupted write gave its permit back: a write of maxUnits is admitted")
      yield* w.flush.pipe(Effect.timeout("1 second"), Effect.orDie)
      assert.strictEqual(service.accepted.length, writer.maxStagedSlices + 100)
    }))

  it.live("admission waits on the backend's gate before preparing, and fails with the writer", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const open = yield* Deferred.make<void>()
      const w = yield* toy.make({ service, handler: logging([]), admissionGate: open })
      const waiting = yield* w.write(["t:a"]).pipe(Effect.timeoutOption("50 millis"))
      assert.isTrue(Option.isNone(waiting), "the write waits while the gate is closed")
      assert.strictEqual(service.prepared, 0, "nothing was prepared meanwhile")
      yield* Deferred.succeed(open, undefined)
      yield* w.write(["t:b"]).pipe(Effect.timeout("1 second"), Effect.orDie)
      yield* w.flush.pipe(Effect.timeout("1 second"), Effect.orDie)
      assert.deepStrictEqual(service.accepted, ["b"])
    }))

  it.effect("closing after an interruption releases without flushing", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const scope = yield* Scope.make()
      const w = yield* toy.make({ service: toy.makeService(), handler: logging(log) }).pipe(Scope.provide(scope))
      yield* w.write(["t:a"])
      yield* Scope.close(scope, Exit.interrupt(0))
      assert.deepStrictEqual(log, ["open", "close"])
    }))

  it.effect("recordsFailed counts a record once the handler has dropped it, and never when it fails", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const handling = yield* Deferred.make<void>()
      const service = toy.makeService()
      const handler = logging([], () => Effect.andThen(Deferred.succeed(handling, undefined), Deferred.await(gate)))
      const w = yield* toy.make({ service, handler })
      yield* w.write(["t:bad1"])
      yield* Deferred.await(handling)
      assert.strictEqual((yield* w.summary).recordsFailed, 0, "handled, not yet dropped")
      yield* Deferred.succeed(gate, undefined)
      yield* w.flush
      assert.strictEqual((yield* w.summary).recordsFailed, 1)

      const refusing = logging([], (f) => Effect.fail(`refused ${f.destination}`))
      const w2 = yield* toy.make({ service: toy.makeService(), handler: refusing })
      yield* w2.write(["t:a", "t:bad1"])
      assert.strictEqual(yield* Effect.flip(w2.flush), "refused t")
      assert.strictEqual((yield* w2.summary).recordsFailed, 0)
    }).pipe(Effect.scoped))

  it.live("a retry verdict re-sends after the budget's wait and counts a retry", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      const w = yield* toy.make({ service, handler: logging([]) })
      yield* w.write(["t:flaky1", "t:a"])
      yield* w.flush
      const summary = yield* w.summary
      assert.deepStrictEqual([summary.recordsWritten, summary.retries], [2, 1])
      assert.deepStrictEqual(service.accepted.toSorted(), ["a", "flaky1"])
    }).pipe(Effect.scoped))

  it.effect("admission waits for in-flight permits (backpressure) and sends open batches meanwhile", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      const w = yield* toy.make({ service, handler: logging([]), maxUnits: 3, batchSize: 10 })
      yield* w.write(["t:a", "t:b", "t:c"])
      const blocked = yield* Effect.forkChild(w.write(["t:d"]))
      yield* eventually(() => service.calls === 1)
      yield* settle
      assert.isUndefined(blocked.pollUnsafe(), "the fourth record waits")
      assert.strictEqual(service.calls, 1, "the open batch was sent to free its permits")
      yield* Deferred.succeed(service.hold, undefined)
      yield* Fiber.join(blocked)
      yield* w.flush
      assert.strictEqual((yield* w.summary).recordsWritten, 4)
    }).pipe(Effect.scoped))

  it.effect("at most maxRequests calls are in flight; the others start, in order, as answers come back", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      const w = yield* toy.make({ service, handler: logging([]), maxRequests: 1, batchSize: 2 })
      yield* w.write(["t:a", "t:b", "t:c", "t:d", "t:e", "t:f"])
      yield* eventually(() => service.calls > 0)
      yield* settle
      assert.strictEqual(service.calls, 1)
      yield* Deferred.succeed(service.hold, undefined)
      yield* w.flush
      assert.strictEqual(service.calls, 3)
      assert.deepStrictEqual(service.accepted, ["a", "b", "c", "d", "e", "f"])
    }).pipe(Effect.scoped))

  it.effect("gauges move by deltas: two writers add up, and each takes its share back at close", () =>
    Effect.gen(function*() {
      const inFlight = toy.gauge("inFlight")
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      const scope1 = yield* Scope.make()
      const scope2 = yield* Scope.make()
      const w1 = yield* toy.make({ service, handler: logging([]), inFlight }).pipe(Scope.provide(scope1))
      const w2 = yield* toy.make({ service, handler: logging([]), inFlight }).pipe(Scope.provide(scope2))
      yield* w1.write(["t:a", "t:b", "t:c"])
      yield* w2.write(["t:d", "t:e"])
      yield* eventually(() => service.calls === 2)
      assert.strictEqual(yield* gaugeValue(inFlight), 5)
      yield* Scope.close(scope1, Exit.interrupt(0))
      assert.strictEqual(yield* gaugeValue(inFlight), 2)
      yield* Deferred.succeed(service.hold, undefined)
      yield* w2.flush
      assert.strictEqual(yield* gaugeValue(inFlight), 0)
      yield* Scope.close(scope2, Exit.void)
      assert.strictEqual(yield* gaugeValue(inFlight), 0)
    }))

  it.effect("summary answers at once, without queueing behind a held barrier", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      const counted = yield* Ref.make(0)
      const w = yield* toy.make({ service, handler: logging([], () => Ref.update(counted, (n) => n + 1)) })
      yield* w.write(["t:skip1", "t:bad1", "t:a"])
      const flushing = yield* Effect.forkChild(w.flush)
      yield* eventually(() => service.calls === 1)
      const summary = yield* w.summary
      assert.deepStrictEqual([summary.recordsSkipped, summary.recordsFailed, summary.recordsWritten], [1, 1, 0])
      yield* Deferred.succeed(service.hold, undefined)
      yield* Fiber.join(flushing)
      assert.strictEqual(yield* Ref.get(counted), 1)
    }).pipe(Effect.scoped))

  it.effect("idle destinations are looked at once a minute on the tick, without any barrier", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      yield* toy.make({ service, handler: logging([]) })
      yield* TestClock.adjust("30 seconds")
      assert.strictEqual(service.evictions, 0)
      yield* TestClock.adjust("31 seconds")
      assert.strictEqual(service.evictions, 1)
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual(service.evictions, 2)
    }).pipe(Effect.scoped))

  it.effect("an idle writer's ticker sleeps (a tick a minute, for eviction); an admission wakes it for its batch delay", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.batchDelayMillis = 250
      const w = yield* toy.make({ service, handler: logging([]), batchSize: 100 })
      yield* TestClock.adjust("1 hour")
      assert.isAtMost(service.ticks, 61, `ticks in an idle hour: ${service.ticks} (every 100 ms would be 36,000)`)
      assert.isAtLeast(service.evictions, 59, "idle eviction still runs once a minute")
      // an open batch (100 records make one) is cut by the tick once open for the batch delay
      const before = service.ticks
      const write = yield* Effect.forkChild(w.write(["t:a", "t:b"]))
      yield* TestClock.adjust("200 millis")
      assert.deepStrictEqual(service.accepted, [], "not before the batch delay")
      yield* TestClock.adjust("200 millis")
      assert.deepStrictEqual(service.accepted, ["a", "b"], "cut by a tick after the batch delay")
      yield* Fiber.join(write)
      assert.isAtLeast(
        service.ticks - before,
        2,
        `the ticker ticks again while records are outstanding: ${before} then ${service.ticks}`
      )
      // settled: asleep again
      const settled = service.ticks
      yield* TestClock.adjust("30 minutes")
      assert.isAtMost(service.ticks - settled, 31)
    }).pipe(Effect.scoped))

  it.effect("routed records' payloads count in the in-flight bytes until the handler has them", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const handler = logging([], () => Deferred.await(gate))
      const w = yield* toy.make({ service: toy.makeService(), handler, maxBytes: 250 })
      // each routed record holds 100 bytes; the handler holds the owner, so none is given back
      yield* w.write(["t:big0"])
      yield* w.write(["t:big1"])
      const third = yield* Effect.forkChild(w.write(["t:big2"]))
      yield* settle
      assert.isUndefined(third.pollUnsafe(), "a third routed payload would take the bytes past the bound")
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(third)
      yield* w.flush
      // every permit is back: a write of the whole bound is admitted at once
      const all = Array.from({ length: 25 }, (_, i) => `t:a${i}`)
      const exit = yield* w.write(all).pipe(Effect.timeout("1 second"), Effect.exit)
      assert.isTrue(Exit.isSuccess(exit), "the routed records' bytes were given back")
      assert.strictEqual((yield* w.summary).recordsFailed, 3)
    }).pipe(Effect.scoped))

  it.effect("a barrier waits for what was written before it, not for what a busy source wrote after it", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.hold = yield* Deferred.make<void>()
      service.slow = yield* Deferred.make<void>()
      const log: Array<string> = []
      const w = yield* toy.make({ service, handler: logging(log) })
      yield* w.write(["t:a", "t:b"])
      const flushing = yield* Effect.forkChild(w.flush)
      // the barrier reaches the owner before what is written next
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      // a source that never pauses: records written after the barrier, still in flight when the
      // ones before it are answered
      yield* w.write(["t:slow1", "t:slow2"])
      yield* Deferred.succeed(service.hold, undefined)
      for (let i = 0; i < 1000 && flushing.pollUnsafe() === undefined; i++) yield* Effect.yieldNow
      assert.isDefined(flushing.pollUnsafe(), "the flush returns while later records are in flight")
      yield* Fiber.join(flushing)
      assert.deepStrictEqual(service.accepted, ["a", "b"])
      assert.deepStrictEqual(log, ["open", "flush"])
      // the next barrier covers the later records
      const second = yield* Effect.forkChild(w.flush)
      for (let i = 0; i < 100; i++) yield* Effect.yieldNow
      assert.isUndefined(second.pollUnsafe(), "the next flush waits for them")
      yield* Deferred.succeed(service.slow, undefined)
      yield* Fiber.join(second)
      assert.deepStrictEqual(service.accepted, ["a", "b", "slow1", "slow2"])
      assert.deepStrictEqual((yield* w.summary).recordsWritten, 4)
    }).pipe(Effect.scoped))
})

describe("writer core: calls started on no fiber (Delivery.start)", () => {
  it.effect("an answer given before start returns is taken: the records are written and the flush returns", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.startNow = "sync"
      const w = yield* toy.make({ service, handler: logging([]) })
      yield* w.write(["t:a", "t:b", "t:rej1", "t:c"])
      yield* w.flush
      assert.deepStrictEqual(service.accepted, ["a", "b", "c"])
      assert.strictEqual(service.calls, 2)
      const summary = yield* w.summary
      assert.deepStrictEqual([summary.recordsWritten, summary.recordsFailed], [3, 1])
    }).pipe(Effect.scoped))

  it.effect("more answers at once than the command queue holds: those past it are taken from the overflow", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.startNow = "held"
      const n = writer.commandCapacity + 500
      const w = yield* toy.make({ service, handler: logging([]), batchSize: 1, maxUnits: 2 * n })
      yield* w.write(Array.from({ length: n }, (_, i) => `t:r${i}`))
      yield* eventually(() => service.held.length === n)
      // every answer in one turn, on no fiber: the queue fills, the rest overflow
      toy.answerHeld(service)
      yield* w.flush
      assert.strictEqual(service.accepted.length, n)
      assert.strictEqual((yield* w.summary).recordsWritten, n)
    }).pipe(Effect.scoped))

  it.effect("closing the writer (interrupted) cancels the calls not yet answered; a later answer is dropped", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.startNow = "held"
      const scope = yield* Scope.make()
      const w = yield* Scope.provide(toy.make({ service, handler: logging([]) }), scope)
      yield* w.write(["t:a", "t:b", "t:c", "t:d"])
      yield* eventually(() => service.held.length === 2)
      yield* Scope.close(scope, Exit.interrupt(0))
      assert.strictEqual(service.cancelled, 2)
      toy.answerHeld(service)
      assert.deepStrictEqual(service.accepted, [])
    }))

  it.effect("a start that declines runs the call on a fiber", () =>
    Effect.gen(function*() {
      const service = toy.makeService()
      service.startNow = "refuse"
      const w = yield* toy.make({ service, handler: logging([]) })
      yield* w.write(["t:a", "t:b"])
      yield* w.flush
      assert.deepStrictEqual(service.accepted, ["a", "b"])
      assert.strictEqual(service.calls, 1)
    }).pipe(Effect.scoped))
})
