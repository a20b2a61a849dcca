import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Schema, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination } from "effect-gcp-sinks/BigQuery"

const Click = Schema.Struct({ user: Schema.String, page: Schema.String, at: Schema.Date })

const clicks = Stream.range(1, 1_000).pipe(
  Stream.map((i) => Click.make({ user: `user-${i % 10}`, page: i % 2 === 0 ? "/" : "/pricing", at: new Date() }))
)

const program = Effect.gen(function*() {
  const projectId = yield* Config.String("GOOGLE_CLOUD_PROJECT")
  yield* BigQueryClient.createDataset("web") // the sink creates tables, never datasets
  const summary = yield* clicks.pipe(
    Stream.run(BigQuerySink.make({
      table: yield* TableDestination.make({ projectId, datasetId: "web", tableId: "clicks" }),
      serializer: yield* RowSerializer.fromSchema(Click) // user STRING, page STRING, at TIMESTAMP
    }))
  )
  yield* Effect.log(`${summary.recordsWritten} rows, ${summary.retries} retries`)
}).pipe(Effect.provide(BigQueryClient.layerConfig({ projectId: Config.String("GOOGLE_CLOUD_PROJECT") })))

NodeRuntime.runMain(program)
