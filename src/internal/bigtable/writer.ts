/**
 * The scoped at-least-once Bigtable writer: the writer core (`internal/writer/`) with the Bigtable
 * backend (`backend.ts`). Options are validated here; the core opens the failure handler, starts
 * the owner fiber and the ticker, and admits records under the writer-global in-flight bounds
 * (`maxInFlightEntries`, `maxInFlightBytes`).
 *
 * The exactly-once mode (DESIGN 6) plugs in at `checkpoint` through the core's checkpoint hook;
 * here `checkpoint` is a flush.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { BigtableClient } from "../../Bigtable/BigtableClient.ts"
import type { BigtableSinkOptions } from "../../Bigtable/BigtableSink.ts"
import type { RecordFailed } from "../../Sink/FailureHandler.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { Writer } from "../../Sink/Writer.ts"
import * as core from "../writer/writer.ts"
import * as backend from "./backend.ts"
import * as metrics from "./metrics.ts"
import * as options from "./options.ts"
import type { WriterError } from "./state.ts"

export type { WriterError } from "./state.ts"

/** @internal */
export const make = <A, EH = never, R = never>(
  sinkOptions: BigtableSinkOptions<A, EH, R>
): Effect.Effect<
  Writer<A, WriterError<EH>>,
  SinkConfigError | EH | RecordFailed,
  BigtableClient | Scope.Scope | R
> => Effect.flatMap(options.settings(sinkOptions), fromSettings)

/** {@link make} from options already validated (the sink reads `flushInterval` from them too). @internal */
export const fromSettings = <A, EH = never, R = never>(
  settings: options.Settings<A, EH, R>
): Effect.Effect<
  Writer<A, WriterError<EH>>,
  EH | RecordFailed,
  BigtableClient | Scope.Scope | R
> =>
  Effect.gen(function*() {
    const client = yield* BigtableClient
    const w = settings.writer
    return yield* core.make({
      handler: settings.handler,
      limits: { maxUnits: w.maxInFlightEntries, maxBytes: w.maxInFlightBytes },
      retry: w.retry,
      recovery: w.recovery,
      metrics: {
        recordsSend: metrics.recordsSend,
        bytesSend: metrics.bytesSend,
        recordsSendErrors: metrics.recordsSendErrors,
        recordsSkipped: metrics.recordsSkipped,
        destinationRecordsSend: metrics.destinationRecordsSend,
        destinationSendErrors: metrics.destinationSendErrors,
        inFlightUnits: metrics.inFlightEntries,
        inFlightBytes: metrics.inFlightBytes,
        perDestination: w.perDestinationMetrics
      },
      backend: backend.make(settings, client, (table) => options.checkTable("destinationResolver(...)", table))
    })
  })
