/**
 * The `cdc` option of `WriteMethod.atLeastOnce` (reference 2.1 rules 7-8, 2.12): each invalid value is
 * a `SinkConfigError` naming `writeMethod.cdc.<option>`; `RECONCILE` needs a primary key; a fixed
 * table whose serializer has a column named like a pseudocolumn fails when the sink is built; the
 * sink's serializer then writes the pseudocolumns, the table schema stays the serializer's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  AdditionalFields,
  Cdc,
  CdcTableOptions,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../../src/BigQuery/index.ts"
import * as CdcOptions from "../../../../src/internal/bigquery/cdc/options.ts"
import * as Options from "../../../../src/internal/bigquery/options.ts"
import { SinkConfigError } from "../../../../src/Sink.ts"

interface Row {
  readonly id: bigint
}

const schemaOf = (...names: ReadonlyArray<string>): TableSchema.TableSchema => ({
  fields: names.map((name) => TableSchema.field({ name, type: "INT64" }))
})
const serializerOf = (schema: TableSchema.TableSchema): RowSerializer.RowSerializer<Row> => ({
  tableSchema: () => schema,
  serialize: () => new Uint8Array([8, 1])
})
const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })

const decodeWith = (cdc: Cdc.CdcOptions<Row>, schema = schemaOf("id")) =>
  Options.decode({ table, serializer: serializerOf(schema), writeMethod: WriteMethod.atLeastOnce<Row>({ cdc }) })

const rejects = (cdc: unknown, path: string, rule: RegExp, schema = schemaOf("id")) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(decodeWith(cdc as Cdc.CdcOptions<Row>, schema))
    assert.instanceOf(error, SinkConfigError)
    assert.strictEqual(error.path, path)
    assert.match(error.message, rule)
  })

describe("cdc option", () => {
  it.effect("absent: no CDC settings, the serializer untouched", () =>
    Effect.gen(function*() {
      const serializer = serializerOf(schemaOf("id"))
      const settings = yield* Options.decode({ table, serializer })
      assert.isUndefined(settings.cdc)
      assert.strictEqual(settings.serializer, serializer)
    }))

  it.effect("defaults: VERIFY_ONLY, no table options (unmanaged, no primary key)", () =>
    Effect.gen(function*() {
      const settings = yield* decodeWith({ changeType: Cdc.upsertOnly() })
      const cdc = settings.cdc
      assert.isDefined(cdc)
      if (cdc === undefined) return
      assert.strictEqual(cdc.reconciliation, "VERIFY_ONLY")
      assert.deepStrictEqual(yield* cdc.tableOptions(table), { primaryKey: [], maxStaleness: { _tag: "Unmanaged" } })
      assert.deepStrictEqual(settings.serializer.tableSchema(table), schemaOf("id"))
      assert.deepStrictEqual(RowSerializer.descriptorOf(settings.serializer, table).field.map((f) => f.name), [
        "id",
        "_CHANGE_TYPE"
      ])
    }))

  it.effect("each option's rule", () =>
    Effect.gen(function*() {
      yield* rejects({}, "writeMethod.cdc.changeType", /must be a function \(or Cdc.upsertOnly\(\)\), was undefined/)
      yield* rejects({ changeType: "UPSERT" }, "writeMethod.cdc.changeType", /must be a function/)
      yield* rejects(
        { changeType: Cdc.upsertOnly(), sequenceNumber: "1" },
        "writeMethod.cdc.sequenceNumber",
        /function/
      )
      yield* rejects(
        { changeType: Cdc.upsertOnly(), reconciliation: "REPAIR" },
        "writeMethod.cdc.reconciliation",
        /VERIFY_ONLY or RECONCILE/
      )
      yield* rejects(
        { changeType: Cdc.upsertOnly(), tableOptions: 3 },
        "writeMethod.cdc.tableOptions",
        /CdcTableOptions/
      )
      yield* rejects({ changeType: Cdc.upsertOnly(), other: 1 }, "writeMethod.cdc.other", /not an option/)
      yield* rejects(
        { changeType: Cdc.upsertOnly(), tableOptions: { primaryKey: [] } },
        "writeMethod.cdc.tableOptions.primaryKey",
        /1 to 16 columns/
      )
      const error = yield* Effect.flip(Options.decode({
        table,
        serializer: serializerOf(schemaOf("id")),
        writeMethod: WriteMethod.atLeastOnce({ cdc: 1 as unknown as Cdc.CdcOptions<unknown> })
      }))
      assert.strictEqual(error.path, "writeMethod.cdc")
    }))

  it.effect("RECONCILE needs a primary key in fixed options (a provider's are checked per destination)", () =>
    Effect.gen(function*() {
      yield* rejects(
        { changeType: Cdc.upsertOnly(), reconciliation: "RECONCILE" },
        "writeMethod.cdc.tableOptions",
        /primary key/
      )
      yield* rejects(
        { changeType: Cdc.upsertOnly(), reconciliation: "RECONCILE", tableOptions: { maxStaleness: "1 minute" } },
        "writeMethod.cdc.tableOptions.primaryKey",
        /RECONCILE needs a primary key/
      )
      const settings = yield* decodeWith({
        changeType: Cdc.upsertOnly(),
        reconciliation: "RECONCILE",
        tableOptions: () => ({ primaryKey: [] })
      })
      assert.strictEqual(settings.cdc?.reconciliation, "RECONCILE")
    }))

  it.effect("a provider's table options are validated per destination; a throw is a SinkConfigError", () =>
    Effect.gen(function*() {
      const settings = yield* decodeWith({
        changeType: Cdc.upsertOnly(),
        tableOptions: (d) =>
          d.tableId === "t" ? { primaryKey: ["id", "ID"] } : d.tableId === "ok" ? { primaryKey: ["id"] } : (() => {
            throw new Error("no options")
          })()
      })
      const cdc = settings.cdc
      if (cdc === undefined) return assert.fail("cdc")
      const repeated = yield* Effect.flip(cdc.tableOptions(table))
      assert.strictEqual(repeated.path, "writeMethod.cdc.tableOptions.primaryKey[1]")
      const ok = yield* cdc.tableOptions(TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "ok" }))
      assert.deepStrictEqual(ok.primaryKey, ["id"])
      const validated = yield* CdcTableOptions.make({ primaryKey: ["k"] })
      const passThrough = yield* CdcOptions.decode(
        { changeType: Cdc.upsertOnly(), tableOptions: () => validated },
        "cdc"
      )
      assert.strictEqual(yield* passThrough.tableOptions(table), validated)
      const threw = yield* Effect.flip(
        cdc.tableOptions(TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "x" }))
      )
      assert.match(threw.message, /the provider threw: no options/)
    }))

  it.effect("a fixed table's column named like a pseudocolumn (any case) is a SinkConfigError", () =>
    Effect.gen(function*() {
      yield* rejects(
        { changeType: Cdc.upsertOnly() },
        "serializer",
        /collides with a CDC pseudocolumn/,
        schemaOf("id", "_change_type")
      )
      yield* rejects(
        { changeType: Cdc.upsertOnly() },
        "serializer",
        /'_Change_Sequence_Number' collides/,
        schemaOf("id", "_Change_Sequence_Number")
      )
      const extra = yield* AdditionalFields.make<Row>([
        { name: "_CHANGE_TYPE", type: "STRING", nullPolicy: "NULLABLE", provider: () => "x" }
      ])
      const error = yield* Effect.flip(Options.decode({
        table,
        serializer: serializerOf(schemaOf("id")),
        additionalFields: extra,
        writeMethod: WriteMethod.atLeastOnce<Row>({ cdc: { changeType: Cdc.upsertOnly() } })
      }))
      assert.strictEqual(error.path, "serializer")
    }))
})
