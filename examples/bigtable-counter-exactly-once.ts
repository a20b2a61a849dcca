/**
 * A Bigtable counter like `bigtable-counter.ts`'s, exactly once: views of 500 articles summed with AddToCell,
 * staged until each checkpoint and committed as CheckAndMutateRow requests guarded by marker cells,
 * with checkpoints in a local directory. Kill it and run it again: it resumes at the stored position
 * and no view is counted twice. Run it with `REPLAY=1` to replay the whole source from offset 0 under
 * a fresh store (an "older backup"): every envelope is absorbed by its marker, the sums do not move.
 *
 * The sink creates the table on first use (`CREATE_IF_NEEDED`): `views` (INT64_SUM) and the marker
 * family `eo` (raw, no GC rule).
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/bigtable-counter-exactly-once.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Layer, Metric, Option, Random, Schema, Stream } from "effect"
import {
  BigtableMetrics,
  BigtableSink,
  Mutation,
  RowMutationEntry,
  TableDestination,
  WriteMethod
} from "effect-gcp-sinks/Bigtable"
import { Checkpoint, CheckpointStore } from "effect-gcp-sinks/Sink"
import { BigtableLive, projectId } from "./config.ts"

interface PageView {
  readonly offset: number
  readonly page: string
}

/**
 * A replayable source: the same views at the same offsets on every run, over 500 articles. Each view
 * leaves a marker cell in its counter's row, so the views are spread over rows (docs/exactly-once.md).
 */
const viewsFrom = (offset: number): Stream.Stream<PageView> =>
  Stream.range(offset, 9_999).pipe(Stream.map((i) => ({ offset: i, page: `/articles/${i % 500}` })))

const program = Effect.gen(function*() {
  const project = yield* projectId
  const table = yield* TableDestination.make({ projectId: project, instanceId: "examples", tableId: "page_views_eo" })

  const resume = yield* Checkpoint.resume({ writerId: "page-views-0", positionSchema: Schema.Number })
  const from = Option.getOrElse(resume.position, () => 0)
  yield* Effect.log(`resuming at offset ${from}`)
  const summary = yield* viewsFrom(from).pipe(
    Stream.run(BigtableSink.make({
      table,
      writeMethod: WriteMethod.exactlyOnce({ markerFamily: "eo" }),
      // the table with its INT64_SUM family and the marker family (raw, no GC rule), made on first use
      createDisposition: "CREATE_IF_NEEDED",
      tableCreateOptions: { columnFamilies: { views: { type: "INT64_SUM" } } },
      checkpoint: { resume, every: 2_000, position: (view: PageView) => view.offset + 1 },
      serializer: (view: PageView) =>
        RowMutationEntry.make(
          view.page,
          Mutation.addToCell({ family: "views", qualifier: "n", timestampMicros: 0, input: 1n })
        )
    }))
  )
  const deduplicated = yield* Metric.value(BigtableMetrics.requestsDeduplicated)
  yield* Effect.log(`committed ${summary.recordsWritten} views, ${deduplicated.count} absorbed as duplicates`)
})

// With REPLAY=1 a fresh store per run (the store forgets, the markers do not); else one that persists.
const StoreLive = Layer.unwrap(Effect.gen(function*() {
  const replay = yield* Config.Boolean("REPLAY").pipe(Config.withDefault(false))
  const run = yield* Random.nextIntBetween(0, 1_000_000)
  return CheckpointStore.file(replay ? `./.example-state/replay-${run}` : "./.example-state/counter")
}))

NodeRuntime.runMain(program.pipe(Effect.provide(Layer.mergeAll(StoreLive, BigtableLive))))
