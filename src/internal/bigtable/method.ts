/**
 * `BigtableSink.make` and `writer`: the options' `writeMethod` chooses the writer (at-least-once or
 * exactly-once), and the `checkpoint` option is required exactly by exactly-once.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Sink from "effect/Sink"
import type { BigtableClient } from "../../Bigtable/BigtableClient.ts"
import type {
  AtLeastOnceSinkOptions,
  BigtableSinkError,
  ExactlyOnceSinkOptions,
  Handler
} from "../../Bigtable/BigtableSink.ts"
import type { CheckpointError } from "../../Sink/Checkpoint.ts"
import type { HandlerContext, HandlerError, WithFailureHandler, WriterForm } from "../../Sink/SinkOptions.ts"
import type { Writer } from "../../Sink/Writer.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as checkpointSink from "../checkpoint/sink.ts"
import * as O from "../options/schema.ts"
import * as atLeastOnceSink from "./atLeastOnce/sink.ts"
import * as atLeastOnceWriter from "./atLeastOnce/writer.ts"
import * as exactlyOnce from "./exactlyOnce/sink.ts"

type ALO<A, H> = WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
type EO<A, P, H> = WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>

type Error<H> = BigtableSinkError<HandlerError<H>> | CheckpointError
type Services<H> = BigtableClient | HandlerContext<H>

// options may come from untyped JavaScript: anything but an object is left to the decoders to name
const isExactlyOnce = (input: unknown): boolean =>
  O.isRecord(input) && O.isRecord(input.writeMethod) && input.writeMethod._tag === "ExactlyOnce"

const refuseCheckpoint = (input: unknown) => checkpointSink.refuse(input, "WriteMethod.exactlyOnce(...)")

/** The sink of `BigtableSink.make`. @internal */
export const sink = <A, P, H extends Handler | undefined>(
  input: ALO<A, H> | EO<A, P, H>
): Sink.Sink<WriteSummary, A, never, Error<H>, Services<H>> =>
  isExactlyOnce(input)
    ? exactlyOnce.make<A, P, H>(input as EO<A, P, H>)
    : Sink.unwrap<WriteSummary, A, never, Error<H>, never, Services<H>>(
      Effect.as(refuseCheckpoint(input), atLeastOnceSink.make(input as ALO<A, H>))
    )

/** The writer of `BigtableSink.writer`. @internal */
export const writer = <A, P, H extends Handler | undefined>(
  input: ALO<A, H> | WriterForm<EO<A, P, H>>
): Effect.Effect<
  Writer<A, Error<H>, P> | Writer<A, BigtableSinkError<HandlerError<H>>>,
  Error<H>,
  Services<H> | Scope.Scope
> =>
  isExactlyOnce(input)
    ? exactlyOnce.makeWriter<A, P, H>(input as WriterForm<EO<A, P, H>>)
    : Effect.andThen(refuseCheckpoint(input), atLeastOnceWriter.make(input as ALO<A, H>))
