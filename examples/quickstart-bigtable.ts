import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Stream } from "effect"
import { BigtableClient, BigtableSink, Mutation, RowMutationEntry, TableDestination } from "effect-gcp-sinks/Bigtable"

interface Reading {
  readonly sensor: string
  readonly at: number
  readonly celsius: number
}

const readings: Stream.Stream<Reading> = Stream.range(1, 1_000).pipe(
  Stream.map((i) => ({ sensor: `sensor-${i % 5}`, at: 1_700_000_000 + i, celsius: 20 + (i % 7) }))
)

const program = Effect.gen(function*() {
  const projectId = yield* Config.String("GOOGLE_CLOUD_PROJECT")
  const summary = yield* readings.pipe(
    Stream.run(BigtableSink.make({
      table: yield* TableDestination.make({ projectId, instanceId: "iot", tableId: "readings" }),
      serializer: (r: Reading) =>
        RowMutationEntry.make(
          `${r.sensor}#${r.at}`,
          Mutation.setCell({ family: "m", qualifier: "c", value: `${r.celsius}` })
        ),
      createDisposition: "CREATE_IF_NEEDED", // Bigtable's default is CREATE_NEVER: families cannot be guessed
      tableCreateOptions: { columnFamilies: { m: {} } }
    }))
  )
  yield* Effect.log(`${summary.recordsWritten} rows`)
}).pipe(Effect.provide(BigtableClient.layerConfig({ projectId: Config.String("GOOGLE_CLOUD_PROJECT") })))

NodeRuntime.runMain(program)
