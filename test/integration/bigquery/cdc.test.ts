/**
 * CDC against the BigQuery emulator (bqemulator), through the public sink and the provisioning I/O,
 * with each deviation from BigQuery pinned (reference 2.12; emulators.md):
 *
 * - a CDC table is created with its contract label, but `tableConstraints` is dropped, so the
 *   re-read finds no primary key and the sink stops with `cdc.NoPrimaryKey`;
 * - labels are kept and patched; `If-Match` is not enforced (a stale etag is accepted);
 * - `ALTER TABLE ... SET OPTIONS (max_staleness ...)` runs as a query job, but
 *   `INFORMATION_SCHEMA.TABLE_OPTIONS` has no `max_staleness` row afterwards;
 * - there is no CDC apply: rows with `_CHANGE_TYPE` are appended as they are.
 *
 * The protocol itself is proven on the fake BigQuery (test/BigQuery/BigQuerySink.cdcTables.test.ts).
 */
import { assert, layer } from "@effect/vitest"
import { managedwriter } from "@google-cloud/bigquery-storage"
import { Effect, Exit, Stream } from "effect"
import {
  BigQueryClient,
  BigQuerySink,
  type Cdc,
  CdcTableOptions,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import * as CdcProvision from "../../../src/internal/bigquery/cdc/provision.ts"
import * as CdcRow from "../../../src/internal/bigquery/cdc/rowFields.ts"
import * as tables from "../../../src/internal/bigquery/schema/tables.ts"
import { BigQueryEmulator } from "../../support/BigQueryEmulator.ts"
import * as Clients from "../../support/clients.ts"
import { testLayer } from "./emulatorClient.ts"

interface Change {
  readonly op: Cdc.ChangeType
  readonly id: number
  readonly name?: string
  readonly seq: string
}

const schema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "name", type: "STRING" })
  ]
}
const changes: ReadonlyArray<Change> = [
  { op: "UPSERT", id: 1, name: "a", seq: "1" },
  { op: "UPSERT", id: 1, name: "b", seq: "2" },
  { op: "DELETE", id: 1, seq: "3" }
]
const serializer = Effect.map(
  RowSerializer.fromJson(schema),
  (json) => RowSerializer.contramap(json, ({ id, name }: Change) => ({ id, name }))
)

const freshTable = Effect.gen(function*() {
  const emulator = yield* BigQueryEmulator
  const bq = yield* Clients.bigQuery(emulator)
  const datasetId = Clients.uniqueId("cdc")
  yield* Effect.tryPromise(() => bq.createDataset(datasetId))
  const table = yield* TableDestination.make({ projectId: emulator.projectId, datasetId, tableId: "t" })
  return { bq, table, metadata: Effect.tryPromise(() => bq.dataset(datasetId).table("t").getMetadata()) }
})

const methodOf = (exit: Exit.Exit<unknown, unknown>): unknown => {
  if (!Exit.isFailure(exit)) return "success"
  const first = exit.cause.reasons[0]
  const error: unknown = first !== undefined && "error" in first ? first.error : undefined
  const reason: unknown = typeof error === "object" && error !== null ? Reflect.get(error, "reason") : undefined
  return typeof reason === "object" && reason !== null ? Reflect.get(reason, "method") : undefined
}

