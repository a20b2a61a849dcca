/**
 * Re-sending: entries of a table the writer no longer tracks are a defect that fails the writer
 * (the core latches a dying owner step), never entries dropped while still counted outstanding. And
 * the two shapes of a request (ADR 0057).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { Mutation, RowMutationEntry } from "../../../../src/Bigtable/index.ts"
import * as dispatch from "../../../../src/internal/bigtable/atLeastOnce/dispatch.ts"
import type { Item } from "../../../../src/internal/bigtable/atLeastOnce/prepare.ts"
import type { State } from "../../../../src/internal/bigtable/atLeastOnce/state.ts"
import * as heap from "../../../../src/internal/bigtable/heapObjects.ts"

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

const entry = (key: string) => RowMutationEntry.make(key, Mutation.deleteFromRow())

describe("dispatch's requests", () => {
  const st = { settings: { appProfileId: "profile" } } as unknown as State<never, never, never>
  const items = [
    { table: { tableName: "projects/p/instances/i/tables/t" }, entry: entry("a"), bytes: 5 },
    { table: { tableName: "projects/p/instances/i/tables/t" }, entry: entry("b"), bytes: 7 }
  ] as unknown as ReadonlyArray<Item>

  it("a call on a fiber gets the public shape in fields of its own: a client's wrapper may spread it", () => {
    const spread = { ...dispatch.publicRequest(st, items) }
    assert.deepStrictEqual(spread, {
      tableName: "projects/p/instances/i/tables/t",
      appProfileId: "profile",
      entries: items.map((i) => i.entry),
      entryByteSizes: [5, 7]
    })
  })

  it("a call started at once reads the items themselves", () => {
    const request = dispatch.mutateRowsRequest(st, items)
    assert.instanceOf(request, heap.SizedMutateRows)
    assert.strictEqual(request instanceof heap.SizedMutateRows ? request.sized : undefined, items)
    assert.deepStrictEqual([request.entries, request.entryByteSizes], [items.map((i) => i.entry), [5, 7]])
  })
})
