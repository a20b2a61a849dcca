/**
 * Shared fixtures of the BigQuery sink tests against the in-process fake: a fake per test, the
 * client layer pointed at it through the public emulator option, a two-column serializer.
 */
import { Effect, Layer, type Scope } from "effect"
import { BigQueryClient, RowSerializer, TableDestination, TableSchema } from "../../src/BigQuery/index.ts"
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

/** Fast retries so failure paths finish in milliseconds. */
export const fastRetries = {
  recoveryInitialBackoff: "1 millis",
  recoveryMaxBackoff: "5 millis",
  retryInitialDelay: "1 millis",
  retryMaxDelay: "5 millis"
} as const

export const destination = (fake: Fake.FakeBigQuery, table = "t") =>
  TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: table })

/** Runs `f` with a fresh fake and the client layer pointed at it. */
export const withFake = <A, E>(
  options: Fake.FakeOptions,
  f: (fake: Fake.FakeBigQuery) => Effect.Effect<A, E, BigQueryClient.BigQueryClient | Scope.Scope>
): Effect.Effect<A, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const fake = yield* Fake.make(options)
    const layer = BigQueryClient.layer({
      projectId: fake.projectId,
      emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint }
    })
    return yield* f(fake).pipe(Effect.provide(Layer.fresh(layer)))
  })
