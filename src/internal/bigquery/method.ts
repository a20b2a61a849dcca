/**
 * `BigQuerySink.make` and `writer`: the options' `writeMethod` chooses the writer (at-least-once,
 * exactly-once, file loads), and the `checkpoint` option is required exactly by the methods that
 * checkpoint. Each method's options are decoded once, by its own decoder.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Sink from "effect/Sink"
import { BigQueryClient } from "../../BigQuery/BigQueryClient.ts"
import { BigQueryError } from "../../BigQuery/BigQueryError.ts"
import type {
  AtLeastOnceSinkOptions,
  ExactlyOnceSinkError,
  ExactlyOnceSinkOptions,
  FileLoadsSinkOptions,
  Handler,
  WriterOptions as WriterForm
} from "../../BigQuery/BigQuerySink.ts"
import type { CheckpointError, Resume } from "../../Sink/Checkpoint.ts"
import type { GcsClient } from "../../Sink/GcsClient.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError, WithFailureHandler } from "../../Sink/SinkOptions.ts"
import type { Writer } from "../../Sink/Writer.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as checkpointSink from "../checkpoint/sink.ts"
import * as O from "../options/schema.ts"
import * as optionalPackage from "../wire/optionalPackage.ts"
import * as exactlyOnce from "./exactlyOnce/writer.ts"
import * as fileLoadsOptions from "./fileLoads/options.ts"
import * as options from "./options.ts"
import * as storageWriteSink from "./storageWrite/sink.ts"
import * as storageWriteWriter from "./storageWrite/writer.ts"

type ALO<A, H> = WithFailureHandler<AtLeastOnceSinkOptions<A>, H>
type EO<A, P, H> = WithFailureHandler<ExactlyOnceSinkOptions<A, P>, H>
type FL<A, P, H> = WithFailureHandler<FileLoadsSinkOptions<A, P>, H>

type Error<H> = ExactlyOnceSinkError<HandlerError<H>>
type Services<H> = BigQueryClient | GcsClient | HandlerContext<H>

/**
 * The method an options object names: by the tag of its `writeMethod` (its decoder checks the rest).
 * Options may come from untyped JavaScript: anything but an object goes to the at-least-once decoder,
 * which names it.
 */
const methodOf = (input: unknown): "AtLeastOnce" | "ExactlyOnce" | "FileLoads" => {
  const method = O.isRecord(input) ? input.writeMethod : undefined
  const tag = O.isRecord(method) ? method._tag : undefined
  return tag === "ExactlyOnce" || tag === "FileLoads" ? tag : "AtLeastOnce"
}

/** File loads stage Avro (`avsc`) in Cloud Storage: their module is loaded only when they are asked for. */
const fileLoads = optionalPackage.load(() => import("./fileLoads/writer.ts"), {
  needs: ["avsc", "@google-cloud/storage"],
  feature: "WriteMethod.fileLoads",
  path: "writeMethod"
})

/**
 * A write proves first contact (`wire/firstContact.ts`) once its options are decoded and before any
 * request: a setup mistake ends it within the client's `firstContactTimeout`, saying what to do.
 */
const contact: Effect.Effect<void, BigQueryError, BigQueryClient> = BigQueryClient.use((client) =>
  client.firstContact === undefined
    ? Effect.void
    : Effect.mapError(client.firstContact, (reason) => new BigQueryError({ reason }))
)

const refuseCheckpoint = (input: unknown) =>
  checkpointSink.refuse(input, "WriteMethod.exactlyOnce(...) and WriteMethod.fileLoads(...)")

/**
 * The writer form's `checkpoint`: `{ resume }`. The writer is told each position when the caller
 * checkpoints (`writer.checkpoint(position)`): `every` and `position` are refused, each named.
 */
const WriterCheckpoint = Schema.Struct({
  resume: O.requiredValue(O.guard(checkpointSink.isResume, "the result of Checkpoint.resume(...)")),
  every: O.requiredValue(
    Schema.Undefined.annotate({ expected: "absent: a writer checkpoints at writer.checkpoint(position)" })
  ),
  position: O.requiredValue(
    Schema.Undefined.annotate({ expected: "absent: a writer is given each position at writer.checkpoint(position)" })
  )
})

