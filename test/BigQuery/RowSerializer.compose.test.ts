/**
 * Changing a serializer: an object spread with another `serialize` is honoured by the sink, and
 * `filter` / `contramap` keep the in-place writer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, pipe, Ref, Schema, Stream } from "effect"
import {
  AdditionalFields,
  type BigQueryFailure,
  BigQuerySink,
  Cdc,
  RowSerializer,
  TableDestination,
  TableSchema
} from "../../src/BigQuery/index.ts"
import * as CdcRow from "../../src/internal/bigquery/cdc/rowFields.ts"
import { WireWriter } from "../../src/internal/bigquery/encoding/wireWriter.ts"
import { FailureHandler } from "../../src/Sink.ts"
import * as F from "./sinkFixtures.ts"

const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
const Event = Schema.Struct({ id: Schema.Int, name: Schema.String })
type Event = typeof Event.Type

/** What `encodeInto` writes for `element`, or what it returned instead. */
const inPlace = <A>(serializer: RowSerializer.RowSerializer<A>, element: A) => {
  const encodeInto = serializer.encodeInto
  if (encodeInto === undefined) return "no encodeInto"
  const buffer = new WireWriter(8)
  const result = encodeInto(buffer, element, table)
  return result === undefined ? Array.from(buffer.buf.subarray(0, buffer.pos)) : result
}

const bytes = (result: Uint8Array | null | RowSerializer.RowSerializationError) =>
  result instanceof Uint8Array ? Array.from(result) : result

const encodeInto: NonNullable<RowSerializer.RowSerializer<string>["encodeInto"]> = () => undefined

/** A serializer written as a class: every method reads the instance (`this`). */
class Ids implements RowSerializer.RowSerializer<number> {
  readonly schema: TableSchema.TableSchema = { fields: [TableSchema.field({ name: "id", type: "INT64" })] }
  readonly key = 0x08
  tableSchema() {
    return this.schema
  }
  descriptor() {
    return TableSchema.toDescriptor(this.schema)
  }
  fingerprint() {
    return this.schema
  }
  serialize(n: number) {
    return Uint8Array.of(this.key, n)
  }
  encodeInto(buffer: RowSerializer.RowBuffer, n: number) {
    buffer.ensure(2)
    buffer.buf.set([this.key, n], buffer.pos)
    buffer.pos += 2
    return undefined
  }
}

