/**
 * The sinks' workloads shared by the counting benchmarks (bench/allocation.bench.ts,
 * bench/effectSteps.bench.ts) and, for the Bigtable record, bench/peers.ts: the Bigtable record, and the
 * BigQuery sink on the fake BigQueryWrite server with its rows ready in writes.
 */
import { Effect, type Scope, Stream, type Tracer } from "effect"
import * as BigQueryClient from "../src/BigQuery/BigQueryClient.ts"
import * as BigQuerySink from "../src/BigQuery/BigQuerySink.ts"
import * as RowSerializer from "../src/BigQuery/RowSerializer.ts"
import * as BigQueryTable from "../src/BigQuery/TableDestination.ts"
import * as BigQueryWriteMethod from "../src/BigQuery/WriteMethod.ts"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "../src/Bigtable/index.ts"
import type { Writer } from "../src/Sink.ts"
import { key } from "./bigtableRaw.ts"
import { instanceId, projectId } from "./bigtableSetup.ts"
import * as FakeProcess from "./fakeBigQueryProcess.ts"
import { Row, rowGenerator } from "./rows.ts"

/**
 * The value of every Bigtable record, its bytes made once, as the Go peer's `value []byte` (made once in
 * main.go): each record's own work, on every side, is its key and its mutation.
 */
export const bigtableValue = Buffer.from("x".repeat(100))

/** Record `i` of the Bigtable benchmarks: one SetCell of {@link bigtableValue} in family `cf`, qualifier `v`. */
export const bigtableRecord = (i: number): RowMutationEntry.RowMutationEntry =>
  RowMutationEntry.make(
    key(i),
    Mutation.setCell({ family: "cf", qualifier: "v", value: bigtableValue, timestampMicros: 1_000_000 })
  )

/** The shape of a Bigtable workload: records a run, entries a call, calls' worth of entries in flight. */
export interface BigtableWorkload {
  readonly records: number
  readonly batch: number
  readonly concurrency: number
}

/** The sink's write method for a workload: `batch` entries a call, `batch * concurrency` entries in flight. */
export const bigtableWriteMethod = ({ batch, concurrency }: BigtableWorkload) =>
  WriteMethod.atLeastOnce({ batchElementCount: batch, maxInFlightEntries: batch * concurrency })

/**
 * One run of the Bigtable sink on `client` into table `tableId` (project and instance `bench`): records
 * `0..records-1` through {@link bigtableRecord}, `batch` entries a call, `batch * concurrency` entries
 * in flight. Its summary.
 */
export const bigtableSinkRun = (
  client: BigtableClient.BigtableClient["Service"],
  tableId: string,
  workload: BigtableWorkload
) =>
  Stream.range(0, workload.records - 1).pipe(
    Stream.run(BigtableSink.make({
      table: TableDestination.makeUnsafe({ projectId, instanceId, tableId }),
      serializer: bigtableRecord,
      writeMethod: bigtableWriteMethod(workload)
    })),
    Effect.provideService(BigtableClient.BigtableClient, client)
  )

/** A pass on a long-lived writer: `input`'s chunks written, then a flush (every record acknowledged). */
export const writeAndFlush = <A>(writer: Writer<A, unknown>, input: Stream.Stream<A>): Promise<void> =>
  Effect.runPromise(input.pipe(Stream.runForEachArray((chunk) => writer.write(chunk)), Effect.andThen(writer.flush)))

/** Rows a write of the BigQuery workloads (the sink's default chunk). */
export const writeRows = 4096

/** The BigQuery sink on the fake, with `rows` rows ready in writes of {@link writeRows}. */
export interface BigQueryWorkload {
  /** One run of the sink over every row, pre-encoded (the serializer returns each row's bytes), on `tracer`. */
  readonly bytes: (tracer?: Tracer.Tracer) => Promise<void>
  /** One run of the sink over every row as an object (`RowSerializer.fromSchema`), on `tracer`. */
  readonly encode: (tracer?: Tracer.Tracer) => Promise<void>
  readonly writes: number
}

/** `rows` rows repeating `source`, cut into writes of {@link writeRows}. */
const inWrites = <A>(source: ReadonlyArray<A>, rows: number): ReadonlyArray<Array<A>> => {
  const out: Array<Array<A>> = []
  for (let from = 0; from < rows; from += writeRows) {
    out.push(
      Array.from({ length: Math.min(writeRows, rows - from) }, (_, i) => source[(from + i) % source.length] as A)
    )
  }
  return out
}

/**
 * The fake BigQueryWrite server in its own process (1 MiB windows), `rows` rows repeating 16,384 distinct
 * ones (bench/rows.ts), cut into arrays before any run (a run allocates nothing to feed the sink); at least
 * once, 100 appends of up to 512 KiB in flight.
 */
export const bigQueryWorkload = (
  rows: number,
  appendBytes: number = 512 * 1024
): Effect.Effect<BigQueryWorkload, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const fake = yield* Effect.acquireRelease(
      Effect.promise(() => FakeProcess.start(1024 * 1024, {})),
      (f) => Effect.sync(() => f.close())
    )
    const rowSerializer = yield* RowSerializer.fromSchema(Row)
    const table = yield* BigQueryTable.make({ projectId: fake.projectId, datasetId: "d", tableId: "t" })
    const makeRow = rowGenerator(7)
    const distinct = Array.from({ length: 16_384 }, (_, i) => makeRow(i))
    const encoded = distinct.map((r) => {
      const bytes = rowSerializer.serialize(r, table)
      if (!(bytes instanceof Uint8Array)) throw new Error("unencodable benchmark row")
      return bytes
    })
    const bytesSerializer = {
      tableSchema: rowSerializer.tableSchema,
      descriptor: () => RowSerializer.descriptorOf(rowSerializer, table),
      serialize: (bytes: Uint8Array) => bytes
    }
    const layer = BigQueryClient.layer({
      projectId: fake.projectId,
      emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint }
    })
    const writeMethod = BigQueryWriteMethod.atLeastOnce({
      maxInFlightRequests: 100,
      maxAppendRequestBytes: appendBytes
    })
    const run =
      <A>(serializer: RowSerializer.RowSerializer<A>, writes: ReadonlyArray<Array<A>>) => (tracer?: Tracer.Tracer) => {
        const sink = Stream.fromArrays(...writes).pipe(
          Stream.run(BigQuerySink.make({ table, writeMethod, serializer })),
          Effect.provide(layer)
        )
        return Effect.runPromise(tracer === undefined ? sink : Effect.withTracer(sink, tracer)).then(() => undefined)
      }
    const encodedWrites = inWrites(encoded, rows)
    return {
      bytes: run(bytesSerializer, encodedWrites),
      encode: run(rowSerializer, inWrites(distinct, rows)),
      writes: encodedWrites.length
    }
  })
