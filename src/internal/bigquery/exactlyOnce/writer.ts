/**
 * The exactly-once BigQuery writer and sink: the at-least-once writer core and backend in the
 * buffered mode (`mode.ts`), wrapped by the shared checkpoint protocol (`internal/checkpoint/protocol.ts`)
 * with the BigQuery participant (`participant.ts`): restore on build, `checkpoint(position)` =
 * drain, prepare `(stream, offset)` commits, save, `FlushRows`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Sink from "effect/Sink"
import { BigQueryClient } from "../../../BigQuery/BigQueryClient.ts"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import type { CheckpointError, Resume } from "../../../Sink/Checkpoint.ts"
import type { WriteSummary } from "../../../Sink/WriteSummary.ts"
import * as checkpoint from "../../checkpoint/protocol.ts"
import * as checkpointSink from "../../checkpoint/sink.ts"
import type { Settings } from "../options.ts"
import type { OwnerView } from "../storageWrite/backend.ts"
import * as writer from "../storageWrite/writer.ts"
import * as Mode from "./mode.ts"
import * as Participant from "./participant.ts"
import type { Restored, Streams } from "./stream.ts"

/** What an exactly-once writer keeps per destination and stream, by writer (a test's size probe). */
const probes = new WeakMap<object, () => Participant.Sizes>()

/**
 * The sizes of a writer's per-stream state (`flushed`, `restored`): a long run must keep them flat.
 * `undefined` for a writer this module did not build.
 *
 * @internal
 */
export const sizesOf = (w: object): Participant.Sizes | undefined => probes.get(w)?.()

/** The exactly-once writer, restored from `resume`. @internal */
export const make = Effect.fnUntraced(function*<A, P, E, R>(settings: Settings<A, E, R>, resume: Resume<P>) {
  const client = yield* BigQueryClient
  const restored = new Map<string, Restored>()
  const streams: Streams = new WeakMap()
  let owner: OwnerView<BigQueryError | E> | undefined
  const base = yield* writer.makeWith(settings, {
    mode: (c) => Mode.make(c, settings, restored, streams),
    onOwner: (o) => void (owner = o)
  })
  const participant = Participant.make(
    client,
    settings,
    () => {
      if (owner === undefined) throw new Error("BigQuerySink: the writer core is not built")
      return owner
    },
    restored,
    streams
  )
  const exactlyOnce = yield* checkpoint.make({ name: "BigQuerySink", writer: base, resume, participant })
  probes.set(exactlyOnce, participant.sizes)
  return exactlyOnce
})

/** The exactly-once sink: a writer per run, checkpoints every `every` and at the end of input. @internal */
export const sink = <A, P, E, R>(
  settings: Settings<A, E, R>,
  decoded: checkpointSink.Settings<A, P>
): Sink.Sink<WriteSummary, A, never, BigQueryError | E | CheckpointError, BigQueryClient | R> =>
  checkpointSink.make(Effect.map(
    make<A, P, E, R>(settings, decoded.resume),
    (w) => ({ writer: w, every: decoded.every, position: decoded.position })
  ))
