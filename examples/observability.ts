/**
 * The sinks' metrics and spans with Effect's own exporters, no extra packages: every 10 seconds (and at the end) the
 * metrics in Prometheus' text format (serve the same text on `/metrics` with
 * `PrometheusMetrics.layerHttp()` and an HTTP server), the spans (`BigtableSink.write`,
 * `BigtableSink.mutateRows`, ...), metrics and logs over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * names a collector (`http://localhost:4318`), and a progress line per writer (`ProgressLog.every`).
 *
 *   npm run emulators   # in one shell; paste its exports into another, then:
 *   npm run example examples/observability.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Effect, Layer, Stream } from "effect"
import { BigtableClient, BigtableSink, Mutation, RowMutationEntry, TableDestination } from "effect-gcp-sinks/Bigtable"
import { ProgressLog } from "effect-gcp-sinks/Sink"
import { FetchHttpClient } from "effect/http"
import { Otlp, PrometheusMetrics } from "effect/observability"

/** Spans, metrics and logs to an OpenTelemetry collector, when one is named. */
const OtlpLive = Layer.unwrap(Effect.gen(function*() {
  const endpoint = yield* Config.String("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(Config.withDefault(undefined))
  return endpoint === undefined
    ? Layer.empty
    : Otlp.layerJson({ baseUrl: endpoint, resource: { serviceName: "effect-gcp-sinks-example" } }).pipe(
      Layer.provide(FetchHttpClient.layer)
    )
}))

/** The metrics in Prometheus' text format, printed every 10 seconds while the program runs. */
const printMetrics = Effect.sleep("10 seconds").pipe(
  Effect.andThen(PrometheusMetrics.format()),
  Effect.flatMap((text) => Effect.log(text.split("\n").filter((l) => l.startsWith("bigtable_")).join("\n"))),
  Effect.forever
)

const program = Effect.gen(function*() {
  const projectId = yield* Config.String("GOOGLE_CLOUD_PROJECT")
  yield* Effect.forkChild(printMetrics)
  const summary = yield* Stream.range(1, 200_000).pipe(
    Stream.map((i) =>
      RowMutationEntry.make(`row-${i}`, Mutation.setCell({ family: "m", qualifier: "n", value: `${i}` }))
    ),
    Stream.run(BigtableSink.make({
      table: yield* TableDestination.make({ projectId, instanceId: "iot", tableId: "observed" }),
      serializer: (entry: RowMutationEntry.RowMutationEntry) => entry,
      createDisposition: "CREATE_IF_NEEDED",
      tableCreateOptions: { columnFamilies: { m: {} } }
    })),
    ProgressLog.every("1 second") // one line per writer: records, rate, in flight, retries
  )
  yield* Effect.log(`${summary.recordsWritten} rows`)
  yield* PrometheusMetrics.format().pipe(Effect.flatMap(Effect.log))
}).pipe(Effect.provide(Layer.mergeAll(
  BigtableClient.layerConfig({ projectId: Config.String("GOOGLE_CLOUD_PROJECT") }),
  OtlpLive
)))

NodeRuntime.runMain(program)
