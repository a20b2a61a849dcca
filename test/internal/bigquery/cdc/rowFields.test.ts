/**
 * The CDC pseudocolumns on the wire (reference 2.12): in the writer schema only (never the table
 * schema), after the row's fields, the same through `serialize` and `encodeInto`; providers run on the
 * original element after the serializer (never for a skip or a failure), and a throw, no value, a bad
 * change type or an invalid sequence number is a routed `RowSerializationError` naming the column.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { Cdc, RowSerializer, TableDestination, TableSchema } from "../../../../src/BigQuery/index.ts"
import * as CdcRow from "../../../../src/internal/bigquery/cdc/rowFields.ts"
import { encodeDescriptor } from "../../../../src/internal/bigquery/encoding/descriptor.ts"
import { WireWriter } from "../../../../src/internal/bigquery/encoding/wireWriter.ts"
import { decoderOf, decodeRow } from "../../../BigQuery/arbitraries.ts"

interface Row {
  readonly id: bigint
  readonly name?: string | undefined
  readonly op?: unknown
  readonly seq?: unknown
}

const schema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "name", type: "STRING" })
  ]
}
const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
/** The JSON serializer of `schema` over the row's own columns. */
const json = Effect.map(
  Effect.orDie(RowSerializer.fromJson(schema)),
  (base) => RowSerializer.contramap(base, ({ id, name }: Row) => ({ id, name }))
)

const options: Cdc.CdcOptions<Row> = {
  changeType: (r) => r.op as Cdc.ChangeType,
  sequenceNumber: (r) => r.seq as string
}

const viaEncodeInto = (s: RowSerializer.RowSerializer<Row>, row: Row) => {
  const w = new WireWriter(16)
  const result = s.encodeInto?.(w, row, table)
  return result === undefined ? new Uint8Array(w.buf.subarray(0, w.pos)) : result
}

