import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Layer, Option, Schema, Stream } from "effect"
import { BigQueryClient, BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"

const Order = Schema.Struct({ offset: Schema.Number, amount: Schema.Number })

// a replayable source: the same orders at the same offsets on every run
const ordersFrom = (offset: number) =>
  Stream.range(offset, 9_999).pipe(Stream.map((i) => Order.make({ offset: i, amount: i % 100 })))

const program = Effect.gen(function*() {
  const projectId = yield* Config.String("GOOGLE_CLOUD_PROJECT")
  yield* BigQueryClient.createDataset("shop")
  const resume = yield* Checkpoint.resume({ writerId: "orders-0", positionSchema: Schema.Number })
  const summary = yield* ordersFrom(Option.getOrElse(resume.position, () => 0)).pipe(
    Stream.run(BigQuerySink.make({
      table: yield* TableDestination.make({ projectId, datasetId: "shop", tableId: "orders" }),
      serializer: yield* RowSerializer.fromSchema(Order),
      writeMethod: WriteMethod.exactlyOnce(),
      // rows become visible at each checkpoint; a restart resumes at the last one, nothing twice
      checkpoint: { resume, every: 2_500, position: (order) => order.offset + 1 }
    }))
  )
  yield* Effect.log(`${summary.recordsWritten} orders, exactly once`)
}).pipe(Effect.provide(Layer.mergeAll(
  BigQueryClient.layerConfig({ projectId: Config.String("GOOGLE_CLOUD_PROJECT") }),
  CheckpointStore.file("./.example-state/orders")
)))

NodeRuntime.runMain(program)
