/**
 * File loads against the emulators (reference 4.2's file-load scenarios): records staged as Avro
 * through fake-gcs-server, loaded by bqemulator's load jobs (its `gs://` root is fake-gcs-server's
 * filesystem root), read back through the REST client. Deviations of the emulator are pinned here.
 */
import { assert, layer } from "@effect/vitest"
import type { BigQuery } from "@google-cloud/bigquery"
import type { Storage } from "@google-cloud/storage"
import avro from "avsc"
import { Effect, Exit, Metric, Option, Schema, Sink, Stream } from "effect"
import * as zlib from "node:zlib"
import {
  type BigQueryFailure,
  BigQueryMetrics,
  BigQuerySink,
  RowSerializer,
  SchemaUpdateOptions,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../../src/BigQuery/index.ts"
import * as Avro from "../../../src/internal/bigquery/fileLoads/avro.ts"
import * as FileLoadsOptions from "../../../src/internal/bigquery/fileLoads/options.ts"
import * as Plan from "../../../src/internal/bigquery/fileLoads/plan.ts"
import * as Runner from "../../../src/internal/bigquery/fileLoads/runner.ts"
import * as Staging from "../../../src/internal/bigquery/fileLoads/staging.ts"
import { Checkpoint, CheckpointRecord, CheckpointStore, FailureHandler } from "../../../src/Sink.ts"
import * as Clients from "../../support/clients.ts"
import * as Harness from "./fileLoadsHarness.ts"

/** Columns without logical types (every column type, each at its extremes: fileLoadsTypes.test.ts). */
const schema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "name", type: "STRING" }),
    TableSchema.field({ name: "blob", type: "BYTES" }),
    TableSchema.field({ name: "score", type: "FLOAT64" }),
    TableSchema.field({ name: "ok", type: "BOOL" }),
    TableSchema.field({ name: "tags", type: "STRING", mode: "REPEATED" }),
    TableSchema.record({
      name: "addr",
      fields: [
        TableSchema.field({ name: "city", type: "STRING" }),
        TableSchema.field({ name: "zip", type: "INT64", mode: "REPEATED" })
      ]
    })
  ]
}

interface Row {
  readonly id: number
  readonly name: string | null
  readonly blob: Uint8Array | null
  readonly score: number | null
  readonly ok: boolean | null
  readonly tags: ReadonlyArray<string>
  readonly addr: { readonly city: string | null; readonly zip: ReadonlyArray<number> } | null
}

const rowOf = (id: number): Row => ({
  id,
  name: id % 5 === 0 ? null : `n${id}`,
  blob: id % 7 === 0 ? null : Uint8Array.from([id % 256, 1, 2]),
  score: id % 3 === 0 ? null : id / 4,
  ok: id % 2 === 0,
  tags: id % 4 === 0 ? [] : [`t${id}`, "x"],
  addr: id % 6 === 0 ? null : { city: `c${id}`, zip: [id, id + 1] }
})

const freshSetup = Harness.freshSetup("loads")

const query = <T>(bq: BigQuery, sql: string): Effect.Effect<Array<T>, unknown> =>
  Effect.tryPromise(() => bq.query({ query: sql, useQueryCache: false })).pipe(Effect.map(([r]) => r as Array<T>))

const readBack = (bq: BigQuery, table: string) =>
  query<Record<string, unknown>>(bq, `SELECT * FROM \`${table}\` ORDER BY id`).pipe(
    Effect.map((rows) =>
      rows.map((r): Row => ({
        id: Number(r["id"]),
        name: (r["name"] as string | null) ?? null,
        blob: r["blob"] === null ? null : Uint8Array.from(r["blob"] as Buffer),
        score: (r["score"] as number | null) ?? null,
        ok: (r["ok"] as boolean | null) ?? null,
        tags: (r["tags"] as Array<string> | null) ?? [],
        addr: r["addr"] === null
          ? null
          : {
            city: ((r["addr"] as Record<string, unknown>)["city"] as string | null) ?? null,
            zip: (((r["addr"] as Record<string, unknown>)["zip"] as Array<number> | null) ?? []).map(Number)
          }
      }))
    )
  )

const narrowRest = { fields: [{ name: "id", type: "INT64", mode: "REQUIRED" }, { name: "name", type: "STRING" }] }

const wider: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "name", type: "STRING" }),
    TableSchema.field({ name: "score", type: "FLOAT64" })
  ]
}

