/**
 * The exactly-once mode of the BigQuery backend (`backend.ts` `Mode`, reference 2.6): each
 * destination appends to its own BUFFERED stream at explicit offsets, one append in flight per
 * destination (each offset follows the previous answer, so a row-level rejection, whose survivors
 * are re-appended at the rejected offset, never strands batches behind it), destinations in
 * parallel. Everything else (preparing, batching by bytes, the append's repair loop, routing,
 * counters) is the at-least-once backend's.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import type { Mode, Request } from "../backend.ts"
import { batchOf } from "../backend.ts"
import * as Destination from "../destination.ts"
import type { Settings } from "../options.ts"
import * as PendingAppend from "../pendingAppend.ts"
import { type BufferedStream, connect, create, type Restored } from "./stream.ts"

const bufferedOf = (d: Destination.Destination): BufferedStream => {
  if (d.buffered === undefined) throw new Error(`BigQuerySink: destination ${d.key} has no buffered stream`)
  return d.buffered
}

const stamp = (request: Request, b: BufferedStream): Request => {
  b.sending = true
  return { ...request, offset: b.nextOffset }
}

/**
 * The mode; `restored` holds the streams a checkpoint restored, by destination key (read when a
 * destination opens, after the restore).
 *
 * @internal
 */
export const make = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  restored: ReadonlyMap<string, Restored>
): Mode => ({
  open: (destination, now, pool) =>
    Destination.openWith(
      settings,
      destination,
      now,
      pool,
      connect(client, settings, destination, restored.get(destination.toString()))
    ),
  send: (request, send) =>
    Effect.suspend(() => {
      const b = bufferedOf(request.d)
      if (b.sending) {
        b.queue.push(request)
        return Effect.void
      }
      return send(stamp(request, b))
    }),
  call: (request) =>
    Effect.suspend(() => {
      const d = request.d
      const b = bufferedOf(d)
      const abandon = Effect.gen(function*() {
        const old = b.name
        const name = yield* create(client, settings, d.destination, request.schema)
        yield* b.switchTo(name)
        b.name = name
        yield* Effect.logWarning(
          `BigQuerySink: the restored stream ${old} of ${d.key} cannot be adopted; appending to a new stream ` +
            `${name} from offset 0 (the old one is left as it is, never finalized)`
        )
      })
      return PendingAppend.run(client, settings, d, batchOf(request), {
        offset: request.offset ?? b.nextOffset,
        probe: b.probe,
        abandon
      })
    }),
  answered: (request, outcome, send) =>
    Effect.suspend(() => {
      const b = bufferedOf(request.d)
      b.sending = false
      if (Exit.isFailure(outcome)) return Effect.void
      b.probe = false
      b.nextOffset = outcome.value.offset + outcome.value.written
      const next = b.queue.shift()
      return next === undefined ? Effect.void : send(stamp(next, b))
    }),
  evictable: (d) =>
    d.buffered === undefined ||
    (!d.buffered.sending && d.buffered.queue.length === 0 && d.buffered.nextOffset === d.buffered.prepared)
})
