/**
 * The scoped at-least-once Bigtable writer: the writer core (`internal/core/`) with the Bigtable
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
import { BigtableClient } from "../../../Bigtable/BigtableClient.ts"
import type { BigtableSinkOptions, Handler } from "../../../Bigtable/BigtableSink.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, WithFailureHandler } from "../../../Sink/SinkOptions.ts"
import type { Writer } from "../../../Sink/Writer.ts"
import * as core from "../../core/writer.ts"
import * as deadline from "../../wire/deadline.ts"
import { contact } from "../contact.ts"
import * as metrics from "../metrics.ts"
import * as options from "../options.ts"
import * as backend from "./backend.ts"
import type { BigtableMethod, WriterError } from "./state.ts"

export type { WriterError } from "./state.ts"

/** @internal */
export const make = <A, H extends Handler | undefined>(
  sinkOptions: WithFailureHandler<BigtableSinkOptions<A>, H>
): Effect.Effect<
  Writer<A, WriterError<HandlerError<H>>>,
  SinkConfigError | WriterError<HandlerError<H>>,
  BigtableClient | Scope.Scope | HandlerContext<H>
> => Effect.flatMap(options.settings(sinkOptions), fromSettings)

/** {@link make} from options already validated (the sink reads `flushInterval` from them too). @internal */
export const fromSettings: <A, EH = never, R = never>(
  settings: options.Settings<A, EH, R>
) => Effect.Effect<
  Writer<A, WriterError<EH>>,
  WriterError<EH>,
  BigtableClient | Scope.Scope | R
> = Effect.fnUntraced(
  function*<A, EH, R>(settings: options.Settings<A, EH, R>) {
    yield* contact
    const client = yield* BigtableClient
    const w = settings.writer
    return yield* core.make<BigtableMethod<A, EH, R>>({
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
  },
  // the deadlines of the client's calls (admin repair, MutateRows), inherited by the writer's fibers
  (effect, settings) =>
    effect.pipe(
      Effect.provideService(deadline.AdminTimeout, settings.writer.adminTimeout),
      Effect.provideService(deadline.ResponseTimeout, settings.writer.responseTimeout)
    )
)