layer(testLayer, { timeout: "180 seconds", excludeTestServices: true })("CDC on the emulator", (it) => {
  it.effect("the table is created with its label; tableConstraints is dropped (pinned), so the sink stops: no primary key", () =>
    Effect.gen(function*() {
      const contracts: ReadonlyArray<CdcTableOptions.CdcTableOptionsInput> = [
        { primaryKey: ["id"] },
        { primaryKey: ["id"], maxStaleness: "10 minutes" }
      ]
      for (const tableOptions of contracts) {
        const { metadata, table } = yield* freshTable
        const exit = yield* Effect.exit(
          Stream.fromIterable(changes).pipe(Stream.run(BigQuerySink.make({
            table,
            serializer: yield* serializer,
            writeMethod: WriteMethod.atLeastOnce({
              cdc: { changeType: (c: Change) => c.op, sequenceNumber: (c: Change) => c.seq, tableOptions }
            })
          })))
        )
        assert.strictEqual(methodOf(exit), "cdc.NoPrimaryKey")
        const [m] = yield* metadata
        const options = yield* CdcTableOptions.make(tableOptions)
        const hash = CdcTableOptions.specHash(options)
        const expected = options.maxStaleness._tag === "Unmanaged" ? `complete_${hash}` : `pending_${hash}`
        assert.deepStrictEqual(m.labels, { flink_gcp_cdc: expected })
        assert.isUndefined(m.tableConstraints) // BigQuery keeps { primaryKey: { columns: ["id"] } }
        assert.deepStrictEqual(m.schema.fields.map((f: { name: string }) => f.name), ["id", "name"])
      }
    }))

  it.effect("labels patch and ALTER TABLE max_staleness run; If-Match and TABLE_OPTIONS are not emulated (pinned)", () =>
    Effect.gen(function*() {
      const client = yield* BigQueryClient.BigQueryClient
      const { bq, metadata, table } = yield* freshTable
      yield* Effect.tryPromise(() =>
        bq.dataset(table.datasetId).createTable(table.tableId, {
          schema: TableSchema.toRest(schema),
          labels: { team: "a", flink_gcp_cdc: "pending_x" }
        })
      )
      const live = yield* tables.get(client.rest, table)
      assert.isDefined(live)
      if (live === undefined) return
      const snapshot = CdcProvision.snapshotOf(live)
      assert.deepStrictEqual(snapshot.labels, { team: "a", flink_gcp_cdc: "pending_x" })
      assert.deepStrictEqual(snapshot.primaryKey, [])
      yield* tables.patch(
        client.rest,
        table,
        { labels: { ...snapshot.labels, flink_gcp_cdc: "complete_x" } },
        snapshot.etag
      )
      const [after] = yield* metadata
      assert.deepStrictEqual(after.labels, { team: "a", flink_gcp_cdc: "complete_x" })
      assert.notStrictEqual(after.etag, snapshot.etag)
      // a stale etag is accepted: BigQuery answers 412 Precondition Failed
      const stale = yield* Effect.exit(
        tables.patch(client.rest, table, { labels: { flink_gcp_cdc: "pending_y" } }, snapshot.etag)
      )
      assert.isTrue(Exit.isSuccess(stale))
      const alter = yield* CdcProvision.query(
        client,
        table,
        CdcProvision.alterSql(table, { _tag: "AlterStaleness", maxStaleness: { _tag: "Set", micros: 600_000_000n } })
      )
      assert.deepStrictEqual(alter, [])
      // BigQuery answers one row: INTERVAL "0-0 0 0:10:0" YEAR TO SECOND
      assert.deepStrictEqual(yield* CdcProvision.query(client, table, CdcProvision.selectSql(table)), [])
    }))

  it.effect("no CDC apply (pinned): UPSERT and DELETE rows are appended as they are", () =>
    Effect.gen(function*() {
      const emulator = yield* BigQueryEmulator
      const { bq, table } = yield* freshTable
      yield* Effect.tryPromise(() =>
        bq.dataset(table.datasetId).createTable(table.tableId, {
          schema: TableSchema.toRest(schema),
          tableConstraints: { primaryKey: { columns: ["id"] } }
        })
      )
      const cdcSerializer = CdcRow.augment(yield* serializer, {
        changeType: (c: Change) => c.op,
        sequenceNumber: (c: Change) => c.seq
      })
      const writer = yield* Clients.bigQueryWriter(emulator)
      const connection = yield* Effect.acquireRelease(
        Effect.tryPromise(() =>
          writer.createStreamConnection({ streamId: managedwriter.DefaultStream, destinationTable: table.tablePath })
        ),
        (c) => Effect.sync(() => c.close())
      )
      const protoWriter = new managedwriter.Writer({
        connection,
        protoDescriptor: RowSerializer.descriptorOf(cdcSerializer, table)
      })
      const serializedRows = changes.map((c) => Buffer.from(cdcSerializer.serialize(c, table) as Uint8Array))
      const response = yield* Effect.tryPromise(() => protoWriter.appendRows({ serializedRows }).getResult())
      assert.isNull(response.error ?? null)
      const [rows] = yield* Effect.tryPromise(() =>
        bq.query({ query: `SELECT id, name FROM \`${table}\` ORDER BY name`, useQueryCache: false })
      )
      // BigQuery would hold no row for id 1 (its latest change is a DELETE)
      assert.deepStrictEqual(rows, [{ id: 1, name: null }, { id: 1, name: "a" }, { id: 1, name: "b" }])
    }).pipe(Effect.scoped))
})
