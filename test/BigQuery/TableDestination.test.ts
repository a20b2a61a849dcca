import { assert, describe, it } from "@effect/vitest"
import { Effect, Equal } from "effect"
import * as TableDestination from "../../src/BigQuery/TableDestination.ts"

describe("TableDestination", () => {
  it.effect("validates components and formats p.d.t and resource paths", () =>
    Effect.gen(function*() {
      const t = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" })
      assert.strictEqual(String(t), "p.d.t")
      assert.strictEqual(t.tablePath, "projects/p/datasets/d/tables/t")
      assert.strictEqual(t.defaultStream, "projects/p/datasets/d/tables/t/streams/_default")
      assert.isTrue(
        Equal.equals(t, new TableDestination.TableDestination({ projectId: "p", datasetId: "d", tableId: "t" }))
      )
      const blank = yield* Effect.flip(TableDestination.make({ projectId: "p", datasetId: " ", tableId: "t" }))
      assert.deepStrictEqual([blank.path, blank.message], ["table.datasetId", "must not be blank"])
      const slash = yield* Effect.flip(
        TableDestination.make({ projectId: "p", datasetId: "d", tableId: "a/b" }, "destination")
      )
      assert.deepStrictEqual([slash.path, slash.message], ["destination.tableId", "must not contain '/', was 'a/b'"])
    }))

  it.effect("parses at the last two dots", () =>
    Effect.gen(function*() {
      const t = yield* TableDestination.parse("example.com:proj.sales.orders")
      assert.deepStrictEqual([t.projectId, t.datasetId, t.tableId], ["example.com:proj", "sales", "orders"])
      for (const bad of ["p.d", "t", ".d.t", "p..t", "p.d."]) {
        const e = yield* Effect.flip(TableDestination.parse(bad))
        assert.strictEqual(e.path.startsWith("table"), true, bad)
      }
    }))

  it("resolves records to a table or an Unroutable verdict", () => {
    const t = new TableDestination.TableDestination({ projectId: "p", datasetId: "d", tableId: "t" })
    assert.strictEqual(TableDestination.fixed(t)(123), t)
    const verdict = TableDestination.unroutable({ payload: new Uint8Array([1]), reason: "no tenant" })
    assert.isTrue(TableDestination.isUnroutable(verdict))
    assert.isFalse(TableDestination.isUnroutable(t))
    assert.strictEqual(verdict._tag, "Unroutable")
  })
})
