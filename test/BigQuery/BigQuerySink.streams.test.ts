/**
 * Many live destinations: each keeps an AppendRows stream open, and a server allows a bounded number
 * of concurrent streams per HTTP/2 connection (Google's front ends: 100). A stream past that limit
 * would wait forever, so the client spreads streams over more connections
 * (`appendStreamsPerChannel`). The fake here allows 4 streams per connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, TableSchema } from "../../src/BigQuery/index.ts"
import * as Fake from "../support/fakeBigQueryWrite.ts"

const tables = 10
const schema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }

/** Rows spread round-robin over `tables` destinations, all live at once, through a fake allowing 4 streams. */
const writeSpread = (appendStreamsPerChannel: number) =>
  Effect.gen(function*() {
    const fake = yield* Fake.make({ maxConcurrentStreams: 4 })
    for (let t = 0; t < tables; t++) {
      fake.createTable(`${fake.projectId}.d.t${t}`, [{ name: "id", type: "INTEGER", mode: "REQUIRED" }])
    }
    const serializer = yield* RowSerializer.fromJson(schema)
    const destinations = yield* Effect.forEach(
      Array.from({ length: tables }, (_, t) => t),
      (t) => TableDestination.make({ projectId: fake.projectId, datasetId: "d", tableId: `t${t}` })
    )
    const summary = yield* Stream.fromIterable(Array.from({ length: tables * 20 }, (_, i) => ({ id: BigInt(i) }))).pipe(
      Stream.run(BigQuerySink.make({
        destinationResolver: (row: { readonly id: bigint }) => destinations[Number(row.id) % tables]!,
        serializer
      })),
      Effect.provide(BigQueryClient.layer({
        projectId: fake.projectId,
        emulator: { grpc: fake.grpcEndpoint, rest: fake.restEndpoint },
        appendStreamsPerChannel
      }))
    )
    return { summary, fake }
  })

describe("BigQuerySink with more live destinations than a connection's streams", () => {
  it.live("spreads the streams over connections: every destination is written", () =>
    Effect.gen(function*() {
      const { fake, summary } = yield* writeSpread(3).pipe(Effect.timeout("20 seconds"))
      assert.strictEqual(summary.recordsWritten, tables * 20)
      for (let t = 0; t < tables; t++) assert.strictEqual(fake.rows(`${fake.projectId}.d.t${t}`).length, 20)
      assert.isAtLeast(fake.stats.connections, tables)
    }).pipe(Effect.scoped))

  it.live("the hazard it avoids: all streams on one connection wait past the server's limit", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const exit = yield* writeSpread(100).pipe(Scope.provide(scope), Effect.timeout("2 seconds"), Effect.exit)
      assert.isTrue(Exit.isFailure(exit), "with 100 streams allowed per connection, the fifth stream never starts")
      yield* Scope.close(scope, Exit.void)
    }))
})
