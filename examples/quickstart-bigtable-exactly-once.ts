import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Layer, Option, Schema, Stream } from "effect"
import {
  BigtableClient,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "effect-gcp-sinks/Bigtable"
import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"

interface PageView {
  readonly offset: number
  readonly page: string
}

// a replayable source: the same views at the same offsets on every run, over 500 articles (each view
// leaves a marker cell in its counter's row: hot rows grow, see docs/exactly-once.md)
const viewsFrom = (offset: number): Stream.Stream<PageView> =>
  Stream.range(offset, 9_999).pipe(Stream.map((i) => ({ offset: i, page: `/articles/${i % 500}` })))

const program = Effect.gen(function*() {
  const projectId = yield* Config.String("GOOGLE_CLOUD_PROJECT")
  const resume = yield* Checkpoint.resume({ writerId: "page-views-0", positionSchema: Schema.Number })
  const summary = yield* viewsFrom(Option.getOrElse(resume.position, () => 0)).pipe(
    Stream.run(BigtableSink.make({
      table: yield* TableDestination.make({ projectId, instanceId: "iot", tableId: "page_views" }),
      serializer: (view: PageView) =>
        RowMutationEntry.make(
          view.page,
          Mutation.addToCell({ family: "views", qualifier: "n", timestampMicros: 0, input: 1n })
        ),
      writeMethod: WriteMethod.exactlyOnce({ markerFamily: "eo" }),
      // the table with its INT64_SUM family, and the marker family, made on first use
      createDisposition: "CREATE_IF_NEEDED",
      tableCreateOptions: { columnFamilies: { views: { type: "INT64_SUM" } } },
      checkpoint: { resume, every: 2_500, position: (view) => view.offset + 1 }
    }))
  )
  yield* Effect.log(`${summary.recordsWritten} views counted, each once`)
}).pipe(Effect.provide(Layer.mergeAll(
  BigtableClient.layerConfig({ projectId: Config.String("GOOGLE_CLOUD_PROJECT") }),
  CheckpointStore.file("./.example-state/page-views")
)))

NodeRuntime.runMain(program)
