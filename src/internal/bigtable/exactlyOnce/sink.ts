/**
 * The exactly-once Bigtable sink and writer from options: decoded by `options.ts`, built by
 * `writer.ts`, the sink form driven by the shared `checkpoint/sink.ts`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Sink from "effect/Sink"
import type { BigtableClient } from "../../../Bigtable/BigtableClient.ts"
import type { BigtableSinkOptions, ExactlyOnceSinkOptions, Handler } from "../../../Bigtable/BigtableSink.ts"
import type { CheckpointError } from "../../../Sink/Checkpoint.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, WithFailureHandler, WriterForm } from "../../../Sink/SinkOptions.ts"
import type { Writer } from "../../../Sink/Writer.ts"
import type { WriteSummary } from "../../../Sink/WriteSummary.ts"
import * as checkpointSink from "../../checkpoint/sink.ts"
import type { WriterError } from "../atLeastOnce/state.ts"
import * as baseOptions from "../options.ts"
import * as options from "./options.ts"
import * as writer from "./writer.ts"

// the shared options, minus what the exactly-once options replace (decoded there)
const base = <A, H extends Handler | undefined>(rest: Record<string, unknown>) =>
  // `rest` is the caller's options without `writeMethod` and `checkpoint`: a `BigtableSinkOptions`
  baseOptions.settings(rest as WithFailureHandler<BigtableSinkOptions<A>, H>)

/** @internal */
export const make = <A, P, H extends Handler | undefined>(
  sinkOptions: WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>
): Sink.Sink<
  WriteSummary,
  A,
  never,
  WriterError<HandlerError<H>> | CheckpointError,
  BigtableClient | HandlerContext<H>
> =>
  checkpointSink.make(
    Effect.gen(function*() {
      const settings = yield* options.settings<A, HandlerError<H>, HandlerContext<H>, P>(
        sinkOptions,
        "sink",
        base<A, H>
      )
      const { room, writer: w } = yield* writer.build(settings)
      return {
        writer: w,
        every: settings.every,
        position: settings.position,
        room
      }
    })
  )

/** @internal */
export const makeWriter = <A, P, H extends Handler | undefined>(
  writerOptions: WriterForm<WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>>
): Effect.Effect<
  Writer<A, WriterError<HandlerError<H>> | CheckpointError, P>,
  SinkConfigError | WriterError<HandlerError<H>> | CheckpointError,
  BigtableClient | Scope.Scope | HandlerContext<H>
> =>
  Effect.flatMap(
    options.settings<A, HandlerError<H>, HandlerContext<H>, P>(writerOptions, "writer", base<A, H>),
    writer.fromSettings
  )