/** The `resume` of the writer form's `checkpoint`; `method` names what requires it. */
const writerResume = <P>(input: unknown, method: string): Effect.Effect<Resume<P>, SinkConfigError> =>
  O.isRecord(input)
    // the option's type fixes `P`; the schema checks the value for untyped callers
    ? Effect.map(O.decode(WriterCheckpoint, "checkpoint")(input), (c) => c.resume as Resume<P>)
    : O.fail("checkpoint", `is required by ${method}: { resume }, was ${O.describe(input)}`)

/**
 * The file-loads options: `writeMethod` and the rest decoded; with checkpoints taken during the
 * input (`every`, or the writer form) only `WRITE_APPEND` is accepted, since each checkpoint loads.
 */
const decodeFileLoads = <A, P, H extends Handler | undefined>(
  input: FL<A, P, H> | WriterForm<FL<A, P, H>>,
  loadsOnce: boolean
) => {
  const { checkpoint: _, ...rest } = input
  return fileLoadsOptions.decodeSink<A, H>(rest, loadsOnce ? "loadsOnce" : "checkpointed")
}

/** The sink of `BigQuerySink.make`. @internal */
export const sink = <A, P, H extends Handler | undefined>(
  input: ALO<A, H> | EO<A, P, H> | FL<A, P, H>
): Sink.Sink<WriteSummary, A, never, Error<H>, Services<H>> => {
  type E = HandlerError<H>
  type R = HandlerContext<H>
  switch (methodOf(input)) {
    case "ExactlyOnce":
      return Sink.unwrap<WriteSummary, A, never, Error<H>, BigQueryClient, Services<H>>(Effect.gen(function*() {
        const checkpoint = yield* checkpointSink.decode<A, P>(input.checkpoint, "sink", "WriteMethod.exactlyOnce(...)")
        const settings = yield* options.decode(input as EO<A, P, H>, "ExactlyOnce")
        yield* contact
        return exactlyOnce.sink<A, P, E, R>(settings, checkpoint)
      }))
    case "FileLoads":
      return Sink.unwrap<WriteSummary, A, never, Error<H>, BigQueryClient, Services<H>>(Effect.gen(function*() {
        const checkpoint = yield* checkpointSink.decode<A, P>(input.checkpoint, "sink", "WriteMethod.fileLoads(...)")
        // without checkpoint.every the sink loads once, at the end of input
        const loadsOnce = checkpoint.every._tag === "EndOfInput"
        const { files, settings } = yield* decodeFileLoads(input as FL<A, P, H>, loadsOnce)
        const module = yield* fileLoads
        yield* contact
        return module.sink<A, P, E, R>(settings, files, checkpoint)
      }))
    case "AtLeastOnce":
      return Sink.unwrap<WriteSummary, A, never, Error<H>, BigQueryClient, Services<H>>(Effect.gen(function*() {
        yield* refuseCheckpoint(input)
        const settings = yield* options.decode(input as ALO<A, H>)
        yield* contact
        return storageWriteSink.make<A, E, R>(settings)
      }))
  }
}

/** The writer of `BigQuerySink.writer`. @internal */
export const writer = <A, P, H extends Handler | undefined>(
  input: ALO<A, H> | WriterForm<EO<A, P, H>> | WriterForm<FL<A, P, H>>
): Effect.Effect<
  Writer<A, BigQueryError | CheckpointError | HandlerError<H>, P> | Writer<A, BigQueryError | HandlerError<H>>,
  Error<H>,
  Services<H> | Scope.Scope
> => {
  type E = HandlerError<H>
  type R = HandlerContext<H>
  switch (methodOf(input)) {
    case "ExactlyOnce":
      return Effect.gen(function*() {
        const resume = yield* writerResume<P>(input.checkpoint, "WriteMethod.exactlyOnce(...)")
        const settings = yield* options.decode(input as WriterForm<EO<A, P, H>>, "ExactlyOnce")
        yield* contact
        return yield* exactlyOnce.make<A, P, E, R>(settings, resume)
      })
    case "FileLoads":
      return Effect.gen(function*() {
        const resume = yield* writerResume<P>(input.checkpoint, "WriteMethod.fileLoads(...)")
        const { files, settings } = yield* decodeFileLoads(input as WriterForm<FL<A, P, H>>, false)
        const module = yield* fileLoads
        yield* contact
        return yield* module.make<A, P, E, R>(settings, files, resume)
      })
    case "AtLeastOnce":
      return Effect.gen(function*() {
        yield* refuseCheckpoint(input)
        const settings = yield* options.decode(input as ALO<A, H>)
        yield* contact
        return yield* storageWriteWriter.make<A, E, R>(settings)
      })
  }
}
