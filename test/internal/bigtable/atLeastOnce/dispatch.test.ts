/**
 * Re-sending: entries of a table the writer no longer tracks are a defect that fails the writer
 * (the core latches a dying owner step), never entries dropped while still counted outstanding.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import * as dispatch from "../../../../src/internal/bigtable/atLeastOnce/dispatch.ts"
import type { Item } from "../../../../src/internal/bigtable/atLeastOnce/prepare.ts"
import type { State } from "../../../../src/internal/bigtable/atLeastOnce/state.ts"

describe("dispatch.resend", () => {
  it.effect("dies, naming the table, when an entry's table is no longer tracked", () =>
    Effect.gen(function*() {
      // resend reads only `dests` before it sends: an empty writer state is enough
      const st = { dests: new Map() } as unknown as State<never, never, never>
      const item = { key: "projects/p/instances/i/tables/gone", isolated: false } as unknown as Item
      const exit = yield* Effect.exit(dispatch.resend(st, [item]))
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), "a defect, not a silent drop")
      assert.include(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "", "tables/gone")
    }))
})
