/**
 * The BigQuery `Sink`: the writer core's sink (`internal/core/sink.ts`) over a BigQuery writer: a
 * writer per run, `write` per chunk, an optional timer flush, a final flush at the end of input, and
 * the summary as the result.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Sink from "effect/Sink"
import type { BigQueryClient } from "../../../BigQuery/BigQueryClient.ts"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import type { WriteSummary } from "../../../Sink/WriteSummary.ts"
import * as coreSink from "../../core/sink.ts"
import type { Settings } from "../options.ts"
import * as writer from "./writer.ts"

/** @internal */
export const make = <A, E, R>(
  settings: Settings<A, E, R>
): Sink.Sink<WriteSummary, A, never, BigQueryError | E, BigQueryClient | R> =>
  coreSink.make(
    Effect.map(writer.make(settings), (w) => ({ writer: w, flushInterval: settings.stream.flushInterval }))
  )
