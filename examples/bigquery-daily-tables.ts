/**
 * Dynamic destinations: each order goes to a table of its day (`orders_20261129`), created on first
 * use with clustering. `TableDestination.resolve` validates each table id per record; orders with no
 * valid day (or an id it rejects) are routed to the failure handler as unroutable.
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/bigquery-daily-tables.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Schema, Stream } from "effect"
import { BigQueryClient, BigQuerySink, BigQueryType, RowSerializer, TableDestination } from "effect-gcp-sinks/BigQuery"
import { FailureHandler } from "effect-gcp-sinks/Sink"
import { BigQueryLive, projectId } from "./config.ts"

const Order = Schema.Struct({
  id: Schema.String,
  customer: Schema.String,
  total: Schema.String.pipe(BigQueryType.annotate("NUMERIC")),
  placed: Schema.Date
})
type Order = typeof Order.Type

const orders: ReadonlyArray<Order> = Array.from({ length: 3000 }, (_, i) => ({
  id: `o-${i}`,
  customer: `c-${i % 40}`,
  total: `${(i % 500) + 0.99}`,
  placed: new Date(Date.UTC(2026, 10, 27 + (i % 3), i % 24))
}))

const program = Effect.gen(function*() {
  const project = yield* projectId
  const client = yield* BigQueryClient.BigQueryClient
  yield* Effect.tryPromise(() => client.rest.dataset("shop").get({ autoCreate: true }))

  const resolver: TableDestination.DestinationResolver<Order> = (order) => {
    const day = order.placed.toISOString().slice(0, 10).replaceAll("-", "")
    return Number.isNaN(order.placed.getTime())
      ? TableDestination.unroutable({ payload: new TextEncoder().encode(order.id), reason: "order has no valid date" })
      : TableDestination.resolve({ projectId: project, datasetId: "shop", tableId: `orders_${day}` })
  }

  const summary = yield* Stream.fromIterable(orders).pipe(
    Stream.run(BigQuerySink.make({
      destinationResolver: resolver,
      serializer: yield* RowSerializer.fromSchema(Order),
      tableCreateOptions: { clustering: ["customer"] },
      failureHandler: FailureHandler.logAndDrop
    }))
  )
  for (const [table, counters] of Object.entries(summary.destinations)) {
    yield* Effect.log(`${table}: ${counters.recordsWritten} rows`)
  }
})

NodeRuntime.runMain(program.pipe(Effect.provide(BigQueryLive)))
