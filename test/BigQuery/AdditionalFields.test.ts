import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AdditionalFields from "../../src/BigQuery/AdditionalFields.ts"
import * as RowSerializer from "../../src/BigQuery/RowSerializer.ts"
import * as TableDestination from "../../src/BigQuery/TableDestination.ts"
import * as TableSchema from "../../src/BigQuery/TableSchema.ts"
import { encodeDescriptor } from "../../src/internal/bigquery/encoding/descriptor.ts"
import { decoderOf, decodeRow } from "./arbitraries.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })

interface Event {
  readonly id: number
  readonly source?: string | undefined
}

const error = (fields: ReadonlyArray<AdditionalFields.AdditionalField<unknown>>) =>
  Effect.flip(AdditionalFields.make(fields)).pipe(Effect.map((e) => e.message))
const provider = () => 1

describe("AdditionalFields", () => {
  it.effect("validates names, types, policies and providers", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* error([]), "additionalFields: must have at least one field")
      assert.strictEqual(
        (yield* error([{ name: "1a", type: "INT64", nullPolicy: "NULLABLE", provider }])).startsWith(
          "additionalFields[0].name: must be"
        ),
        true
      )
      assert.strictEqual(
        yield* error([{ name: "a", type: "INT64", nullPolicy: "NULLABLE", provider }, {
          name: "A",
          type: "INT64",
          nullPolicy: "NULLABLE",
          provider
        }]),
        "additionalFields[1].name: repeats 'A' (names ignore case)"
      )
      assert.strictEqual(
        yield* error([{ name: "a", type: "RECORD" as "INT64", nullPolicy: "NULLABLE", provider }]),
        "additionalFields[0].type: must be a singular scalar type, was 'RECORD'"
      )
      assert.strictEqual(
        yield* error([{ name: "a", type: "INT64", nullPolicy: "REPEATED" as "NULLABLE", provider }]),
        "additionalFields[0].nullPolicy: must be NULLABLE or REQUIRED, was 'REPEATED'"
      )
    }))

  it.effect("appends provider values after the serializer's row, numbered after its fields", () =>
    Effect.gen(function*() {
      const base = yield* RowSerializer.fromJson({
        fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })]
      }, {
        ignoreUnknownFields: true
      })
      const extra = yield* AdditionalFields.make<Event>([
        { name: "ingested", type: "TIMESTAMP", nullPolicy: "REQUIRED", provider: () => new Date(1000) },
        { name: "source", type: "STRING", nullPolicy: "NULLABLE", provider: (e) => e.source },
        {
          name: "checked",
          type: "BOOL",
          nullPolicy: "NULLABLE",
          provider: (e) => {
            if (e.id < 0) throw new Error("negative id")
            return e.id > 0
          }
        }
      ])
      const serializer = AdditionalFields.augment(base as RowSerializer.RowSerializer<Event>, extra)
      assert.deepStrictEqual(serializer.tableSchema(table).fields.map((f) => `${f.name} ${f.mode}`), [
        "id REQUIRED",
        "ingested REQUIRED",
        "source NULLABLE",
        "checked NULLABLE"
      ])
      const decoder = decoderOf(encodeDescriptor(RowSerializer.descriptorOf(serializer, table)))
      const row = serializer.serialize({ id: 2, source: "kafka" }, table)
      assert.deepStrictEqual(decodeRow(decoder, row as Uint8Array), {
        id: "2",
        ingested: "1000000",
        source: "kafka",
        checked: true
      })
      assert.strictEqual(
        String(serializer.serialize({ id: -1 }, table)),
        "RowSerializationError: checked: the provider threw: negative id"
      )
      assert.strictEqual(
        String(serializer.serialize({ id: 1, source: 5 as unknown as string }, table)),
        "RowSerializationError: source: STRING takes a string, was 5"
      )
      const collision = yield* Effect.flip(
        AdditionalFields.extendSchema(extra, { fields: [TableSchema.field({ name: "SOURCE", type: "STRING" })] })
      )
      assert.deepStrictEqual([collision.path, collision.detail], [
        "additionalFields[1].name",
        "collides with the serializer's column 'SOURCE'"
      ])
      const extended = yield* AdditionalFields.extendSchema(extra, base.tableSchema(table))
      assert.strictEqual(extended.fields.length, 4)
    }))
})
