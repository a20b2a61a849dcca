/**
 * `CheckpointStore.sql` against a real PostgreSQL (the private server of test/support/postgres.ts):
 * the store contract, fencing by claim, a retried save whose first attempt landed, concurrent savers
 * and table creations, a corrupt row, and its options.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CheckpointConflict, CheckpointRecord, CheckpointStore } from "../../../src/Sink/CheckpointStore.ts"
import { PostgresServer } from "../../support/postgres.ts"
import { clientConfig, layerClient } from "../../support/postgresClient.ts"

const TestLayer = layerClient.pipe(Layer.provideMerge(PostgresServer.layer))

let tables = 0
/** A store on a table of its own (each test starts from an empty one). */
const freshStore = () => {
  const table = `checkpoints_${process.pid}_${++tables}`
  return { table, store: Effect.provide(Effect.service(CheckpointStore), CheckpointStore.sql({ table })) }
}

const record = (id: string, position: number) => new CheckpointRecord({ id, position, commits: [{ upTo: position }] })

layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })("CheckpointStore.sql", (it) => {
  it.effect("saves compare-and-set, loads the latest, and names both ids in a conflict", () =>
    Effect.gen(function*() {
      const store = yield* freshStore().store
      assert.isTrue(Option.isNone(yield* store.load("w")))
      yield* store.save("w", record("a", 1), undefined)
      yield* store.save("w", record("b", 2), "a")
      assert.deepStrictEqual(Option.map(yield* store.load("w"), (r) => [r.id, r.position]), Option.some(["b", 2]))
      const conflict = yield* Effect.flip(store.save("w", record("c", 3), "a"))
      assert.instanceOf(conflict, CheckpointConflict)
      assert.strictEqual(conflict._tag === "CheckpointConflict" ? conflict.actualId : undefined, "b")
      const first = yield* Effect.flip(store.save("w", record("d", 4), undefined))
      assert.instanceOf(first, CheckpointConflict, "a first save where a record exists")
      assert.isTrue(Option.isNone(yield* store.load("other")), "writers are apart")
    }))

  it.effect("a claim fences the previous owner: its next save is refused, the claimant's goes through", () =>
    Effect.gen(function*() {
      const { store: opened } = freshStore()
      const store = yield* opened
      yield* store.save("w", record("a", 1), undefined)
      const claim = yield* store.claim("w")
      assert.notStrictEqual(claim.id, "a")
      // the claimed record is the latest, stored again under the claim's id
      assert.deepStrictEqual(Option.map(claim.record, (r) => [r.id, r.position]), Option.some([claim.id, 1]))
      assert.deepStrictEqual(Option.map(yield* store.load("w"), (r) => r.id), Option.some(claim.id))
      assert.instanceOf(yield* Effect.flip(store.save("w", record("zombie", 2), "a")), CheckpointConflict)
      yield* store.save("w", record("b", 2), claim.id)
      assert.deepStrictEqual(Option.map(yield* store.load("w"), (r) => r.position), Option.some(2))
    }))

  it.effect("a claim of a writer without a record is bare: nothing to load, the next save expects its id", () =>
    Effect.gen(function*() {
      const store = yield* freshStore().store
      const claim = yield* store.claim("w")
      assert.isTrue(Option.isNone(claim.record))
      assert.isTrue(Option.isNone(yield* store.load("w")))
      assert.instanceOf(yield* Effect.flip(store.save("w", record("a", 1), undefined)), CheckpointConflict)
      yield* store.save("w", record("a", 1), claim.id)
    }))

  it.effect("a save retried after its answer was lost finds its own record and succeeds", () =>
    Effect.gen(function*() {
      const store = yield* freshStore().store
      yield* store.save("w", record("a", 1), undefined)
      yield* store.save("w", record("b", 2), "a")
      // the same save again (its first attempt landed): not a conflict with itself
      yield* store.save("w", record("b", 2), "a")
      yield* store.save("w", record("a2", 1), undefined).pipe(Effect.flip)
    }))

  it.effect("of two savers with the same expectation exactly one wins; two stores create the table at once", () =>
    Effect.gen(function*() {
      const { table } = freshStore()
      const shared = CheckpointStore.sql({ table })
      // two stores (as two processes would have): each creates the table on first use
      const [one, two] = yield* Effect.all([
        Effect.provide(Effect.service(CheckpointStore), shared),
        Effect.provide(Effect.service(CheckpointStore), shared)
      ])
      const results = yield* Effect.all([
        Effect.exit(one.save("w", record("one", 1), undefined)),
        Effect.exit(two.save("w", record("two", 1), undefined))
      ], { concurrency: 2 })
      assert.strictEqual(results.filter((r) => r._tag === "Success").length, 1)
      const claims = yield* Effect.all([one.claim("w"), two.claim("w")], { concurrency: 2 })
      assert.notStrictEqual(claims[0].id, claims[1].id)
      const latest = Option.getOrThrow(yield* one.load("w"))
      assert.include(claims.map((c) => c.id), latest.id, "the last claim is the owner")
    }))

  it.effect("a row that is not a checkpoint of this writer is CheckpointStoreError Corrupt, never skipped", () =>
    Effect.gen(function*() {
      const { store: opened, table } = freshStore()
      const store = yield* opened
      yield* store.save("w", record("a", 1), undefined)
      const sql = yield* SqlClient
      yield* sql`UPDATE ${sql(table)} SET entry = ${"{not json"} WHERE writer_id = ${"w"}`
      const error = yield* Effect.flip(store.load("w"))
      assert.strictEqual(error._tag, "CheckpointStoreError")
      assert.strictEqual(
        error._tag === "CheckpointStoreError" ? error.reason._tag : undefined,
        "CheckpointStoreCorrupt"
      )
      const empty = yield* Effect.flip(store.load(""))
      assert.strictEqual(
        empty._tag === "CheckpointStoreError" ? empty.reason._tag : undefined,
        "CheckpointStoreInvalidWriterId"
      )
    }))

  it.effect("a role that may not create tables uses the table an administrator made (its CREATE IF NOT EXISTS is refused)", () =>
    Effect.gen(function*() {
      const { store: opened, table } = freshStore()
      yield* Effect.flatMap(opened, (admin) => admin.save("w", record("a", 1), undefined))
      const sql = yield* SqlClient
      const role = `limited_${process.pid}_${tables}`
      yield* sql.unsafe(`CREATE ROLE ${role} LOGIN`)
      yield* sql.unsafe(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
      yield* sql.unsafe(`GRANT SELECT, INSERT, UPDATE ON ${table} TO ${role}`)
      const endpoint = yield* PostgresServer
      const asRole = PgClient.layer({ ...clientConfig(endpoint), username: role })
      yield* Effect.gen(function*() {
        // PostgreSQL checks the schema's CREATE privilege before it looks for the table
        const limited = yield* SqlClient
        const refused = yield* Effect.flip(limited.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (writer_id TEXT)`))
        assert.strictEqual(refused.reason._tag, "AuthorizationError")
        const store = yield* Effect.service(CheckpointStore).pipe(Effect.provide(CheckpointStore.sql({ table })))
        assert.deepStrictEqual(Option.map(yield* store.load("w"), (r) => r.id), Option.some("a"))
        yield* store.save("w", record("b", 2), "a")
        assert.deepStrictEqual(Option.map(yield* store.load("w"), (r) => r.position), Option.some(2))
      }).pipe(Effect.provide(asRole))
    }))

  it.effect("options are checked when the layer is built, the error naming the option", () =>
    Effect.gen(function*() {
      for (
        const [options, path] of [[{ table: "drop table;" }, "table"], [
          { responseTimeout: 0 },
          "responseTimeout"
        ]] as const
      ) {
        const error = yield* Effect.flip(Effect.provide(Effect.service(CheckpointStore), CheckpointStore.sql(options)))
        assert.strictEqual(error._tag, "SinkConfigError")
        assert.strictEqual(error._tag === "SinkConfigError" ? error.path : undefined, path)
      }
    }))
})