describe("CDC row fields", () => {
  it.effect("the descriptor gets the pseudocolumns, the table schema does not", () =>
    Effect.gen(function*() {
      const toJson = yield* json
      const s = CdcRow.augment(toJson, options)
      assert.deepStrictEqual(s.tableSchema(table), schema)
      const names = RowSerializer.descriptorOf(s, table).field.map((f) => f.name)
      assert.deepStrictEqual(names, ["id", "name", "_CHANGE_TYPE", "_CHANGE_SEQUENCE_NUMBER"])
      const upsertOnly = CdcRow.augment(toJson, { changeType: Cdc.upsertOnly() })
      assert.deepStrictEqual(RowSerializer.descriptorOf(upsertOnly, table).field.map((f) => f.name), [
        "id",
        "name",
        "_CHANGE_TYPE"
      ])
    }))

  it.effect("rows decode with the writer schema to the row plus its change type and upper-cased sequence", () =>
    Effect.gen(function*() {
      const toJson = yield* json
      const s = CdcRow.augment(toJson, options)
      const decoder = decoderOf(encodeDescriptor(RowSerializer.descriptorOf(s, table)))
      const arb = fc.record({
        id: fc.bigInt({ min: 0n, max: 1000n }),
        name: fc.option(fc.string(), { nil: undefined }),
        op: fc.constantFrom("UPSERT", "DELETE"),
        seq: fc.array(fc.stringMatching(/^[0-9a-fA-F]{1,16}$/), { minLength: 1, maxLength: 4 }).map((x) => x.join("/"))
      })
      fc.assert(fc.property(arb, (row) => {
        const bytes = s.serialize(row, table)
        assert.instanceOf(bytes, Uint8Array)
        assert.deepStrictEqual(viaEncodeInto(s, row), bytes)
        assert.deepStrictEqual(decodeRow(decoder, bytes as Uint8Array), {
          id: String(row.id),
          ...(row.name === undefined ? {} : { name: row.name }),
          _CHANGE_TYPE: row.op,
          _CHANGE_SEQUENCE_NUMBER: String(row.seq).toUpperCase()
        })
      }))
    }))

  it.effect("any provided string: written upper-cased exactly when it is a valid sequence number", () =>
    Effect.gen(function*() {
      const toJson = yield* json
      const s = CdcRow.augment(toJson, options)
      const decoder = decoderOf(encodeDescriptor(RowSerializer.descriptorOf(s, table)))
      const text = fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEFgG/ xé"), maxLength: 72 })
      fc.assert(
        fc.property(text, (seq) => {
          const normalized = Cdc.normalizeSequenceNumber(seq)
          for (
            const result of [
              s.serialize({ id: 1n, op: "UPSERT", seq }, table),
              viaEncodeInto(s, { id: 1n, op: "UPSERT", seq })
            ]
          ) {
            if (normalized === undefined) {
              assert.instanceOf(result, RowSerializer.RowSerializationError)
            } else {
              assert.instanceOf(result, Uint8Array)
              const row = decodeRow(decoder, result as Uint8Array) as Record<string, unknown>
              assert.strictEqual(row["_CHANGE_SEQUENCE_NUMBER"], normalized)
            }
          }
        }),
        { numRuns: 2000 }
      )
    }))

  it.effect("without encodeInto in the base, serialize alone is offered", () =>
    Effect.gen(function*() {
      const toJson = yield* json
      const plain: RowSerializer.RowSerializer<Row> = { tableSchema: toJson.tableSchema, serialize: toJson.serialize }
      const s = CdcRow.augment(plain, options)
      assert.isUndefined(s.encodeInto)
      assert.instanceOf(s.serialize({ id: 1n, op: "DELETE", seq: "1" }, table), Uint8Array)
    }))

  it.effect("a bad provider result or a throw is a RowSerializationError naming the pseudocolumn", () =>
    Effect.gen(function*() {
      const toJson = yield* json
      const s = CdcRow.augment(toJson, options)
      const cases: ReadonlyArray<readonly [Row, string, RegExp]> = [
        [{ id: 1n, op: "INSERT", seq: "1" }, "_CHANGE_TYPE", /UPSERT or DELETE, returned 'INSERT'/],
        [{ id: 1n, op: "upsert", seq: "1" }, "_CHANGE_TYPE", /UPSERT or DELETE/],
        [{ id: 1n, op: undefined, seq: "1" }, "_CHANGE_TYPE", /returned undefined/],
        [{ id: 1n, op: "UPSERT", seq: undefined }, "_CHANGE_SEQUENCE_NUMBER", /no value/],
        [{ id: 1n, op: "UPSERT", seq: null }, "_CHANGE_SEQUENCE_NUMBER", /no value/],
        [{ id: 1n, op: "UPSERT", seq: "1/2/3/4/5" }, "_CHANGE_SEQUENCE_NUMBER", /1 to 4/],
        [{ id: 1n, op: "UPSERT", seq: "xyz" }, "_CHANGE_SEQUENCE_NUMBER", /hex digits, was 'xyz'/],
        [{ id: 1n, op: "UPSERT", seq: 12 }, "_CHANGE_SEQUENCE_NUMBER", /was number/]
      ]
      for (const [row, path, message] of cases) {
        for (const result of [s.serialize(row, table), viaEncodeInto(s, row)]) {
          assert.instanceOf(result, RowSerializer.RowSerializationError)
          const error = result as RowSerializer.RowSerializationError
          assert.strictEqual(error.path, path)
          assert.match(error.reason, message)
        }
      }
      const throwing = CdcRow.augment(toJson, {
        changeType: () => {
          throw new Error("boom")
        },
        sequenceNumber: () => {
          throw new Error("never called")
        }
      })
      const thrown = throwing.serialize({ id: 1n }, table)
      assert.instanceOf(thrown, RowSerializer.RowSerializationError)
      assert.strictEqual(
        (thrown as RowSerializer.RowSerializationError).message,
        "_CHANGE_TYPE: the provider threw: boom"
      )
      const sequenceThrows = CdcRow.augment(toJson, {
        changeType: Cdc.upsertOnly(),
        sequenceNumber: () => {
          throw "text"
        }
      })
      const error = sequenceThrows.serialize({ id: 1n }, table) as RowSerializer.RowSerializationError
      assert.strictEqual(error.message, "_CHANGE_SEQUENCE_NUMBER: the provider threw: text")
    }))

  it.effect("providers get the original element after the serializer; skips and failures invoke neither", () =>
    Effect.gen(function*() {
      const toJson = yield* json
      const seen: Array<string> = []
      const skipping = RowSerializer.filter(toJson, (r: Row) => r.id !== 0n)
      const s = CdcRow.augment(skipping, {
        changeType: (r) => {
          seen.push(`type ${r.id}`)
          return "UPSERT"
        },
        sequenceNumber: (r) => {
          seen.push(`seq ${r.id}`)
          return "1"
        }
      })
      const original: Row = { id: 1n, name: "a" }
      const tracking = CdcRow.augment(toJson, {
        changeType: (r) => {
          assert.strictEqual(r, original)
          return "UPSERT"
        }
      })
      assert.instanceOf(tracking.serialize(original, table), Uint8Array)
      assert.isNull(s.serialize({ id: 0n }, table))
      assert.isNull(viaEncodeInto(s, { id: 0n }))
      assert.instanceOf(
        s.serialize({ id: 2n, name: 3 as unknown as string }, table),
        RowSerializer.RowSerializationError
      )
      assert.deepStrictEqual(seen, [])
      s.serialize({ id: 5n }, table)
      assert.deepStrictEqual(seen, ["type 5", "seq 5"])
    }))

  it.effect("a physical column named like a pseudocolumn (any case) collides; its field numbers are reserved", () =>
    Effect.gen(function*() {
      const toJson = yield* json
      for (const name of ["_change_type", "_Change_Sequence_Number"]) {
        const clash = { fields: [...schema.fields, TableSchema.field({ name, type: "STRING" })] }
        assert.strictEqual(CdcRow.collision(clash), name)
      }
      assert.isUndefined(CdcRow.collision(schema))
      const descriptor = RowSerializer.descriptorOf(toJson, table)
      assert.throws(
        () =>
          CdcRow.extendDescriptor({
            ...descriptor,
            field: [{ ...descriptor.field[0] as (typeof descriptor.field)[number], number: 16383 }]
          }, false),
        /reserved/
      )
    }))
})
