/**
 * The Bigtable `Sink`: the writer core's sink (`internal/core/sink.ts`) over a Bigtable writer.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Sink from "effect/Sink"
import type { BigtableClient } from "../../../Bigtable/BigtableClient.ts"
import type { BigtableSinkOptions, Handler } from "../../../Bigtable/BigtableSink.ts"
import type { HandlerContext, HandlerError, WithFailureHandler } from "../../../Sink/SinkOptions.ts"
import type { WriteSummary } from "../../../Sink/WriteSummary.ts"
import * as coreSink from "../../core/sink.ts"
import * as options from "../options.ts"
import type { WriterError } from "./state.ts"
import * as writer from "./writer.ts"

/** @internal */
export const make = <A, H extends Handler | undefined>(
  sinkOptions: WithFailureHandler<BigtableSinkOptions<A>, H>
): Sink.Sink<WriteSummary, A, never, WriterError<HandlerError<H>>, BigtableClient | HandlerContext<H>> =>
  coreSink.make(
    Effect.gen(function*() {
      const settings = yield* options.settings(sinkOptions)
      return { writer: yield* writer.fromSettings(settings), flushInterval: settings.flushInterval }
    })
  )
