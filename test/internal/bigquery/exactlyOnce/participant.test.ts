/**
 * The BigQuery participant of the checkpoint protocol against a stand-in for the writer core: its
 * prepare asks the owner fiber for the open destinations, and every such wait ends; and the commit
 * rules of `FlushRows` case by case.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import type { BigQueryClientService } from "../../../../src/BigQuery/BigQueryClient.ts"
import { BigQueryError, RequestRejected } from "../../../../src/BigQuery/BigQueryError.ts"
import * as Participant from "../../../../src/internal/bigquery/exactlyOnce/participant.ts"
import type { Restored, Streams } from "../../../../src/internal/bigquery/exactlyOnce/stream.ts"
import type { Settings } from "../../../../src/internal/bigquery/options.ts"
import type { OwnerView } from "../../../../src/internal/bigquery/storageWrite/backend.ts"

const terminal = new BigQueryError({
  reason: new RequestRejected({
    method: "AppendRows",
    destination: "p.d.t",
    code: "INVALID_ARGUMENT",
    detail: "a terminal failure between the drain and the prepare's answer",
    cause: undefined
  })
})

/**
 * A core that failed after the drain: as the owner does once its failure is latched, it drops the
 * steps offered to it (the prepare's question is never answered), and its `failure` fails.
 */
const failedCore: OwnerView<BigQueryError> = {
  offer: () => Effect.void,
  failure: Effect.fail(terminal),
  destinations: new Map()
}

// the prepare touches neither the client nor the settings
const client = {} as BigQueryClientService
const settings = {} as Settings<unknown, never, never>

describe("exactly-once participant", () => {
  it.effect("a core failure between the drain and the owner's answer fails the prepare, never hangs it", () =>
    Effect.gen(function*() {
      const streams: Streams = new WeakMap()
      const participant = Participant.make(client, settings, () => failedCore, new Map<string, Restored>(), streams)
      const fiber = yield* participant.prepare.pipe(Effect.timeoutOption("10 seconds"), Effect.exit, Effect.forkChild)
      yield* TestClock.adjust("10 seconds")
      const exit = yield* Fiber.join(fiber)
      assert.isTrue(Exit.isFailure(exit), `the prepare must fail with the core's error, was ${String(exit)}`)
      if (Exit.isFailure(exit)) assert.deepStrictEqual(Exit.findErrorOption(exit), Option.some(terminal))
    }))
})

describe("classifyFlush", () => {
  it("the commit rules", () => {
    assert.strictEqual(Participant.classifyFlush(6, undefined, "CREATE_IF_NEEDED"), "flushed")
    assert.strictEqual(Participant.classifyFlush(3, 8, "CREATE_NEVER"), "flushed")
    assert.strictEqual(Participant.classifyFlush(14, undefined, "CREATE_NEVER"), "retry")
    assert.strictEqual(Participant.classifyFlush(4, undefined, "CREATE_NEVER"), "retry")
    assert.strictEqual(Participant.classifyFlush(7, undefined, "CREATE_IF_NEEDED"), "retry")
    assert.strictEqual(Participant.classifyFlush(7, undefined, "CREATE_NEVER"), "terminal")
    assert.strictEqual(Participant.classifyFlush(5, undefined, "CREATE_IF_NEEDED"), "terminal")
    assert.strictEqual(Participant.classifyFlush(3, undefined, "CREATE_IF_NEEDED"), "terminal")
    assert.strictEqual(Participant.classifyFlush(11, 9, "CREATE_IF_NEEDED"), "terminal")
  })
})
