import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Equal, Exit, Schema, Stream } from "effect"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination } from "../../src/Bigtable/index.ts"
import { RecordFailed } from "../../src/Sink.ts"
import { makeFake } from "./fakeBigtable.ts"

// @ts-expect-error: the constructor is protected: destinations are built validated
const unchecked = () => new TableDestination.TableDestination({ projectId: "p", instanceId: "i", tableId: "t" })

const matching = (pattern: RegExp) => Schema.String.check(Schema.isPattern(pattern))
/** A project id, or a domain-scoped one (`example.com:project`). */
const ProjectId = Schema.Union([
  matching(/^[a-z][a-z0-9-]{0,10}$/),
  matching(/^[a-z][a-z0-9-]{0,10}\.[a-z][a-z0-9-]{0,10}:[a-z][a-z0-9-]{0,10}$/)
])
/** The parts of a destination, as the service accepts them. */
const DestinationFields = Schema.Struct({
  projectId: ProjectId,
  instanceId: matching(/^[a-z]([a-z0-9-]{0,9}[a-z0-9])?$/),
  tableId: matching(/^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,20}$/)
})

describe("TableDestination", () => {
  it.effect("make validates each id under its path", () =>
    Effect.gen(function*() {
      const t = yield* TableDestination.make({ projectId: "p", instanceId: "i", tableId: "t" })
      assert.strictEqual(String(t), "p.i.t")
      assert.strictEqual(t.tableName, "projects/p/instances/i/tables/t")
      assert.strictEqual(t.instanceName, "projects/p/instances/i")
      const slash = yield* Effect.flip(TableDestination.make({ projectId: "p", instanceId: "i", tableId: "a/b" }))
      assert.deepStrictEqual([slash.path, slash.detail], ["table.tableId", "must not contain '/', was 'a/b'"])
      const blank = yield* Effect.flip(TableDestination.make({ projectId: "p", instanceId: " ", tableId: "t" }, "dest"))
      assert.deepStrictEqual([blank.path, blank.detail], ["dest.instanceId", "must not be blank"])
    }))

  it.effect(
    "an id Bigtable refuses is a SinkConfigError naming the rule, not a missing table later",
    () =>
      Effect.gen(function*() {
        const bang = yield* Effect.flip(
          TableDestination.make({ projectId: "p", instanceId: "iot", tableId: "readings!" })
        )
        assert.strictEqual(
          bang.message,
          "table.tableId: must be letters, digits, '_', '-' and '.', not starting with '-' or '.', was 'readings!'"
        )
        const upper = yield* Effect.flip(TableDestination.make({ projectId: "p", instanceId: "IoT", tableId: "t" }))
        assert.strictEqual(upper.path, "table.instanceId")
        assert.include(upper.detail, "lowercase")
        const routed = TableDestination.resolve({ projectId: "p", instanceId: "iot", tableId: "a b" })
        assert.isTrue(TableDestination.isUnroutable(routed))
      }),
    10_000
  )

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

  it.effect("parse reads the resource name and the short form", () =>
    Effect.gen(function*() {
      const named = yield* TableDestination.parse("projects/p/instances/i/tables/events")
      assert.deepStrictEqual([named.projectId, named.instanceId, named.tableId], ["p", "i", "events"])
      const dotted = yield* TableDestination.parse("example.com:proj.inst.events.v2")
      assert.deepStrictEqual([dotted.projectId, dotted.instanceId, dotted.tableId], [
        "example.com:proj",
        "inst",
        "events.v2"
      ])
      for (
        const bad of [
          "p.i",
          "t",
          ".i.t",
          "projects/p/instances/i",
          "projects/p/instances/i/tables/t/x",
          "project/p/instances/i/tables/t",
          "p.i/t"
        ]
      ) {
        const e = yield* Effect.flip(TableDestination.parse(bad, "dest"))
        assert.strictEqual(e.path, "dest", bad)
        assert.include(e.message, "must be projects/<project>/instances/<instance>/tables/<table>", bad)
      }
      const blank = yield* Effect.flip(TableDestination.parse("projects/p/instances//tables/t"))
      assert.deepStrictEqual([blank.path, blank.detail], ["table.instanceId", "must not be blank"])
      const spaced = yield* Effect.flip(TableDestination.parse("p.i. t"))
      assert.strictEqual(spaced.path, "table.tableId")
      const notString = yield* Effect.flip(TableDestination.parse(5 as unknown as string))
      assert.strictEqual(notString.path, "table")
    }))

  it.effect.prop(
    "parse inverts tableName and toString (property)",
    [DestinationFields],
    ([f]) =>
      Effect.gen(function*() {
        const t = TableDestination.makeUnsafe(f)
        for (const text of [t.tableName, String(t)]) {
          const parsed = yield* TableDestination.parse(text)
          assert.isTrue(Equal.equals(parsed, t), text)
        }
      })
  )

  it("fixed sends every record to one table", () => {
    const t = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
    const resolver: TableDestination.DestinationResolver<number> = TableDestination.fixed(t)
    assert.strictEqual(resolver(1), t)
    assert.strictEqual(TableDestination.fixed(t)("any"), t)
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
  it.effect("an invalid id from a resolver is routed as unroutable, never sent", () =>
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
