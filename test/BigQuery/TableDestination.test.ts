import { assert, describe, it } from "@effect/vitest"
import { Effect, Equal, Ref, Schema, Stream } from "effect"
import { type BigQueryFailure, BigQuerySink, RowSerializer, TableDestination } from "../../src/BigQuery/index.ts"
import { FailureHandler } from "../../src/Sink.ts"
import * as F from "./sinkFixtures.ts"

// @ts-expect-error: the constructor is protected: destinations are built validated
const unchecked = () => new TableDestination.TableDestination({ projectId: "p", datasetId: "d", tableId: "t" })

const matching = (pattern: RegExp) => Schema.String.check(Schema.isPattern(pattern))
/** A project id, or a domain-scoped one (`example.com:project`). */
const ProjectId = Schema.Union([
  matching(/^[a-z][a-z0-9-]{0,10}$/),
  matching(/^[a-z][a-z0-9-]{0,10}\.[a-z][a-z0-9-]{0,10}:[a-z][a-z0-9-]{0,10}$/)
])
/** The parts of a destination, as the service accepts them. */
const DestinationFields = Schema.Struct({
  projectId: ProjectId,
  datasetId: matching(/^[A-Za-z0-9_]{1,12}$/),
  tableId: matching(/^[A-Za-z0-9_-]{1,12}$/)
})

describe("TableDestination", () => {
  it.effect("validates components and formats p.d.t and resource paths", () =>
    Effect.gen(function*() {
      const t = yield* TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" })
      assert.strictEqual(String(t), "p.d.t")
      assert.strictEqual(t.tablePath, "projects/p/datasets/d/tables/t")
      assert.strictEqual(t.defaultStream, "projects/p/datasets/d/tables/t/streams/_default")
      assert.isTrue(
        Equal.equals(t, TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" }))
      )
      const blank = yield* Effect.flip(TableDestination.make({ projectId: "p", datasetId: " ", tableId: "t" }))
      assert.deepStrictEqual([blank.path, blank.detail], ["table.datasetId", "must not be blank"])
      const slash = yield* Effect.flip(
        TableDestination.make({ projectId: "p", datasetId: "d", tableId: "a/b" }, "destination")
      )
      assert.deepStrictEqual([slash.path, slash.detail], ["destination.tableId", "must not contain '/', was 'a/b'"])
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

  it.effect.prop("parse inverts toString (property)", [DestinationFields], ([f]) =>
    Effect.gen(function*() {
      const t = TableDestination.makeUnsafe(f)
      assert.isTrue(Equal.equals(yield* TableDestination.parse(String(t)), t), String(t))
    }))

  it("resolves records to a table or an Unroutable verdict", () => {
    const t = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
    assert.strictEqual(TableDestination.fixed(t)(123), t)
    const verdict = TableDestination.unroutable({ payload: new Uint8Array([1]), reason: "no tenant" })
    assert.isTrue(TableDestination.isUnroutable(verdict))
    assert.isFalse(TableDestination.isUnroutable(t))
    assert.strictEqual(verdict._tag, "Unroutable")
    assert.instanceOf(verdict, TableDestination.Unroutable)
    assert.isUndefined(TableDestination.unroutable({ reason: "no tenant" }).payload)
  })

  it("resolve validates synchronously: a destination, or an Unroutable verdict naming the id", () => {
    const t = TableDestination.resolve({ projectId: "p", datasetId: "d", tableId: "t_20240506" })
    assert.isTrue(TableDestination.isTableDestination(t))
    assert.isTrue(
      Equal.equals(t, TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t_20240506" }))
    )
    const cases: ReadonlyArray<readonly [TableDestination.TableDestinationFields, string]> = [
      [
        { projectId: "p", datasetId: "d", tableId: "a/b" },
        "invalid destination: tableId must not contain '/', was 'a/b'"
      ],
      [{ projectId: "", datasetId: "d", tableId: "t" }, "invalid destination: projectId must not be blank"],
      [
        { projectId: "p", datasetId: " d", tableId: "t" },
        "invalid destination: datasetId must not have leading or trailing whitespace, was ' d'"
      ],
      [
        { projectId: "p", datasetId: "d", tableId: 5 as unknown as string },
        "invalid destination: tableId must be a string, was 5"
      ]
    ]
    for (const [fields, reason] of cases) {
      const verdict = TableDestination.resolve(fields)
      assert.isTrue(TableDestination.isUnroutable(verdict), reason)
      if (TableDestination.isUnroutable(verdict)) assert.strictEqual(verdict.reason, reason)
    }
  })

  it("makeUnsafe throws the SinkConfigError make fails with; the constructor is not public", () => {
    assert.throws(
      () => TableDestination.makeUnsafe({ projectId: "p", datasetId: "d/e", tableId: "t" }),
      "must not contain '/', was 'd/e'"
    )
    assert.isFunction(unchecked)
  })
})

describe("TableDestination.resolve in a BigQuerySink", () => {
  it.live("an invalid id from a resolver is routed as an UnroutableRecord; the other rows are written", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t_1`, F.columns)
        const routed = yield* Ref.make<Array<BigQueryFailure.BigQueryFailure>>([])
        const summary = yield* Stream.make<Array<F.Row & { readonly tenant: string }>>(
          { id: 1n, tenant: "1" },
          { id: 2n, tenant: "a/b" },
          { id: 3n, tenant: "1" }
        ).pipe(
          Stream.run(BigQuerySink.make({
            destinationResolver: (row: F.Row & { readonly tenant: string }) =>
              TableDestination.resolve({ projectId: fake.projectId, datasetId: "d", tableId: `t_${row.tenant}` }),
            serializer: yield* RowSerializer.fromJson(F.schema, { ignoreUnknownFields: true }),
            failureHandler: FailureHandler.make({
              handle: (f: BigQueryFailure.BigQueryFailure) => Ref.update(routed, (all) => [...all, f])
            })
          }))
        )
        const failures = yield* Ref.get(routed)
        assert.deepStrictEqual(failures.map((f) => [f._tag, f.destination, f.message]), [[
          "UnroutableRecord",
          "unresolved",
          "invalid destination: tableId must not contain '/', was 't_a/b'"
        ]])
        assert.strictEqual(summary.recordsWritten, 2)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t_1`).length, 2)
      })))
})