describe("RowSerializer composition", () => {
  it.effect("a class instance's methods are called on it, through every combinator", () =>
    Effect.gen(function*() {
      const extra = yield* AdditionalFields.make<number>([
        { name: "source", type: "STRING", nullPolicy: "NULLABLE", provider: () => "s" }
      ])
      const composed: ReadonlyArray<readonly [string, RowSerializer.RowSerializer<number>]> = [
        ["make", RowSerializer.make(new Ids())],
        ["filter", RowSerializer.filter(new Ids(), () => true)],
        ["contramap", RowSerializer.contramap(new Ids(), (n: number) => n)],
        ["AdditionalFields.augment", AdditionalFields.augment(new Ids(), extra)],
        ["CDC", CdcRow.augment(new Ids(), { changeType: Cdc.upsertOnly() })]
      ]
      for (const [name, serializer] of composed) {
        assert.strictEqual(serializer.tableSchema(table).fields[0]?.name, "id", name)
        assert.isDefined(RowSerializer.descriptorOf(serializer, table), name)
        assert.isDefined(serializer.fingerprint?.(table), name)
        const row = serializer.serialize(3, table)
        assert.deepStrictEqual(row instanceof Uint8Array ? Array.from(row.subarray(0, 2)) : row, [0x08, 3], name)
        const written = inPlace(serializer, 3)
        if (name === "AdditionalFields.augment") assert.strictEqual(written, "no encodeInto", name)
        else assert.deepStrictEqual(Array.isArray(written) ? written.slice(0, 2) : written, [0x08, 3], name)
      }
    }))

  it.live("a spread with another serialize is what the sink calls (the built-in encodeInto is left behind)", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const base = yield* RowSerializer.fromJson(F.schema)
        assert.isDefined(base.encodeInto, "the built-in has an in-place writer")
        const skipOdd: RowSerializer.RowSerializer<F.Row> = {
          ...base,
          serialize: (row, destination) => (row.id % 2n === 1n ? null : base.serialize(row, destination))
        }
        assert.isFalse("encodeInto" in skipOdd)
        const summary = yield* Stream.fromIterable(F.rows(10)).pipe(
          Stream.run(BigQuerySink.make({ table: yield* F.destination(fake), serializer: skipOdd }))
        )
        assert.strictEqual(summary.recordsSkipped, 5)
        assert.strictEqual(summary.recordsWritten, 5)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 5)
      })))

  it.live("filter and contramap skip and map in the sink", () =>
    F.withFake({}, (fake) =>
      Effect.gen(function*() {
        fake.createTable(`${fake.projectId}.d.t`, F.columns)
        const routed = yield* Ref.make<Array<BigQueryFailure.BigQueryFailure>>([])
        const serializer = pipe(
          yield* RowSerializer.fromJson(F.schema),
          RowSerializer.contramap((n: number) => ({ id: BigInt(n), name: `n${n}` })),
          RowSerializer.filter((n: number) => n % 3 !== 0)
        )
        assert.isDefined(serializer.encodeInto)
        const summary = yield* Stream.range(1, 9).pipe(
          Stream.run(BigQuerySink.make({
            table: yield* F.destination(fake),
            serializer,
            failureHandler: FailureHandler.make({
              handle: (f: BigQueryFailure.BigQueryFailure) => Ref.update(routed, (all) => [...all, f])
            })
          }))
        )
        assert.deepStrictEqual(yield* Ref.get(routed), [])
        assert.strictEqual(summary.recordsSkipped, 3)
        assert.strictEqual(summary.recordsWritten, 6)
        assert.strictEqual(fake.rows(`${fake.projectId}.d.t`).length, 6)
      })))

  it.effect("filter skips on both paths and keeps schema, descriptor and fingerprint", () =>
    Effect.gen(function*() {
      const base = yield* RowSerializer.fromSchema(Event)
      const named = RowSerializer.filter(
        base,
        (event: Event, destination) => event.name !== "" && destination === table
      )
      // the base's own schema and descriptor (called on it: a combinator copies no function off a serializer)
      assert.strictEqual(named.tableSchema(table), base.tableSchema(table))
      assert.strictEqual(RowSerializer.descriptorOf(named, table), RowSerializer.descriptorOf(base, table))
      assert.isNull(named.serialize({ id: 1, name: "" }, table))
      assert.strictEqual(inPlace(named, { id: 1, name: "" }), null)
      const event = { id: 2, name: "b" }
      assert.deepStrictEqual(bytes(named.serialize(event, table)), bytes(base.serialize(event, table)))
      assert.deepStrictEqual(inPlace(named, event), bytes(base.serialize(event, table)))
      const fingerprinted = RowSerializer.filter({ ...base, fingerprint: () => 1 }, () => true)
      assert.strictEqual(fingerprinted.fingerprint?.(table), 1)
      assert.isUndefined(fingerprinted.encodeInto, "a spread has no in-place writer, and filter adds none")
    }))

  it.effect("contramap maps on both paths; failures keep their path", () =>
    Effect.gen(function*() {
      const base = yield* RowSerializer.fromSchema(Event)
      const fromTuple = pipe(base, RowSerializer.contramap(([id, name]: readonly [number, string]) => ({ id, name })))
      assert.deepStrictEqual(
        bytes(fromTuple.serialize([3, "c"], table)),
        bytes(base.serialize({ id: 3, name: "c" }, table))
      )
      assert.deepStrictEqual(inPlace(fromTuple, [3, "c"]), bytes(base.serialize({ id: 3, name: "c" }, table)))
      const failure = fromTuple.serialize([1.5, "x"], table)
      assert.isTrue(RowSerializer.isRowSerializationError(failure))
      assert.strictEqual(
        RowSerializer.isRowSerializationError(failure) ? failure.message : "",
        "id: INT64 takes an integer, was 1.5 (not an integer)"
      )
    }))

  it("make holds encodeInto so that a spread leaves it behind", () => {
    const written: Array<string> = []
    const serializer = RowSerializer.make<string>({
      tableSchema: () => ({ fields: [] }),
      serialize: () => new Uint8Array(),
      encodeInto: (buffer, element) => {
        written.push(element)
        return encodeInto(buffer, element, table)
      }
    })
    assert.deepStrictEqual(inPlace(serializer, "a"), [])
    assert.deepStrictEqual(written, ["a"], "the given encodeInto ran")
    assert.deepStrictEqual(Object.keys(serializer), ["tableSchema", "serialize"])
    assert.isFalse("encodeInto" in { ...serializer })
  })
})
