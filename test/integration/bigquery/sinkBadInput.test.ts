/**
 * Bad input: fast-check generated records mixing valid and invalid values go through the sink into the
 * emulator. Every valid record lands, every invalid one reaches the handler with its field path, and the
 * write completes.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Ref, Schema, Stream } from "effect"
import * as fc from "fast-check"
import { type BigQueryFailure, BigQuerySink, RowSerializer, TableDestination } from "../../../src/BigQuery/index.ts"
import { FailureHandler } from "../../../src/Sink.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { testLayer } from "./emulatorClient.ts"

const Event = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  amount: Schema.Number,
  at: Schema.Date,
  tags: Schema.Array(Schema.String)
})

type Kind = "ok" | "id" | "name" | "amount" | "at" | "tags"

const spoil: Record<Exclude<Kind, "ok">, (r: Record<string, unknown>) => Record<string, unknown>> = {
  id: (r) => ({ ...r, id: Number(r["id"]) + 0.5 }),
  name: (r) => ({ ...r, name: 42 }),
  amount: (r) => ({ ...r, amount: "12.5" }),
  at: (r) => ({ ...r, at: new Date(Number.NaN) }),
  tags: (r) => ({ ...r, tags: ["a", 7] })
}

layer(testLayer, { timeout: "120 seconds", excludeTestServices: true })("BigQuerySink bad input", (it) => {
  it.effect("valid records land, invalid ones reach the handler with their field path", () =>
    Effect.gen(function*() {
      const samples = fc.sample(
        fc.record({
          kind: fc.constantFrom<Kind>("ok", "ok", "ok", "id", "name", "amount", "at", "tags"),
          name: fc.string({ maxLength: 40 }),
          amount: fc.double({ noNaN: true, noDefaultInfinity: true }),
          at: fc.date({
            min: new Date("1970-01-01T00:00:00Z"),
            max: new Date("2200-01-01T00:00:00Z"),
            noInvalidDate: true
          }),
          tags: fc.array(fc.string({ maxLength: 8 }), { maxLength: 4 })
        }),
        { numRuns: 2000, seed: 4242 }
      )
      const records = samples.map((s, id) => {
        const base: Record<string, unknown> = { id, name: s.name, amount: s.amount, at: s.at, tags: s.tags }
        return { kind: s.kind, id, value: s.kind === "ok" ? base : spoil[s.kind](base) }
      })
      const emulator = yield* BigQueryEmulator
      const bq = yield* Clients.bigQuery(emulator)
      const datasetId = Clients.uniqueId("bad")
      yield* Effect.tryPromise(() => bq.createDataset(datasetId))
      const table = yield* TableDestination.make({
        projectId: emulator.projectId,
        datasetId: datasetId,
        tableId: "events"
      })
      const serializer = yield* RowSerializer.fromSchema(Event)
      const failures = yield* Ref.make<Array<BigQueryFailure.BigQueryFailure>>([])
      const summary = yield* Stream.fromIterable(records.map((r) => r.value as unknown as typeof Event.Type)).pipe(
        Stream.rechunk(97),
        Stream.run(BigQuerySink.make({
          table,
          serializer,
          failureHandler: FailureHandler.make({
            handle: (f: BigQueryFailure.BigQueryFailure) => Ref.update(failures, (l) => [...l, f])
          })
        }))
      )
      const valid = records.filter((r) => r.kind === "ok")
      const invalid = records.filter((r) => r.kind !== "ok")
      assert.isAbove(invalid.length, 100)
      assert.strictEqual(summary.recordsWritten, valid.length)
      assert.strictEqual(summary.recordsFailed, invalid.length)
      const routed = yield* Ref.get(failures)
      assert.strictEqual(routed.length, invalid.length)
      // routed in input order, each naming the spoiled field
      routed.forEach((f, i) => {
        const kind = invalid[i]!.kind
        assert.strictEqual(f._tag, "FailedRow")
        assert.strictEqual(f.destination, `${emulator.projectId}.${datasetId}.events`)
        assert.match(f.message, new RegExp(`^${kind}(\\[\\d+\\])?: `), `record ${invalid[i]!.id}: ${f.message}`)
      })
      const [rows] = yield* Effect.tryPromise(() =>
        bq.query({
          query:
            `SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d, SUM(id) AS s FROM \`${emulator.projectId}.${datasetId}.events\``,
          useQueryCache: false
        })
      )
      assert.deepStrictEqual(rows[0], {
        n: valid.length,
        d: valid.length,
        s: valid.reduce((n, r) => n + r.id, 0)
      })
    }))
})
