/**
 * An append started at once (`appendNow.ts`, ADR 0063), against a stub destination and connection:
 * when it declines (the order guard, no open connection), what it writes, and what a commit delivers.
 * The loop an answer other than a commit goes on with is `PendingAppend`'s, tested through the backend.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Result } from "effect"
import type * as AppendNow from "../../../../src/internal/bigquery/storageWrite/appendNow.ts"
import { start } from "../../../../src/internal/bigquery/storageWrite/appendNow.ts"
import type { Destination } from "../../../../src/internal/bigquery/storageWrite/destination.ts"
import type { Step } from "../../../../src/internal/bigquery/storageWrite/verdict.ts"
import type { Connection, Waiter } from "../../../../src/internal/bigquery/transport/connection.ts"
import type { AppendAnswer } from "../../../../src/internal/bigquery/transport/rowErrors.ts"
import { schema } from "../../../BigQuery/sinkFixtures.ts"

const descriptor = new Uint8Array([1])

/** A destination whose slot has `open` as its connection, and the appends written to it. */
const stub = (onFibers: number, open: boolean) => {
  const written: Array<{ readonly body: Uint8Array; readonly answer: Waiter }> = []
  const connection = {
    descriptor,
    isBroken: () => false,
    appendNow: (body: Uint8Array, _offset: number | undefined, answer: Waiter) => void written.push({ body, answer })
  } as unknown as Connection
  const d = {
    key: "p.d.t",
    onFibers,
    slot: { ready: (wanted: Uint8Array) => (open && wanted === descriptor ? connection : undefined) },
    deadlines: { arm: () => () => {} }
  } as unknown as Destination
  return { d, written }
}

const env = {
  settings: { stream: { responseTimeout: Duration.seconds(10) } },
  fork: () => {
    throw new Error("a commit forks nothing")
  }
} as unknown as AppendNow.Env<unknown, never, never>

const started = (d: Destination): AppendNow.Started => ({
  d,
  body: new Uint8Array([10, 1, 7]),
  count: 1,
  bytes: 1,
  descriptor,
  schema,
  progress: undefined
})

const committed: AppendAnswer = {
  ok: true,
  code: undefined,
  message: "",
  storageCode: undefined,
  rowErrors: [],
  updatedSchema: undefined,
  offset: undefined
}

describe("appendNow.start", () => {
  it.effect("declines, writing nothing, while an append of its destination on a fiber is unwritten", () =>
    Effect.gen(function*() {
      const { d, written } = stub(1, true)
      const cancel = yield* start(env, started(d), () => assert.fail("delivered"))
      assert.isUndefined(cancel)
      assert.strictEqual(written.length, 0)
      assert.strictEqual(d.onFibers, 2, "the declined append is counted on fibers until it is written")
    }))

  it.effect("declines, writing nothing, when its destination has no open connection", () =>
    Effect.gen(function*() {
      const { d, written } = stub(0, false)
      assert.isUndefined(yield* start(env, started(d), () => assert.fail("delivered")))
      assert.strictEqual(d.onFibers, 1, "the declined append is counted on fibers until it is written")
      assert.strictEqual(written.length, 0)
    }))

  it.effect("writes the batch at once and delivers its done step once the answer commits it", () =>
    Effect.gen(function*() {
      const { d, written } = stub(0, true)
      const outcomes: Array<Exit.Exit<Step, unknown>> = []
      const request = started(d)
      const cancel = yield* start(env, request, (outcome) => void outcomes.push(outcome))
      assert.isDefined(cancel)
      assert.strictEqual(written.length, 1)
      assert.strictEqual(written[0]?.body, request.body)
      assert.strictEqual(outcomes.length, 0)
      written[0]?.answer(Result.succeed(committed))
      // a second answer (a late deadline) is ignored
      written[0]?.answer(Result.succeed(committed))
      assert.strictEqual(outcomes.length, 1)
      const outcome = outcomes[0]
      assert.isTrue(outcome !== undefined && Exit.isSuccess(outcome))
      if (outcome !== undefined && Exit.isSuccess(outcome) && outcome.value._tag === "done") {
        assert.strictEqual(outcome.value.outcome.written, 1)
        assert.strictEqual(outcome.value.outcome.key, "p.d.t")
      } else assert.fail("not a done step")
    }))

  it.effect("delivers nothing after its cancel", () =>
    Effect.gen(function*() {
      const { d, written } = stub(0, true)
      const cancel = yield* start(env, started(d), () => assert.fail("delivered after its cancel"))
      cancel?.()
      written[0]?.answer(Result.succeed(committed))
    }))
})
