/**
 * The local deadline of a call started at once (`runCall`'s fast path), against a transport that
 * only records: an interruption at any point of the call cancels the started call and clears its
 * deadline, however the run loop happens to yield around the start.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, References } from "effect"
import * as client from "../../../../src/internal/bigtable/transport/client.ts"
import type { Cancel, StartCall } from "../../../../src/internal/bigtable/transport/dataCall.ts"
import * as DeadlineKeeper from "../../../../src/internal/wire/deadlineKeeper.ts"

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