/** Two rows of the wider schema through `BigQuerySink.make` with file loads. */
const evolve = (
  at: { readonly bucket: string; readonly datasetId: string; readonly projectId: string },
  serializer: RowSerializer.RowSerializer<unknown>,
  tableId: string,
  allowNewFields: boolean
) =>
  Effect.gen(function*() {
    const checkpoint = yield* loadOnce(`${tableId}-${allowNewFields}`)
    return yield* Stream.make({ id: 1, name: "a", score: 1.5 }, { id: 2, name: null, score: null }).pipe(
      Stream.run(BigQuerySink.make({
        table: TableDestination.makeUnsafe({ projectId: at.projectId, datasetId: at.datasetId, tableId }),
        serializer,
        schemaUpdate: { allowNewFields },
        writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${at.bucket}/${tableId}`, poll: Harness.pollFast }),
        checkpoint
      }))
    )
  }).pipe(Effect.provide(CheckpointStore.memory))

/** The `checkpoint` of a single load at the end of input (no `every`), as `writerId`, on the store in context. */
const loadOnce = (writerId: string) =>
  Effect.map(
    Checkpoint.resume({ writerId, positionSchema: Schema.Number }),
    (resume) => ({ resume, position: (row: { readonly id: number }) => row.id + 1 })
  )

const stagedObjects = (storage: Storage, bucket: string) =>
  Effect.tryPromise(() => storage.bucket(bucket).getFiles()).pipe(Effect.map(([files]) => files.map((f) => f.name)))

layer(Harness.layers, { timeout: "180 seconds", excludeTestServices: true })(
  "BigQuery file loads on the emulators",
  (it) => {
    it.effect("loads two tables from one stream across checkpoints; every row read back equal, staged files deleted", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator, storage } = yield* freshSetup
        const serializer = yield* RowSerializer.fromJson(schema)
        const even = `${emulator.projectId}.${datasetId}.even`
        const odd = `${emulator.projectId}.${datasetId}.odd`
        const resolver = (row: unknown) =>
          TableDestination.makeUnsafe({
            projectId: emulator.projectId,
            datasetId,
            tableId: (row as Row).id % 2 === 0 ? "even" : "odd"
          })
        const n = 300
        const rows = Array.from({ length: n }, (_, i) => rowOf(i))
        const resume = yield* Checkpoint.resume({ writerId: "loads-two-tables", positionSchema: Schema.Number })
        const summary = yield* Stream.fromIterable(rows).pipe(
          Stream.rechunk(25),
          Stream.run(BigQuerySink.make({
            destinationResolver: resolver,
            serializer,
            // small files: several files per table and checkpoint
            writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${bucket}/stage/`, maxStagingFileBytes: 512 }),
            checkpoint: { resume, every: 100, position: (row) => (row as Row).id + 1 }
          }))
        )
        assert.strictEqual(summary.recordsWritten, n)
        assert.deepStrictEqual(yield* readBack(bq, even), rows.filter((r) => r.id % 2 === 0))
        assert.deepStrictEqual(yield* readBack(bq, odd), rows.filter((r) => r.id % 2 === 1))
        // three checkpoints and the end of input: each checkpoint's files loaded by their own jobs
        const [jobs] = yield* Effect.tryPromise(() => bq.getJobs())
        const ours = jobs.map((j) => j.id ?? "").filter((id) => id.startsWith("effect-bq-load-loads-two-tables-"))
        assert.isAtLeast(ours.length, 6)
        assert.deepStrictEqual(yield* stagedObjects(storage, bucket), [])
      }).pipe(Effect.provide(CheckpointStore.memory)))

    it.effect("BigQuerySink.writer with WriteMethod.fileLoads loads at each checkpoint(position), nothing before", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator, storage } = yield* freshSetup
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "byhand" })
        const rows = Array.from({ length: 40 }, (_, i) => rowOf(i))
        const writer = yield* BigQuerySink.writer({
          table,
          serializer: yield* RowSerializer.fromJson(schema),
          writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${bucket}/byhand`, poll: Harness.pollFast }),
          checkpoint: { resume: (yield* loadOnce("byhand")).resume }
        })
        yield* writer.write(rows.slice(0, 25))
        yield* writer.flush
        // staged, not loaded: the table does not exist before the first checkpoint's load creates it
        const [exists] = yield* Effect.tryPromise(() => bq.dataset(datasetId).table("byhand").exists())
        assert.isFalse(exists)
        yield* writer.checkpoint(25)
        assert.deepStrictEqual(yield* readBack(bq, table.toString()), rows.slice(0, 25))
        yield* writer.write(rows.slice(25))
        yield* writer.checkpoint(40)
        assert.deepStrictEqual(yield* readBack(bq, table.toString()), rows)
        assert.strictEqual((yield* writer.summary).recordsWritten, 40)
        assert.deepStrictEqual(yield* stagedObjects(storage, bucket), [])
        const stored = yield* Checkpoint.resume({ writerId: "byhand", positionSchema: Schema.Number })
        assert.deepStrictEqual(stored.position, Option.some(40))
      }).pipe(Effect.scoped, Effect.provide(CheckpointStore.memory)))

    // Issue 36 (5): files closed since the last checkpoint are named only by the record being saved;
    // when that save is refused, nothing loaded or deleted them.
    it.effect("a fenced writer deletes the files it staged for its refused checkpoint, and loads nothing", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator, storage } = yield* freshSetup
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "fenced" })
        const rows = Array.from({ length: 30 }, (_, i) => rowOf(i))
        const writer = yield* BigQuerySink.writer({
          table,
          serializer: yield* RowSerializer.fromJson(schema),
          writeMethod: WriteMethod.fileLoads({
            stagingPath: `gs://${bucket}/fenced`,
            poll: Harness.pollFast,
            maxStagingFileBytes: 256
          }),
          checkpoint: { resume: yield* Checkpoint.resume({ writerId: "fenced", positionSchema: Schema.Number }) }
        })
        yield* writer.write(rows.slice(0, 10))
        yield* writer.checkpoint(10)
        yield* writer.write(rows.slice(10))
        yield* writer.flush
        assert.isAbove((yield* stagedObjects(storage, bucket)).length, 1, "several files staged since the checkpoint")
        // another process takes the writer over and saves: this one's next save is refused
        const store = yield* CheckpointStore
        const current = Option.getOrThrow(yield* store.load("fenced"))
        yield* store.save("fenced", new CheckpointRecord({ ...current, id: "successor" }), current.id)
        const before = yield* Metric.value(BigQueryMetrics.stagedFilesDiscarded)
        const refused = yield* Effect.flip(writer.checkpoint(30))
        assert.strictEqual(refused._tag, "CheckpointConflict")
        assert.deepStrictEqual(yield* stagedObjects(storage, bucket), [])
        const after = yield* Metric.value(BigQueryMetrics.stagedFilesDiscarded)
        assert.isAbove(after.count - before.count, 1)
        assert.deepStrictEqual(yield* readBack(bq, table.toString()), rows.slice(0, 10))
      }).pipe(Effect.scoped, Effect.provide(CheckpointStore.memory)))

    it.effect("BigQuerySink.make with WriteMethod.fileLoads and no checkpoint.every loads everything at the end of input", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator, storage } = yield* freshSetup
        const serializer = yield* RowSerializer.fromJson(schema)
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "plain" })
        const rows = Array.from({ length: 120 }, (_, i) => rowOf(i))
        const summary = yield* Stream.fromIterable(rows).pipe(
          Stream.rechunk(16),
          Stream.run(BigQuerySink.make({
            table,
            serializer,
            writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${bucket}/plain`, maxStagingFileBytes: 1024 }),
            checkpoint: yield* loadOnce("plain")
          }))
        )
        assert.strictEqual(summary.recordsWritten, rows.length)
        assert.deepStrictEqual(yield* readBack(bq, table.toString()), rows)
        // the one checkpoint is one load job, named by the writer id
        const [jobs] = yield* Effect.tryPromise(() => bq.getJobs())
        const ours = jobs.filter((j) =>
          (j.id ?? "").startsWith("effect-bq-load-plain-") &&
          j.metadata?.configuration?.load?.destinationTable?.datasetId === datasetId
        )
        assert.strictEqual(ours.length, 1)
        assert.deepStrictEqual(yield* stagedObjects(storage, bucket), [])
      }).pipe(Effect.provide(CheckpointStore.memory)))

    it.effect("a serializer or resolver that throws routes its record to the failure handler; the rest load", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator } = yield* freshSetup
        const base = yield* RowSerializer.fromJson(schema)
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "throws" })
        const rows = Array.from({ length: 20 }, (_, i) => rowOf(i))
        const serializer: RowSerializer.RowSerializer<Row> = {
          ...base,
          serialize: (row, d) => {
            if (row.id === 3) throw new Error("broke on 3")
            return base.serialize(row, d)
          }
        }
        const routed: Array<string> = []
        const summary = yield* Stream.fromIterable(rows).pipe(
          Stream.run(BigQuerySink.make({
            destinationResolver: (row: Row) => {
              if (row.id === 7) throw new Error("no table for 7")
              return table
            },
            serializer,
            failureHandler: FailureHandler.deadLetter(
              Sink.forEach((f: BigQueryFailure.BigQueryFailure) => Effect.sync(() => void routed.push(f.message)))
            ),
            writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${bucket}/throws` }),
            checkpoint: yield* loadOnce("throws")
          }))
        )
        assert.deepStrictEqual(routed.toSorted(), [
          "the destinationResolver threw: no table for 7",
          "the serializer threw: broke on 3"
        ])
        assert.strictEqual(summary.recordsWritten, 18)
        assert.deepStrictEqual(yield* readBack(bq, table.toString()), rows.filter((r) => r.id !== 3 && r.id !== 7))
      }).pipe(Effect.provide(CheckpointStore.memory)))

    it.effect("make's single load takes the dispositions: WRITE_TRUNCATE replaces the rows, WRITE_EMPTY refuses a non-empty table", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator } = yield* freshSetup
        const serializer = yield* RowSerializer.fromJson(schema)
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "disp" })
        let run = 0
        const load = (rows: ReadonlyArray<Row>, writeDisposition: "WRITE_APPEND" | "WRITE_TRUNCATE" | "WRITE_EMPTY") =>
          Effect.gen(function*() {
            const checkpoint = yield* loadOnce(`disp-${++run}`)
            return yield* Stream.fromIterable(rows).pipe(
              Stream.run(BigQuerySink.make({
                table,
                serializer,
                writeMethod: WriteMethod.fileLoads({
                  stagingPath: `gs://${bucket}/disp`,
                  writeDisposition,
                  poll: Harness.pollFast
                }),
                checkpoint
              }))
            )
          }).pipe(Effect.provide(CheckpointStore.memory))
        const first = Array.from({ length: 10 }, (_, i) => rowOf(i))
        const second = Array.from({ length: 5 }, (_, i) => rowOf(100 + i))
        yield* load(first, "WRITE_EMPTY")
        yield* load(second, "WRITE_TRUNCATE")
        assert.deepStrictEqual(yield* readBack(bq, table.toString()), second)
        const exit = yield* Effect.exit(load(first, "WRITE_EMPTY"))
        assert.isTrue(Exit.isFailure(exit))
        assert.match(Exit.isFailure(exit) ? String(exit.cause) : "", /FileLoadFailed/)
        assert.deepStrictEqual(yield* readBack(bq, table.toString()), second)
      }))

    it.effect("a staging upload that fails (no such bucket) fails the write with FileLoadFailed stage", () =>
      Effect.gen(function*() {
        const { datasetId, emulator } = yield* freshSetup
        const serializer = yield* RowSerializer.fromJson(schema)
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "nobucket" })
        const exit = yield* Effect.exit(
          Stream.fromIterable([rowOf(1), rowOf(2)]).pipe(
            Stream.run(BigQuerySink.make({
              table,
              serializer,
              writeMethod: WriteMethod.fileLoads({
                stagingPath: `gs://${Clients.uniqueId("absent").replaceAll("_", "-")}`
              }),
              checkpoint: yield* loadOnce("nobucket")
            }))
          )
        )
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? String(exit.cause) : ""
        assert.match(error, /FileLoadFailed/)
        assert.match(error, /upload failed/)
      }).pipe(Effect.provide(CheckpointStore.memory)))

    it.effect("deviation: without allowNewFields, staged fields the table lacks fail the emulator's load", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator } = yield* freshSetup
        yield* Effect.tryPromise(() => bq.dataset(datasetId).createTable("kept", { schema: narrowRest }))
        const serializer = yield* RowSerializer.fromJson(wider)
        const exit = yield* Effect.exit(
          evolve({ bucket, datasetId, projectId: emulator.projectId }, serializer, "kept", false)
        )
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? String(exit.cause) : ""
        assert.match(error, /FileLoadFailed/)
        // the load carries the live schema (reference 2.8): BigQuery ignores the staged `score` and loads
        // `id` and `name`; bqemulator refuses jobs.insert with its DuckDB binder error. The table is kept.
        assert.match(error, /jobs\.insert failed: .*has 2 columns but 3 values were supplied/)
        const [kept] = yield* Effect.tryPromise(() => bq.dataset(datasetId).table("kept").getMetadata())
        assert.deepStrictEqual((kept.schema.fields as Array<{ name: string }>).map((f) => f.name), ["id", "name"])
      }))

    it.effect("deviation: with allowNewFields the pre-load widening reaches the emulator's catalog, not its storage", () =>
      Effect.gen(function*() {
        // BigQuery: tables.patch adds the column, the load fills it. bqemulator's tables.patch updates its
        // catalog only (its DuckDB table keeps two columns), so the load after the widening fails to bind.
        const { bq, bucket, datasetId, emulator } = yield* freshSetup
        yield* Effect.tryPromise(() => bq.dataset(datasetId).createTable("wide", { schema: narrowRest }))
        const serializer = yield* RowSerializer.fromJson(wider)
        const exit = yield* Effect.exit(
          evolve({ bucket, datasetId, projectId: emulator.projectId }, serializer, "wide", true)
        )
        const [metadata] = yield* Effect.tryPromise(() => bq.dataset(datasetId).table("wide").getMetadata())
        assert.deepStrictEqual(
          (metadata.schema.fields as Array<{ name: string }>).map((f) => f.name),
          ["id", "name", "score"]
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.match(Exit.isFailure(exit) ? String(exit.cause) : "", /has 2 columns but 3 values were supplied/)
      }))

    it.effect("a restart re-runs the saved commit: the same job ids re-attach, nothing loads twice", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator } = yield* freshSetup
        const serializer = yield* RowSerializer.fromJson(schema)
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "t" })
        const rows = Array.from({ length: 40 }, (_, i) => rowOf(i))
        const method = WriteMethod.fileLoads({ stagingPath: `gs://${bucket}` })
        const run = (input: ReadonlyArray<Row>) =>
          Effect.gen(function*() {
            const resume = yield* Checkpoint.resume({ writerId: "loads-rerun", positionSchema: Schema.Number })
            const from = resume.position._tag === "Some" ? resume.position.value : 0
            return yield* Stream.fromIterable(input.slice(from)).pipe(
              Stream.run(BigQuerySink.make({
                table,
                serializer,
                writeMethod: method,
                checkpoint: { resume, every: 1_000, position: (row) => (row as Row).id + 1 }
              }))
            )
          })
        const program = Effect.gen(function*() {
          yield* run(rows)
          // the second run restores the record of the first: its commit runs again, and re-attaches
          const second = yield* run(rows)
          assert.strictEqual(second.recordsWritten, 0)
        }).pipe(Effect.provide(CheckpointStore.memory))
        yield* program
        const back = yield* readBack(bq, table.toString())
        assert.deepStrictEqual(back, rows)
      }))

    it.effect("overflow (limits lowered): leaf loads, copy levels and the final copy run in plan order; temp tables dropped; a re-run attaches; deviation: a copy of several sources copies only the first", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator, storage } = yield* freshSetup
        const small: TableSchema.TableSchema = {
          fields: [
            TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
            TableSchema.field({ name: "name", type: "STRING", mode: "REQUIRED" })
          ]
        }
        yield* Effect.tryPromise(() =>
          bq.dataset(datasetId).createTable("over", { schema: TableSchema.toRest(small) as never })
        )
        const destination = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "over" })
        const avroSchema = Avro.avroSchema(small)
        assert.isFalse(avroSchema instanceof Avro.AvroError)
        const type = avro.Type.forSchema(avroSchema as avro.Schema)
        const files = yield* FileLoadsOptions.decode({ stagingPath: `gs://${bucket}/over`, poll: Harness.pollFast })
        // one file per row: 7 files; 2 URIs per load and 2 sources per copy give 4 leaf loads, 2 copies, 1 final copy
        const staging = yield* Staging.make({
          storage,
          stagingPath: files.stagingPath,
          writerId: "overflow",
          maxStagingFileBytes: 1,
          uploadTimeout: files.adminTimeout
        })
        const rows = Array.from({ length: 7 }, (_, i) => ({ id: i, name: `n${i}` }))
        for (const row of rows) yield* staging.append(destination, type, row, 16)
        const committables = yield* staging.closeAll
        assert.strictEqual(committables.length, 7)
        const ctx: Runner.RunnerContext = {
          rest: bq,
          storage,
          location: undefined,
          settings: { ...files, reconcile: Harness.pollFast },
          createDisposition: "CREATE_NEVER",
          schemaUpdate: SchemaUpdateOptions.defaults,
          schemaOf: () => small,
          createResource: () => Effect.die("the table exists"),
          limits: { ...Plan.limits, maxUrisPerLoad: 2, maxSourcesPerCopy: 2 }
        }
        const first = yield* Runner.commit(ctx, committables)
        assert.strictEqual(first.length, 4 + 2 + 1)
        assert.isTrue(first.every((o) => o.outcome === "ran"))
        const back = yield* query<{ id: number; name: string }>(
          bq,
          `SELECT id, name FROM \`${destination.toString()}\` ORDER BY id`
        )
        // BigQuery concatenates every sourceTables entry; bqemulator's copy job reads sourceTables[0] only.
        // Leaves p0 {0,1} p1 {2,3} p2 {4,5} p3 {6}; level 1: [p0,p1] -> {0,1}, [p2,p3] -> {4,5}; final -> {0,1}
        assert.deepStrictEqual(back.map((r) => ({ id: Number(r.id), name: r.name })), rows.slice(0, 2))
        const [tablesLeft] = yield* Effect.tryPromise(() => bq.dataset(datasetId).getTables())
        assert.deepStrictEqual(tablesLeft.map((t) => t.id), ["over"])
        assert.deepStrictEqual(yield* stagedObjects(storage, bucket), [])
        // the same commit again (a restart): every job re-attaches, nothing loads twice
        const again = yield* Runner.commit(ctx, committables)
        assert.isTrue(again.every((o) => o.outcome === "attached"))
        const counted = yield* query<{ n: number }>(bq, `SELECT COUNT(*) AS n FROM \`${destination.toString()}\``)
        assert.strictEqual(Number(counted[0]?.n), 2)
      }))

    it.effect("runJob looks a deterministic id up first: a finished job is attached, not run again", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator, storage } = yield* freshSetup
        const table = `${emulator.projectId}.${datasetId}.t`
        yield* Effect.tryPromise(() =>
          bq.dataset(datasetId).createTable("t", { schema: { fields: [{ name: "id", type: "INT64" }] } })
        )
        yield* Effect.tryPromise(() =>
          storage.bucket(bucket).file("rows.ndjson").save("{\"id\":1}\n{\"id\":2}\n", { resumable: false })
        )
        const configuration = {
          load: {
            sourceUris: [`gs://${bucket}/rows.ndjson`],
            sourceFormat: "NEWLINE_DELIMITED_JSON",
            destinationTable: { projectId: emulator.projectId, datasetId, tableId: "t" },
            writeDisposition: "WRITE_APPEND",
            createDisposition: "CREATE_NEVER"
          }
        }
        const ctx = Harness.runnerContext(bq)
        const jobId = Clients.uniqueId("effect-bq-load-attach")
        const first = yield* Runner.runJob(ctx, jobId, configuration, table)
        assert.deepStrictEqual(first, { jobId, outcome: "ran" })
        const second = yield* Runner.runJob(ctx, jobId, configuration, table)
        assert.deepStrictEqual(second, { jobId, outcome: "attached" })
        const counted = yield* query<{ n: number }>(bq, `SELECT COUNT(*) AS n FROM \`${table}\``)
        assert.strictEqual(Number(counted[0]?.n), 2)
        // a job that failed is not attached: the next deterministic id is tried
        const failing = { load: { ...configuration.load, sourceUris: [`gs://${bucket}/missing.ndjson`] } }
        const failedId = Clients.uniqueId("effect-bq-load-fail")
        const exit = yield* Effect.exit(Runner.runJob(ctx, failedId, failing, table))
        assert.isTrue(Exit.isFailure(exit))
        const retried = yield* Effect.exit(Runner.runJob(ctx, failedId, failing, table))
        assert.isTrue(Exit.isFailure(retried))
        const state = yield* Runner.lookup(bq, `${failedId}-r1`, undefined, table)
        assert.strictEqual(state._tag, "Failed")
        // deviation: BigQuery accepts jobs.insert and reports the failure in the job's status; bqemulator runs
        // the load inside jobs.insert, answers it with the error, and records the job as failed
        const direct = Clients.uniqueId("effect-bq-load-direct")
        const inserted = yield* Effect.exit(
          Effect.tryPromise(() => bq.createJob({ jobId: direct, configuration: failing }))
        )
        assert.isTrue(Exit.isFailure(inserted))
        assert.strictEqual((yield* Runner.lookup(bq, direct, undefined, table))._tag, "Failed")
      }))

    it.effect("deviation: bqemulator does not read zstandard Avro container files (BigQuery does): staging uses deflate", () =>
      Effect.gen(function*() {
        const { bq, bucket, datasetId, emulator, storage } = yield* freshSetup
        const table = `${emulator.projectId}.${datasetId}.z`
        yield* Effect.tryPromise(() =>
          bq.dataset(datasetId).createTable("z", { schema: { fields: [{ name: "id", type: "INT64" }] } })
        )
        const type = avro.Type.forSchema({ type: "record", name: "Row", fields: [{ name: "id", type: "long" }] })
        const codecs = {
          zstandard: (buffer: Buffer, callback: (error: Error | null, result?: Buffer) => void) =>
            zlib.zstdCompress(buffer, callback),
          deflate: (buffer: Buffer, callback: (error: Error | null, result?: Buffer) => void) =>
            zlib.deflateRaw(buffer, callback)
        }
        const upload = (codec: "zstandard" | "deflate") =>
          Effect.callback<void, Error>((resume) => {
            const file = storage.bucket(bucket).file(`${codec}.avro`)
            const out = file.createWriteStream({ resumable: false })
            const encoder = new avro.streams.BlockEncoder(type, { codec, codecs })
            out.once("finish", () => resume(Effect.void))
            out.once("error", (e) => resume(Effect.fail(e)))
            encoder.pipe(out)
            encoder.write({ id: 1 })
            encoder.write({ id: 2 })
            encoder.end()
          })
        const load = (codec: "zstandard" | "deflate") =>
          Effect.exit(Effect.gen(function*() {
            yield* upload(codec)
            const ctx = Harness.runnerContext(bq)
            return yield* Runner.runJob(ctx, Clients.uniqueId(`effect-bq-load-${codec}`), {
              load: {
                sourceUris: [`gs://${bucket}/${codec}.avro`],
                sourceFormat: "AVRO",
                destinationTable: { projectId: emulator.projectId, datasetId, tableId: "z" },
                writeDisposition: "WRITE_APPEND",
                createDisposition: "CREATE_NEVER"
              }
            }, table)
          }))
        assert.isTrue(Exit.isSuccess(yield* load("deflate")))
        assert.isTrue(Exit.isFailure(yield* load("zstandard")))
        const counted = yield* query<{ n: number }>(bq, `SELECT COUNT(*) AS n FROM \`${table}\``)
        assert.strictEqual(Number(counted[0]?.n), 2)
      }))

    it.effect("a TIMESTAMP column loads: the staged header carries timestamp-micros, read back to the microsecond", () =>
      Effect.gen(function*() {
        // (every column type, at its extremes, in both modes: fileLoadsTypes.test.ts)
        const { bq, bucket, datasetId, emulator } = yield* freshSetup
        const tsSchema: TableSchema.TableSchema = {
          fields: [
            TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
            TableSchema.field({ name: "ts", type: "TIMESTAMP" })
          ]
        }
        const serializer = yield* RowSerializer.fromJson(tsSchema)
        const table = TableDestination.makeUnsafe({ projectId: emulator.projectId, datasetId, tableId: "ts" })
        const resume = yield* Checkpoint.resume({ writerId: "loads-ts", positionSchema: Schema.Number })
        const summary = yield* Stream.make({ id: 1, ts: "2026-01-01T00:00:00.000001Z" }).pipe(
          Stream.run(BigQuerySink.make({
            table,
            serializer,
            writeMethod: WriteMethod.fileLoads({ stagingPath: `gs://${bucket}`, poll: Harness.pollFast }),
            checkpoint: { resume, every: 10, position: () => 1 }
          }))
        )
        assert.strictEqual(summary.recordsWritten, 1)
        const rows = yield* query<{ ts: { value: string } }>(bq, `SELECT ts FROM \`${table.toString()}\``)
        assert.deepStrictEqual(rows.map((r) => r.ts.value), ["2026-01-01T00:00:00.000001000Z"])
      }).pipe(Effect.provide(CheckpointStore.memory)))
  }
)
