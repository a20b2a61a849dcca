/**
 * Smoke test: the BigQuery emulator answers the official clients on loopback: REST (datasets, tables, query and
 * load jobs) through `@google-cloud/bigquery`, and the Storage Write API `_default` stream through
 * `@google-cloud/bigquery-storage`'s managedwriter. The load job reads a `gs://` object uploaded through the GCS
 * emulator, which proves the two share one filesystem root.
 */
import { assert, layer } from "@effect/vitest"
import type { TableField } from "@google-cloud/bigquery"
import { adapt, managedwriter } from "@google-cloud/bigquery-storage"
import { Effect, Layer } from "effect"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { GcsEmulator } from "../../support/GcsEmulator.ts"

const schema: Array<TableField> = [
  { name: "id", type: "INTEGER", mode: "REQUIRED" },
  { name: "name", type: "STRING", mode: "NULLABLE" },
  { name: "ts", type: "TIMESTAMP", mode: "NULLABLE" }
]

/** A fresh dataset with one empty table of `schema`. */
const freshTable = Effect.gen(function*() {
  const emulator = yield* BigQueryEmulator
  const bq = yield* Clients.bigQuery(emulator)
  const datasetId = Clients.uniqueId("smoke")
  const tableId = "events"
  yield* Effect.tryPromise(() => bq.createDataset(datasetId))
  yield* Effect.tryPromise(() => bq.dataset(datasetId).createTable(tableId, { schema }))
  return { emulator, bq, datasetId, tableId, sqlName: `\`${emulator.projectId}.${datasetId}.${tableId}\`` }
})

/** Appends JSON rows to the table's `_default` stream and returns the append response. */
const appendDefault = (
  writer: managedwriter.WriterClient,
  destinationTable: string,
  rows: Parameters<managedwriter.JSONWriter["appendRows"]>[0]
) =>
  Effect.gen(function*() {
    const connection = yield* Effect.acquireRelease(
      Effect.tryPromise(() =>
        writer.createStreamConnection({ streamId: managedwriter.DefaultStream, destinationTable })
      ),
      (c) => Effect.sync(() => c.close())
    )
    // without an 'error' listener a stream error would crash the worker
    const errors: Array<unknown> = []
    connection.onConnectionError((error) => errors.push(error))
    const protoDescriptor = adapt.convertStorageSchemaToProto2Descriptor(
      adapt.convertBigQuerySchemaToStorageTableSchema({ fields: schema }),
      "root"
    )
    const json = new managedwriter.JSONWriter({ connection, protoDescriptor })
    const response = yield* Effect.tryPromise(() => json.appendRows(rows).getResult())
    assert.deepStrictEqual(errors, [])
    return response
  }).pipe(Effect.scoped)

layer(Layer.merge(BigQueryEmulator.layer, GcsEmulator.layer), { timeout: "60 seconds", excludeTestServices: true })(
  "BigQuery emulator",
  (it) => {
    it.effect("creates a dataset and table over REST, appends through the _default stream, reads back by query", () =>
      Effect.gen(function*() {
        const { bq, datasetId, emulator, sqlName, tableId } = yield* freshTable
        const [metadata] = yield* Effect.tryPromise(() => bq.dataset(datasetId).table(tableId).getMetadata())
        assert.deepStrictEqual(
          metadata.schema.fields.map((f: TableField) => [f.name, f.type, f.mode]),
          [["id", "INTEGER", "REQUIRED"], ["name", "STRING", "NULLABLE"], ["ts", "TIMESTAMP", "NULLABLE"]]
        )

        const writer = yield* Clients.bigQueryWriter(emulator)
        const response = yield* appendDefault(
          writer,
          `projects/${emulator.projectId}/datasets/${datasetId}/tables/${tableId}`,
          [
            // TIMESTAMP as int64 microseconds since the epoch, the canonical Storage Write encoding
            { id: 1, name: "alpha", ts: 1_700_000_000_123_456 },
            { id: 2, name: "beta", ts: null }
          ]
        )
        assert.isNull(response.error ?? null)
        assert.isNotNull(response.appendResult ?? null)

        const [rows] = yield* Effect.tryPromise(() =>
          bq.query({ query: `SELECT id, name, ts FROM ${sqlName} ORDER BY id`, useQueryCache: false })
        )
        assert.deepStrictEqual(
          rows.map((
            r: { id: number; name: string; ts: { value: string } | null }
          ) => [r.id, r.name, r.ts?.value ?? null]),
          // the client asks for int64 micros and renders them through PreciseDate, with nanosecond digits
          [[1, "alpha", "2023-11-14T22:13:20.123456000Z"], [2, "beta", null]]
        )
      }))

    it.effect("a cached query sees rows appended through the Storage Write API afterwards", () =>
      Effect.gen(function*() {
        const { bq, datasetId, emulator, sqlName, tableId } = yield* freshTable
        const count = Effect.tryPromise(() => bq.query({ query: `SELECT COUNT(*) AS n FROM ${sqlName}` })).pipe(
          Effect.map(([rows]) => (rows as Array<{ n: number }>)[0]!.n)
        )
        assert.strictEqual(yield* count, 0)
        const writer = yield* Clients.bigQueryWriter(emulator)
        yield* appendDefault(writer, `projects/${emulator.projectId}/datasets/${datasetId}/tables/${tableId}`, [
          { id: 1, name: "a" },
          { id: 2, name: "b" }
        ])
        assert.strictEqual(yield* count, 2)
      }))

    it.effect("runs a load job from a gs:// object uploaded through the GCS emulator", () =>
      Effect.gen(function*() {
        const { bq, datasetId, emulator, sqlName, tableId } = yield* freshTable
        const gcs = yield* GcsEmulator
        assert.strictEqual(emulator.gcsRoot, gcs.root)

        const storage = yield* Clients.storage(gcs)
        const bucketName = Clients.uniqueId("load").replaceAll("_", "-")
        yield* Effect.tryPromise(() => storage.createBucket(bucketName))
        const ndjson = "{\"id\":10,\"name\":\"ten\"}\n{\"id\":11,\"name\":\"eleven\"}\n"
        yield* Effect.tryPromise(() => storage.bucket(bucketName).file("staging/part-0.ndjson").save(ndjson))

        const [job] = yield* Effect.tryPromise(() =>
          bq.createJob({
            configuration: {
              load: {
                sourceUris: [`gs://${bucketName}/staging/part-0.ndjson`],
                destinationTable: { projectId: emulator.projectId, datasetId, tableId },
                sourceFormat: "NEWLINE_DELIMITED_JSON",
                writeDisposition: "WRITE_APPEND"
              }
            }
          })
        )
        yield* Effect.tryPromise(() => job.promise())
        const [jobMetadata] = yield* Effect.tryPromise(() => job.getMetadata())
        assert.strictEqual(jobMetadata.status?.state, "DONE")
        assert.isUndefined(jobMetadata.status?.errorResult)

        const [rows] = yield* Effect.tryPromise(() =>
          bq.query({ query: `SELECT id, name FROM ${sqlName} ORDER BY id`, useQueryCache: false })
        )
        assert.deepStrictEqual(rows, [{ id: 10, name: "ten" }, { id: 11, name: "eleven" }])
      }))
  }
)
