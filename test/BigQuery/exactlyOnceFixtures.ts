/**
 * Fixtures of the exactly-once tests against the fake: the fake with BUFFERED streams reached as
 * BigQuery (`BigQueryClient.fromClients`: inclusive `FlushRows` offsets) or as bqemulator (the
 * public emulator option: exclusive offsets, as the fake then mimics), the ids of the visible rows,
 * and a writer built from a fresh `Checkpoint.resume`.
 */
import { BigQuery } from "@google-cloud/bigquery"
import * as grpc from "@grpc/grpc-js"
import { Effect, Layer, Schema, type Scope } from "effect"
import { BigQueryClient, BigQuerySink, WriteMethod } from "../../src/BigQuery/index.ts"
import { Checkpoint, CheckpointStore } from "../../src/Sink.ts"
import { staticTokenAuth } from "../support/clients.ts"
import * as Fake from "../support/fakeBigQueryWrite.ts"
import { columns, destination, fastRetries, type Row, serializer } from "./sinkFixtures.ts"

export type Via = "bigquery" | "emulator"

/** The client layer on `fake`: through `fromClients` (BigQuery semantics) or the emulator option. */
export const clientLayer = (fake: Fake.FakeBigQuery, via: Via): Layer.Layer<BigQueryClient.BigQueryClient, unknown> =>
  via === "emulator"
    ? BigQueryClient.layer({
      projectId: fake.projectId,
      emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint }
    })
    : Layer.unwrap(
      Effect.gen(function*() {
        const write = yield* Effect.acquireRelease(
          Effect.sync(() => new grpc.Client(fake.grpcTarget, grpc.credentials.createInsecure())),
          (client) => Effect.sync(() => client.close())
        )
        const authClient = yield* staticTokenAuth
        const rest = new BigQuery({ projectId: fake.projectId, apiEndpoint: fake.restUrl, authClient })
        return BigQueryClient.fromClients({ projectId: fake.projectId, write, rest })
      })
    )

/** A fake (its table `d.t` created) with the client layer and a memory store; `via` picks the semantics. */
export const withEo = <A, E>(
  options: Fake.FakeOptions & { readonly via?: Via; readonly createTable?: boolean },
  f: (fake: Fake.FakeBigQuery) => Effect.Effect<A, E, BigQueryClient.BigQueryClient | CheckpointStore | Scope.Scope>
): Effect.Effect<A, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const via = options.via ?? "bigquery"
    const fake = yield* Fake.make({
      ...options,
      buffered: { ...options.buffered, flushOffsets: via === "emulator" ? "exclusive" : "inclusive" }
    })
    if (options.createTable !== false) fake.createTable(`${fake.projectId}.d.t`, columns)
    return yield* f(fake).pipe(
      Effect.provide(Layer.merge(Layer.fresh(clientLayer(fake, via)), CheckpointStore.memory))
    )
  })

/** The `id` of a row encoded by the fixtures' serializer (field 1, a varint). */
export const idOf = (row: Uint8Array): number => {
  let value = 0
  let shift = 1
  for (let i = 1; i < row.length; i++) {
    const b = row[i] as number
    value += (b & 0x7f) * shift
    if (b < 0x80) break
    shift *= 128
  }
  return value
}

/** The ids visible in `d.t`, sorted. */
export const visibleIds = (fake: Fake.FakeBigQuery, table = "t"): Array<number> =>
  fake.rows(`${fake.projectId}.d.${table}`).map(idOf).toSorted((a, b) => a - b)

/** `[from, to)` */
export const range = (from: number, to: number): Array<number> => Array.from({ length: to - from }, (_, i) => from + i)

export const resume = (writerId = "w") => Checkpoint.resume({ writerId, positionSchema: Schema.Number })

/** An exactly-once writer on `d.t` resumed from the store. */
export const eoWriter = (fake: Fake.FakeBigQuery, writerId = "w", method = WriteMethod.exactlyOnce(fastRetries)) =>
  Effect.gen(function*() {
    const r = yield* resume(writerId)
    const writer = yield* BigQuerySink.writer({
      table: yield* destination(fake),
      serializer: yield* serializer,
      writeMethod: method,
      checkpoint: { resume: r }
    })
    return { writer, resume: r }
  })

export type { Row }
