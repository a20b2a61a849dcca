/**
 * Shared fixtures of the BigQuery sink tests against the in-process fake: a fake per test, the
 * client layer pointed at it through the public emulator option, a two-column serializer, and
 * `writeRows`, the common test body (create the table, stream rows through the sink).
 */
import { type Duration, Effect, Layer, type Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import {
  BigQueryClient,
  type BigQueryFailure,
  BigQuerySink,
  RowSerializer,
  TableDestination,
  TableSchema,
  WriteMethod
} from "../../src/BigQuery/index.ts"
import type { FailureHandler, RecordFailed, WriteSummary } from "../../src/Sink.ts"
import * as Fake from "../support/fakeBigQueryWrite.ts"

export const schema: TableSchema.TableSchema = {
  fields: [
    TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" }),
    TableSchema.field({ name: "name", type: "STRING" })
  ]
}

export const columns: ReadonlyArray<Fake.Column> = [
  { name: "id", type: "INTEGER", mode: "REQUIRED" },
  { name: "name", type: "STRING", mode: "NULLABLE" }
]

export interface Row {
  readonly id: bigint
  readonly name?: string | undefined
}

export const serializer: Effect.Effect<RowSerializer.RowSerializer<Row>> = Effect.orDie(RowSerializer.fromJson(schema))

export const rows = (n: number, from = 0): Array<Row> =>
  Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), name: `row-${from + i}` }))

/**
 * Runs `effect` while the test clock moves on by `by` for every `every` of real time it takes: a wait
 * of the writer on its clock (a retry's backoff, a response timeout) then ends as on a live clock,
 * where it would otherwise wait for the test, which waits for it.
 */
export const ticking = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  every: Duration.Input = "100 millis",
  by: Duration.Input = "1 second"
): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    Effect.forever(Effect.andThen(TestClock.withLive(Effect.sleep(every)), TestClock.adjust(by)))
  )

/** Fast retries so failure paths finish in milliseconds. */
export const fastRetries = {
  recovery: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 10 },
  retry: { initialBackoff: "1 millis", maxBackoff: "5 millis", maxAttempts: 5 }
} as const

export const destination = (fake: Fake.FakeBigQuery, table = "t") =>
  TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: table })

/**
 * Runs `f` with a fresh fake and the client layer pointed at it, its data path on `transport`
 * (default: the client's default, our HTTP/2 transport).
 */
export const withFake = <A, E>(
  options: Fake.FakeOptions,
  f: (fake: Fake.FakeBigQuery) => Effect.Effect<A, E, BigQueryClient.BigQueryClient | Scope.Scope>,
  transport?: "http2" | "grpc-js"
): Effect.Effect<A, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const fake = yield* Fake.make(options)
    const layer = BigQueryClient.layer({
      projectId: fake.projectId,
      emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint },
      transport
    })
    return yield* f(fake).pipe(Effect.provide(Layer.fresh(layer)))
  })

/** What a test varies in {@link writeRows}; everything is optional. */
export interface WriteRowsOptions<E, R> {
  /** The table `d.t` before the write: `true` (the default) with {@link columns}, these columns, or `false` for none. */
  readonly createTable?: boolean | ReadonlyArray<Fake.Column>
  /** Rechunks the input to chunks of this many rows (default: one chunk). */
  readonly chunkSize?: number
  readonly maxAppendRequestBytes?: number
  /** Further at-least-once options, on top of {@link fastRetries} and `maxAppendRequestBytes`. */
  readonly writeMethod?: WriteMethod.AtLeastOnceOptions
  /** Default: none given, so the sink's `failJob`. */
  readonly failureHandler?: FailureHandler<BigQueryFailure.BigQueryFailure, E, R>
  /** Further sink options: table creation and schema updates. */
  readonly sink?: Pick<
    BigQuerySink.BigQuerySinkOptions<Row>,
    "createDisposition" | "tableCreateOptions" | "schemaUpdate"
  >
}

/**
 * Streams `rows(n)` through `BigQuerySink.make` into the fake's table `d.t` (created first unless
 * `createTable: false`), with {@link fastRetries}; returns the summary.
 */
export const writeRows = <E = never, R = never>(
  fake: Fake.FakeBigQuery,
  n: number,
  options: WriteRowsOptions<E, R> = {}
): Effect.Effect<WriteSummary, BigQuerySink.BigQuerySinkError<E | RecordFailed>, BigQueryClient.BigQueryClient | R> =>
  Effect.gen(function*() {
    const createTable = options.createTable ?? true
    if (createTable !== false) {
      fake.createTable(`${fake.projectId}.d.t`, createTable === true ? columns : createTable)
    }
    const input = Stream.fromIterable(rows(n))
    return yield* (options.chunkSize === undefined ? input : Stream.rechunk(input, options.chunkSize)).pipe(
      Stream.run(BigQuerySink.make<Row, FailureHandler<BigQueryFailure.BigQueryFailure, E, R> | undefined>({
        ...options.sink,
        table: yield* destination(fake),
        serializer: yield* serializer,
        failureHandler: options.failureHandler,
        writeMethod: WriteMethod.atLeastOnce({
          ...fastRetries,
          maxAppendRequestBytes: options.maxAppendRequestBytes,
          ...options.writeMethod
        })
      }))
    )
  })

/** The REST calls of the table path: every call but the first-contact probe's dataset listing. */
export const tableCalls = (fake: Fake.FakeBigQuery): ReadonlyArray<string> =>
  fake.stats.restCalls.filter((call) => !call.endsWith("/datasets"))
