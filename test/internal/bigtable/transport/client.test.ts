/**
 * The local deadline of a call started at once (`runCall`'s fast path), against a transport that
 * only records: an interruption at any point of the call cancels the started call and clears its
 * deadline, however the run loop happens to yield around the start. And a listener its transport keeps
 * past the call (as Node keeps a stream) keeps neither the request's entries nor the caller's records.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, References } from "effect"
import { TestClock } from "effect/testing"
import type { EntryStatus } from "../../../../src/Bigtable/BigtableClient.ts"
import { Mutation, RowMutationEntry } from "../../../../src/Bigtable/index.ts"
import * as client from "../../../../src/internal/bigtable/transport/client.ts"
import type {
  CallListener,
  Cancel,
  StartCall,
  SyncStart
} from "../../../../src/internal/bigtable/transport/dataCall.ts"
import * as DeadlineKeeper from "../../../../src/internal/wire/deadlineKeeper.ts"
import { collectUntilGone } from "../../../support/collectGarbage.ts"

/** A transport whose calls start at once, never answer, and record how they were cancelled. */
const recording = (deadlines: DeadlineKeeper.DeadlineKeeper) => {
  const cancels: Array<Array<string>> = []
  const startNow = (): Cancel => {
    const reasons: Array<string> = []
    cancels.push(reasons)
    return (reason) => void reasons.push(reason)
  }
  const start: StartCall = Object.assign(() => Effect.die("the waiting path is not taken here"), {
    local: { startNow, deadlines }
  })
  return { start, cancels }
}

/**
 * MutateRows calls through `start`, each interrupted: the run loop yields after 2-40 operations (1 never
 * runs an operation) and the interruption comes after 0-`maxTurns` turns, so it lands at every step of the
 * start. Every call that started (`cancels`, one list of cancel reasons a call) was cancelled, once.
 */
const interruptedAtEveryStep = (start: StartCall, cancels: ReadonlyArray<ReadonlyArray<string>>, maxTurns: number) =>
  Effect.gen(function*() {
    const mutate = client.mutateRows(start)
    for (let ops = 2; ops <= 40; ops++) {
      for (let turns = 0; turns <= maxTurns; turns++) {
        const fiber = yield* Effect.forkChild(
          mutate({ tableName: "projects/p/instances/i/tables/t", entries: [], timeout: Duration.minutes(1) }).pipe(
            Effect.provideService(References.MaxOpsBeforeYield, ops)
          )
        )
        for (let i = 0; i < turns; i++) yield* Effect.yieldNow
        yield* Fiber.interrupt(fiber)
      }
    }
    assert.isAbove(cancels.length, 50, "most calls started before their interruption")
    for (const [i, reasons] of cancels.entries()) assert.deepStrictEqual(reasons, ["interrupted"], `call ${i}`)
  })

describe("bigtable client calls started at once", () => {
  it.effect("an interruption anywhere cancels the started call and clears its deadline", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      const { start, cancels } = recording(keeper)
      yield* interruptedAtEveryStep(start, cancels, 3)
      assert.strictEqual(keeper.pending(), 0)
    }))
})

/**
 * A transport whose calls must wait (a connection coming up: a few turns) and then start, never answer,
 * and record how they were cancelled; with `local`, its fast start always finds the connection down.
 */
const waitingTransport = (deadlines: DeadlineKeeper.DeadlineKeeper | undefined) => {
  const cancels: Array<Array<string>> = []
  const call: StartCall = () =>
    Effect.andThen(
      Effect.andThen(Effect.yieldNow, Effect.yieldNow),
      Effect.sync((): Cancel => {
        const reasons: Array<string> = []
        cancels.push(reasons)
        return (reason) => void reasons.push(reason)
      })
    )
  const start: StartCall = deadlines === undefined
    ? call
    : Object.assign(call, { local: { startNow: () => undefined, deadlines } })
  return { start, cancels }
}

describe("bigtable client calls that wait for a connection", () => {
  it.effect.each(["a deadline of its own (grpc-js)", "a local deadline (HTTP/2)"] as const)(
    "with %s: an interruption anywhere cancels the call once it started",
    (kind) =>
      Effect.gen(function*() {
        const keeper = yield* DeadlineKeeper.make
        const { start, cancels } = waitingTransport(kind === "a local deadline (HTTP/2)" ? keeper : undefined)
        yield* interruptedAtEveryStep(start, cancels, 6)
      })
  )
})

/** A transport whose calls start at once and are answered by the test through the listener each got. */
const answerable = (deadlines: DeadlineKeeper.DeadlineKeeper | undefined, down = false) => {
  const calls: Array<{ readonly listener: CallListener; readonly reasons: Array<string> }> = []
  const startNow = (
    _method: string,
    _encode: (reserve: number) => Buffer,
    _routing: string,
    _timeout: Duration.Duration,
    listener: CallListener
  ): Cancel | undefined => {
    if (down) return undefined
    const reasons: Array<string> = []
    calls.push({ listener, reasons })
    return (reason) => void reasons.push(reason)
  }
  const start: StartCall = Object.assign(
    (): Effect.Effect<Cancel> => Effect.die("the fiber's path is not taken here"),
    deadlines === undefined
      ? {
        sync: (m: string, e: (r: number) => Buffer, r: string, t: Duration.Duration, l: CallListener) =>
          startNow(m, e, r, t, l) ?? (() => {})
      }
      : { local: { startNow, deadlines } }
  )
  return { start, calls }
}

