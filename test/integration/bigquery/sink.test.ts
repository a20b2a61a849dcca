/**
 * The at-least-once BigQuery sink against the BigQuery emulator, through the public API only (the
 * client layer with emulator endpoints); results checked with queries through the official REST client.
 */
import { assert, layer } from "@effect/vitest"
import type { BigQuery } from "@google-cloud/bigquery"
import { Effect, Exit, Stream } from "effect"
import {
  BigQuerySink,
  type RowSerializer,
  RowSerializer as Serializers,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { testLayer } from "./emulatorClient.ts"

const schemaV1: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "name", type: "STRING" }),
    TableSchema.field({ name: "ts", type: "TIMESTAMP" })
  ]
}
const schemaV2: TableSchema.TableSchema = {
  fields: [...schemaV1.fields, TableSchema.field({ name: "extra", type: "STRING" })]
}

interface Row {
  readonly id: number
  readonly name?: string
  readonly ts?: Date
  readonly extra?: string
}

const rows = (n: number, from = 0): Array<Row> =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, name: `n${from + i}`, ts: new Date(1_700_000_000_000 + i) }))

/** A fresh dataset; returns its id and a REST client. */
const freshDataset = Effect.gen(function*() {
  const emulator = yield* BigQueryEmulator
  const bq = yield* Clients.bigQuery(emulator)
  const datasetId = Clients.uniqueId("sink")
  yield* Effect.tryPromise(() => bq.createDataset(datasetId))
  return { emulator, bq, datasetId }
})

const query = <T>(bq: BigQuery, sql: string): Effect.Effect<Array<T>, unknown> =>
  Effect.tryPromise(() => bq.query({ query: sql, useQueryCache: false })).pipe(Effect.map(([r]) => r as Array<T>))

const count = (bq: BigQuery, table: string, where = "TRUE") =>
  query<{ n: number; d: number }>(bq, `SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM \`${table}\` WHERE ${where}`)
    .pipe(Effect.map((r) => r[0]!))

/** Adds `extra` to the table's catalog schema over REST (what `tables.patch` changes on bqemulator). */
const patchCatalog = (bq: BigQuery, datasetId: string, tableId: string) =>
  Effect.gen(function*() {
    const t = bq.dataset(datasetId).table(tableId)
    const [metadata] = yield* Effect.tryPromise(() => t.getMetadata())
    yield* Effect.tryPromise(() =>
      t.setMetadata({
        schema: { fields: [...metadata.schema.fields, { name: "extra", type: "STRING", mode: "NULLABLE" }] }
      })
    )
  })

/** A serializer whose schema version can be switched mid-stream (its fingerprint is the version). */
const evolving = Effect.gen(function*() {
  const v1 = yield* Serializers.fromJson(schemaV1)
  const v2 = yield* Serializers.fromJson(schemaV2)
  let version = 1
  const current = () => (version === 1 ? v1 : v2)
  const serializer: RowSerializer.RowSerializer<Row> = {
    tableSchema: (d) => current().tableSchema(d),
    descriptor: (d) => Serializers.descriptorOf(current(), d),
    fingerprint: () => version,
    serialize: (row, d) => current().serialize(row, d)
  }
  return { serializer, upgrade: () => void (version = 2) }
})

