import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { Mutation, RowMutationEntry } from "../../../src/Bigtable/index.ts"
import * as heap from "../../../src/internal/bigtable/heapObjects.ts"

// The objects are built by classes so that V8 gives them no allocation site (heapObjects.ts); what a
// user sees of them (own enumerable fields, their order and values) is what the literals gave.
const fieldsOf = (o: object): Array<[string, unknown]> => Object.entries(o)

const Family = Schema.String.check(Schema.isMinLength(1))
const Micros = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000_000 }))

describe("heapObjects", () => {
  it.prop("the Mutation constructors' fields are the literals' fields, in order", [
    Family,
    Schema.String,
    Schema.String,
    Micros
  ], ([family, qualifier, value, micros]) => {
    const q = new Uint8Array(Buffer.from(qualifier, "utf8"))
    const v = new Uint8Array(Buffer.from(value, "utf8"))
    const stamp = micros * 1000
    assert.deepStrictEqual(
      fieldsOf(Mutation.setCell({ family, qualifier, value, timestampMicros: stamp })),
      fieldsOf({ _tag: "SetCell", family, qualifier: q, value: v, timestampMicros: stamp })
    )
    assert.deepStrictEqual(
      fieldsOf(Mutation.setCell({ family, qualifier, value })),
      fieldsOf({ _tag: "SetCell", family, qualifier: q, value: v, timestampMicros: undefined })
    )
    assert.deepStrictEqual(
      fieldsOf(Mutation.deleteFromColumn({ family, qualifier, startTimestampMicros: stamp })),
      fieldsOf({
        _tag: "DeleteFromColumn",
        family,
        qualifier: q,
        startTimestampMicros: stamp,
        endTimestampMicros: undefined
      })
    )
    assert.deepStrictEqual(
      fieldsOf(Mutation.deleteFromFamily({ family })),
      fieldsOf({ _tag: "DeleteFromFamily", family })
    )
    assert.deepStrictEqual(fieldsOf(Mutation.deleteFromRow()), fieldsOf({ _tag: "DeleteFromRow" }))
    assert.deepStrictEqual(
      fieldsOf(Mutation.addToCell({ family, qualifier, input: micros })),
      fieldsOf({ _tag: "AddToCell", family, qualifier: q, timestampMicros: 0, input: BigInt(micros) })
    )
    assert.deepStrictEqual(
      fieldsOf(Mutation.mergeToCell({ family, qualifier, input: v, timestampMicros: stamp })),
      fieldsOf({ _tag: "MergeToCell", family, qualifier: q, timestampMicros: stamp, input: v })
    )
  })

  it("an entry of one mutation lists it; an entry of a list keeps the caller's list", () => {
    const m = Mutation.deleteFromRow()
    const one = RowMutationEntry.make("k", m)
    assert.deepStrictEqual(fieldsOf(one), fieldsOf({ rowKey: new Uint8Array(Buffer.from("k")), mutations: [m] }))
    assert.isTrue(Array.isArray(one.mutations))
    const list = [m, Mutation.deleteFromFamily({ family: "cf" })]
    assert.strictEqual(RowMutationEntry.make("k", list).mutations, list)
  })

  it("entries and mutations are made by classes, not literals (a literal's allocation site can be pretenured)", () => {
    const made = [
      RowMutationEntry.make("k", Mutation.deleteFromRow()),
      Mutation.setCell({ family: "cf", qualifier: "q", value: "v" }),
      Mutation.deleteFromColumn({ family: "cf", qualifier: "q" }),
      Mutation.deleteFromFamily({ family: "cf" }),
      Mutation.deleteFromRow(),
      Mutation.addToCell({ family: "cf", qualifier: "q", input: 1 }),
      Mutation.mergeToCell({ family: "cf", qualifier: "q", input: 1 })
    ]
    for (const o of made) assert.notStrictEqual(Object.getPrototypeOf(o), Object.prototype)
  })

  it("the sink's request over its items reads them, and gives the public shape to a reader of it", () => {
    const a = RowMutationEntry.make("a", Mutation.deleteFromRow())
    const b = RowMutationEntry.make("b", Mutation.deleteFromFamily({ family: "cf" }))
    const items = [{ entry: a, bytes: 5, other: 1 }, { entry: b, bytes: 9, other: 2 }]
    const request = new heap.SizedMutateRows("t", "profile", items)
    assert.strictEqual(request.sized, items)
    assert.deepStrictEqual(
      [request.tableName, request.appProfileId, request.entries, request.entryByteSizes],
      ["t", "profile", [a, b], [5, 9]]
    )
  })
})
