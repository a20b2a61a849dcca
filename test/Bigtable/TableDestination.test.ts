import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Equal, Exit, Stream } from "effect"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination } from "../../src/Bigtable/index.ts"
import { RecordFailed } from "../../src/Sink.ts"
import { makeFake } from "./fakeBigtable.ts"

// @ts-expect-error: the constructor is protected: destinations are built validated
const unchecked = () => new TableDestination.TableDestination({ projectId: "p", instanceId: "i", tableId: "t" })

describe("TableDestination", () => {
  it.effect("make validates each id under its path", () =>
    Effect.gen(function*() {
      const t = yield* TableDestination.make({ projectId: "p", instanceId: "i", tableId: "t" })
      assert.strictEqual(String(t), "p.i.t")
      assert.strictEqual(t.tableName, "projects/p/instances/i/tables/t")
      assert.strictEqual(t.instanceName, "projects/p/instances/i")
      const slash = yield* Effect.flip(TableDestination.make({ projectId: "p", instanceId: "i", tableId: "a/b" }))
      assert.deepStrictEqual([slash.path, slash.message], ["table.tableId", "must not contain '/', was 'a/b'"])
      const blank = yield* Effect.flip(TableDestination.make({ projectId: "p", instanceId: " ", tableId: "t" }, "dest"))
      assert.deepStrictEqual([blank.path, blank.message], ["dest.instanceId", "must not be blank"])
    }))

  it("resolve validates synchronously: a destination, or an Unroutable verdict naming the id", () => {
    const t = TableDestination.resolve({ projectId: "p", instanceId: "i", tableId: "events_acme" })
    assert.isTrue(TableDestination.isTableDestination(t))
    assert.isTrue(
      Equal.equals(t, TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "events_acme" }))
    )
    const verdict = TableDestination.resolve({ projectId: "p", instanceId: "i", tableId: "events_a/b" })
    assert.isTrue(TableDestination.isUnroutable(verdict))
    assert.instanceOf(verdict, TableDestination.Unroutable)
    if (TableDestination.isUnroutable(verdict)) {
      assert.strictEqual(verdict.reason, "invalid destination: tableId must not contain '/', was 'events_a/b'")
    }
    const blank = TableDestination.resolve({ projectId: " ", instanceId: "i", tableId: "t" })
    assert.isTrue(
      TableDestination.isUnroutable(blank) && blank.reason === "invalid destination: projectId must not be blank"
    )
  })

  it("Unroutable is a class with a reason and an optional payload", () => {
    const verdict = TableDestination.unroutable({ reason: "no table", payload: new Uint8Array([1]) })
    assert.strictEqual(verdict._tag, "Unroutable")
    assert.deepStrictEqual(verdict.payload, new Uint8Array([1]))
    assert.isTrue(TableDestination.isUnroutable(verdict))
    assert.isFalse(TableDestination.isUnroutable({ _tag: "Unroutable", message: "a plain object" }))
    assert.isFalse(
      TableDestination.isUnroutable(TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" }))
    )
  })

  it("makeUnsafe throws the SinkConfigError make fails with; the constructor is not public", () => {
    assert.throws(
      () => TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "a/b" }),
      "must not contain '/', was 'a/b'"
    )
    assert.isFunction(unchecked)
  })
})

describe("TableDestination.resolve in a BigtableSink", () => {
  it.live("an invalid id from a resolver is routed as unroutable, never sent", () =>
    Effect.gen(function*() {
      const fake = makeFake()
      const exit = yield* Stream.make("a", "x/y").pipe(
        Stream.run(BigtableSink.make({
          destinationResolver: (tenant: string) =>
            TableDestination.resolve({ projectId: "p", instanceId: "i", tableId: `t_${tenant}` }),
          serializer: (k: string) => Effect.succeed(RowMutationEntry.make(k, Mutation.deleteFromRow()))
        })),
        Effect.provide(fake.layer),
        Effect.exit
      )
      // the default handler, failJob, fails the write with the routed failure
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(error, RecordFailed)
      if (error instanceof RecordFailed) {
        assert.strictEqual(error.failure.destination, "unresolved")
        assert.strictEqual(error.failure.message, "invalid destination: tableId must not contain '/', was 't_x/y'")
      }
    }))
})