const entry = (key: string) => RowMutationEntry.make(key, Mutation.setCell({ family: "f", qualifier: "q", value: key }))

const request = { tableName: "projects/p/instances/i/tables/t", entries: [entry("a"), entry("b")] }

describe("bigtable MutateRows started on no fiber (mutateRowsNow)", () => {
  it.effect.each(["a deadline of its own (grpc-js)", "a local deadline (HTTP/2)"] as const)(
    "with %s: the statuses of the call's end are delivered once, and nothing after a cancel",
    (kind) =>
      Effect.gen(function*() {
        const keeper = yield* DeadlineKeeper.make
        const { calls, start } = answerable(kind === "a local deadline (HTTP/2)" ? keeper : undefined)
        const now = client.mutateRowsNow(start)
        if (now === undefined) return assert.fail("no fiber-less start")
        const delivered: Array<readonly [ReadonlyArray<number | undefined>, boolean]> = []
        const deliver = (statuses: ReadonlyArray<EntryStatus>, expired: boolean) =>
          void delivered.push([statuses.map((s) => s.code), expired])
        assert.isDefined(now(request, Duration.minutes(1), 0, deliver))
        calls[0]?.listener.onEnd(Object.assign(new Error("reset"), { code: 14, details: "reset" }))
        calls[0]?.listener.onEnd(undefined)
        assert.deepStrictEqual(delivered, [[[14, 14], false]])
        const cancel = now(request, Duration.minutes(1), 0, deliver)
        cancel?.()
        calls[1]?.listener.onEnd(undefined)
        assert.strictEqual(delivered.length, 1)
        assert.deepStrictEqual(calls[1]?.reasons, ["interrupted"])
        assert.strictEqual(keeper.pending(), 0)
      })
  )

  it.effect("a local deadline that passes delivers DEADLINE_EXCEEDED for the unanswered entries, expired, and cancels the call", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      const { calls, start } = answerable(keeper)
      const now = client.mutateRowsNow(start)
      const delivered: Array<readonly [ReadonlyArray<number | undefined>, boolean]> = []
      now?.(
        request,
        Duration.seconds(5),
        yield* Clock.currentTimeMillis,
        (statuses, expired) => void delivered.push([statuses.map((s) => s.code), expired])
      )
      assert.strictEqual(keeper.pending(), 1)
      yield* TestClock.adjust("6 seconds")
      assert.deepStrictEqual(delivered, [[[4, 4], true]])
      assert.deepStrictEqual(calls[0]?.reasons, ["deadline"])
      assert.strictEqual(keeper.pending(), 0)
    }))

  it.effect("a transport that cannot start now (a connection down) starts nothing; one with neither start has no such path", () =>
    Effect.gen(function*() {
      const keeper = yield* DeadlineKeeper.make
      const { calls, start } = answerable(keeper, true)
      assert.isUndefined(client.mutateRowsNow(start)?.(request, Duration.minutes(1), 0, () => assert.fail("delivered")))
      assert.deepStrictEqual([calls.length, keeper.pending()], [0, 0])
      assert.isUndefined(client.mutateRowsNow(() => Effect.die("unused")))
    }))
})

/** A request of one entry, known only through the WeakRef to its entries. */
const weakRequest = () => {
  const entries = [entry("k")]
  return {
    call: { tableName: "projects/p/instances/i/tables/t", entries, timeout: Duration.minutes(1) },
    entries: new WeakRef(entries)
  }
}

/** A transport that answers every call at once with no status and keeps its listener (`kept`). */
const keeping = () => {
  const kept: Array<CallListener> = []
  const sync: SyncStart = (_method, encode, _routing, _timeout, listener) => {
    encode(5)
    kept.push(listener)
    listener.onEnd(undefined)
    return () => {}
  }
  const start: StartCall = Object.assign((...call: Parameters<SyncStart>) => Effect.sync(() => sync(...call)), { sync })
  return { start, kept }
}

describe("bigtable client calls' listeners", () => {
  it.effect("a MutateRows call's listener, kept by its transport, keeps no entry", () =>
    Effect.gen(function*() {
      const { kept, start } = keeping()
      const entries = yield* Effect.suspend(() => {
        const made = weakRequest()
        return Effect.map(client.mutateRows(start)(made.call), (statuses) => {
          assert.strictEqual(statuses.length, 1)
          return made.entries
        })
      })
      yield* collectUntilGone(entries)
      assert.strictEqual(kept.length, 1)
      assert.isUndefined(entries.deref())
    }))

  it.effect("a MutateRows call started at once keeps, through its listener, neither its entries nor its caller", () =>
    Effect.gen(function*() {
      const { kept, start } = keeping()
      const now = client.mutateRowsNow(start)
      assert.isDefined(now)
      const delivered: Array<number> = []
      const weak = (() => {
        const { call, entries } = weakRequest()
        const caller = { records: ["r"] }
        now?.(
          call,
          Duration.minutes(1),
          0,
          (statuses) => void delivered.push(statuses.length + caller.records.length)
        )
        return { entries, caller: new WeakRef(caller) }
      })()
      yield* collectUntilGone(weak.entries)
      yield* collectUntilGone(weak.caller)
      assert.deepStrictEqual(delivered, [2])
      assert.strictEqual(kept.length, 1)
      assert.isUndefined(weak.entries.deref())
      assert.isUndefined(weak.caller.deref())
    }))
})
