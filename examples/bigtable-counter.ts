/**
 * A Bigtable counter: page views summed server-side with AddToCell on an INT64_SUM family, one row
 * per page and day. Replaying a stream adds again (AddToCell is not idempotent), so use this for
 * at-least-once counting where a rare double count is acceptable.
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/bigtable-counter.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Bigtable } from "@google-cloud/bigtable"
import { Config, Effect, Stream } from "effect"
import { BigtableSink, Mutation, RowMutationEntry, TableDestination } from "effect-gcp-sinks/Bigtable"
import { BigtableLive, projectId } from "./config.ts"

interface PageView {
  readonly page: string
  readonly day: string
}

const views: ReadonlyArray<PageView> = Array.from({ length: 10_000 }, (_, i) => ({
  page: ["/", "/pricing", "/docs"][i % 3] ?? "/",
  day: `2026-11-${String(20 + (i % 7)).padStart(2, "0")}`
}))

const program = Effect.gen(function*() {
  const project = yield* projectId
  const table = yield* TableDestination.make({ projectId: project, instanceId: "examples", tableId: "page_views" })

  const summary = yield* Stream.fromIterable(views).pipe(
    Stream.run(BigtableSink.make({
      table,
      serializer: (view: PageView) =>
        RowMutationEntry.make(
          `${view.page}#${view.day}`,
          Mutation.addToCell({ family: "views", qualifier: "n", input: 1 })
        ),
      createDisposition: "CREATE_IF_NEEDED",
      tableCreateOptions: { columnFamilies: { views: { type: "INT64_SUM" } } }
    }))
  )
  yield* Effect.log(`applied ${summary.recordsWritten} increments`)

  // Read the sums back with the official client (it decodes an INT64_SUM cell to a number).
  const emulator = yield* Config.String("BIGTABLE_EMULATOR_HOST").pipe(Config.withDefault(undefined))
  const client = new Bigtable({
    projectId: project,
    metricsEnabled: false,
    ...(emulator ? { apiEndpoint: emulator } : {})
  })
  const [rows] = yield* Effect.tryPromise(() => client.instance("examples").table("page_views").getRows())
  for (const row of rows.slice(0, 6)) {
    const cell: unknown = row.data["views"]?.["n"]?.[0]?.value
    const count = cell instanceof Uint8Array ? Buffer.from(cell).readBigInt64BE() : cell
    yield* Effect.log(`${row.id}: ${String(count)} views`)
  }
  yield* Effect.log(`${rows.length} counters in all`)
  yield* Effect.promise(() => client.close())
})

NodeRuntime.runMain(program.pipe(Effect.provide(BigtableLive)))