layer(testLayer, { timeout: "180 seconds", excludeTestServices: true })("BigQuerySink on the emulator", (it) => {
  it.effect("writes 200,000 rows, each exactly once by id", () =>
    Effect.gen(function*() {
      const { bq, datasetId, emulator } = yield* freshDataset
      const table = yield* TableDestination.make({
        projectId: emulator.projectId,
        datasetId: datasetId,
        tableId: "big"
      })
      const summary = yield* Stream.fromIterable(rows(200_000)).pipe(
        Stream.rechunk(2000),
        Stream.run(BigQuerySink.make({ table, serializer: yield* Serializers.fromJson(schemaV1) }))
      )
      assert.strictEqual(summary.recordsWritten, 200_000)
      // write_stream goes on every request, so the emulator never ends a connection (appendRows.test.ts)
      assert.strictEqual(summary.retries, 0)
      const { d, n } = yield* count(bq, `${emulator.projectId}.${datasetId}.big`)
      assert.strictEqual(d, 200_000)
      assert.strictEqual(n, 200_000)
    }), { timeout: 170_000 })

  it.effect("routes records to four tables, creating each, every table complete", () =>
    Effect.gen(function*() {
      const { bq, datasetId, emulator } = yield* freshDataset
      const tables = yield* Effect.forEach(
        ["t0", "t1", "t2", "t3"],
        (t) => TableDestination.make({ projectId: emulator.projectId, datasetId: datasetId, tableId: t })
      )
      const summary = yield* Stream.fromIterable(rows(4000)).pipe(
        Stream.rechunk(250),
        Stream.run(BigQuerySink.make({
          destinationResolver: (r: Row) => tables[r.id % 4]!,
          serializer: yield* Serializers.fromJson(schemaV1)
        }))
      )
      assert.strictEqual(summary.recordsWritten, 4000)
      for (const [i, t] of ["t0", "t1", "t2", "t3"].entries()) {
        const { d, n } = yield* count(bq, `${emulator.projectId}.${datasetId}.${t}`)
        assert.deepStrictEqual([n, d], [1000, 1000])
        const [bad] = yield* query<{ n: number }>(
          bq,
          `SELECT COUNT(*) AS n FROM \`${emulator.projectId}.${datasetId}.${t}\` WHERE MOD(id, 4) != ${i}`
        )
        assert.strictEqual(bad!.n, 0)
      }
    }))

  it.effect("creates a missing table with time partitioning and clustering", () =>
    Effect.gen(function*() {
      const { bq, datasetId, emulator } = yield* freshDataset
      const table = yield* TableDestination.make({
        projectId: emulator.projectId,
        datasetId: datasetId,
        tableId: "parted"
      })
      yield* Stream.fromIterable(rows(10)).pipe(
        Stream.run(BigQuerySink.make({
          table,
          serializer: yield* Serializers.fromJson(schemaV1),
          tableCreateOptions: { timePartitioning: { type: "DAY", field: "ts" }, clustering: ["name", "id"] }
        }))
      )
      const [metadata] = yield* Effect.tryPromise(() => bq.dataset(datasetId).table("parted").getMetadata())
      assert.deepStrictEqual(
        metadata.schema.fields.map((f: { name: string; type: string; mode: string }) => [f.name, f.type, f.mode]),
        [["id", "INTEGER", "REQUIRED"], ["name", "STRING", "NULLABLE"], ["ts", "TIMESTAMP", "NULLABLE"]]
      )
      assert.strictEqual(metadata.timePartitioning?.type, "DAY")
      assert.strictEqual(metadata.timePartitioning?.field, "ts")
      assert.deepStrictEqual(metadata.clustering?.fields, ["name", "id"])
      assert.strictEqual((yield* count(bq, `${emulator.projectId}.${datasetId}.parted`)).n, 10)
    }))

  it.effect("CREATE_NEVER fails fast with TableNotFound and creates nothing", () =>
    Effect.gen(function*() {
      const { bq, datasetId, emulator } = yield* freshDataset
      const table = yield* TableDestination.make({
        projectId: emulator.projectId,
        datasetId: datasetId,
        tableId: "absent"
      })
      const started = Date.now()
      const exit = yield* Stream.fromIterable(rows(5)).pipe(
        Stream.run(BigQuerySink.make({
          table,
          serializer: yield* Serializers.fromJson(schemaV1),
          createDisposition: "CREATE_NEVER"
        })),
        Effect.exit
      )
      // at once, not after a retry budget (minutes by default); the emulator shares a loaded machine
      assert.isBelow(Date.now() - started, 15_000)
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail"
        ? exit.cause.reasons[0].error
        : undefined
      assert.strictEqual((error as { reason?: { _tag: string } } | undefined)?.reason?._tag, "BigQueryTableNotFound")
      const [exists] = yield* Effect.tryPromise(() => bq.dataset(datasetId).table("absent").exists())
      assert.isFalse(exists)
    }))

  it.effect("picks up a column added externally mid-stream when the serializer evolves", () =>
    Effect.gen(function*() {
      const { bq, datasetId, emulator } = yield* freshDataset
      const name = `${emulator.projectId}.${datasetId}.ext`
      const table = yield* TableDestination.make({
        projectId: emulator.projectId,
        datasetId: datasetId,
        tableId: "ext"
      })
      const { serializer, upgrade } = yield* evolving
      const writer = yield* BigQuerySink.writer({
        table,
        serializer,
        writeMethod: WriteMethod.atLeastOnce({
          recovery: { initialBackoff: "10 millis", maxBackoff: "10 seconds", maxAttempts: 10 }
        })
      })
      yield* writer.write(rows(100))
      yield* writer.flush
      // emulator deviation (pinned below): the Storage Write path aligns rows to the catalog schema, which
      // ALTER TABLE does not update; the external change is therefore the DDL plus the catalog patch
      yield* query(bq, `ALTER TABLE \`${name}\` ADD COLUMN extra STRING`)
      yield* patchCatalog(bq, datasetId, "ext")
      upgrade()
      yield* writer.write(rows(100, 100).map((r) => Object.assign(r, { extra: `x${r.id}` })))
      yield* writer.flush
      assert.deepStrictEqual(yield* count(bq, name), { n: 200, d: 200 })
      assert.strictEqual((yield* count(bq, name, "extra IS NOT NULL")).n, 100)
      const [sample] = yield* query<{ extra: string }>(bq, `SELECT extra FROM \`${name}\` WHERE id = 150`)
      assert.strictEqual(sample!.extra, "x150")
    }))

  it.effect("deviation: the emulator drops unknown fields silently, so allowNewFields never sees a mismatch", () =>
    Effect.gen(function*() {
      const { bq, datasetId, emulator } = yield* freshDataset
      const name = `${emulator.projectId}.${datasetId}.evo`
      const table = yield* TableDestination.make({
        projectId: emulator.projectId,
        datasetId: datasetId,
        tableId: "evo"
      })
      const { serializer, upgrade } = yield* evolving
      const writer = yield* BigQuerySink.writer({
        table,
        serializer,
        schemaUpdate: { allowNewFields: true, allowFieldRelaxation: false }
      })
      yield* writer.write(rows(50))
      yield* writer.flush
      upgrade()
      yield* writer.write(rows(50, 50).map((r) => Object.assign(r, { extra: `x${r.id}` })))
      yield* writer.flush
      assert.strictEqual((yield* writer.summary).recordsWritten, 100)
      // the real service answers SCHEMA_MISMATCH_EXTRA_FIELDS and the sink patches the table (covered
      // against the fake); bqemulator aligns rows to the table and drops the extra column
      const [metadata] = yield* Effect.tryPromise(() => bq.dataset(datasetId).table("evo").getMetadata())
      assert.deepStrictEqual(
        metadata.schema.fields.map((f: { name: string }) => f.name),
        ["id", "name", "ts"]
      )
      assert.deepStrictEqual(yield* count(bq, name), { n: 100, d: 100 })
    }))

  it.effect("deviation: after ALTER TABLE ADD COLUMN alone, appends fail with UNKNOWN (catalog schema stale)", () =>
    Effect.gen(function*() {
      const { bq, datasetId, emulator } = yield* freshDataset
      const name = `${emulator.projectId}.${datasetId}.ddl`
      const table = yield* TableDestination.make({
        projectId: emulator.projectId,
        datasetId: datasetId,
        tableId: "ddl"
      })
      const writer = yield* BigQuerySink.writer({
        table,
        serializer: yield* Serializers.fromJson(schemaV1),
        writeMethod: WriteMethod.atLeastOnce({
          recovery: { initialBackoff: "1 millis", maxBackoff: "10 seconds", maxAttempts: 1 },
          retry: { initialBackoff: "500 millis", maxBackoff: "30 seconds", maxAttempts: 1 }
        })
      })
      yield* writer.write(rows(5))
      yield* writer.flush
      yield* query(bq, `ALTER TABLE \`${name}\` ADD COLUMN extra STRING`)
      const exit = yield* Effect.exit(Effect.andThen(writer.write(rows(5, 5)), writer.flush))
      const error = Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail"
        ? exit.cause.reasons[0].error
        : undefined
      const reason = (error as { reason?: { _tag: string; code: string; detail: string } } | undefined)?.reason
      assert.strictEqual(reason?._tag, "BigQueryRetriesExhausted")
      assert.strictEqual(reason?.code, "UNKNOWN")
      assert.include(reason?.detail ?? "", "4 columns but 3 values")
    }))
})
