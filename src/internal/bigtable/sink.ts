/**
 * The Bigtable `Sink`: the writer core's sink (`internal/writer/sink.ts`) over a Bigtable writer.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Sink from "effect/Sink"
import type { BigtableClient } from "../../Bigtable/BigtableClient.ts"
import type { BigtableSinkOptions } from "../../Bigtable/BigtableSink.ts"
import type { WriteSummary } from "../../Sink/WriteSummary.ts"
import * as coreSink from "../writer/sink.ts"
import * as options from "./options.ts"
import type { WriterError } from "./state.ts"
import * as writer from "./writer.ts"

/** @internal */
export const make = <A, EH = never, R = never>(
  sinkOptions: BigtableSinkOptions<A, EH, R>
): Sink.Sink<WriteSummary, A, never, WriterError<EH>, BigtableClient | R> =>
  coreSink.make(
    Effect.gen(function*() {
      const settings = yield* options.settings(sinkOptions)
      return { writer: yield* writer.fromSettings(settings), flushInterval: settings.flushInterval }
    })
  )
