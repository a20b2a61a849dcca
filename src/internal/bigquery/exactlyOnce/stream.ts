/**
 * A destination's BUFFERED stream in the exactly-once mode (reference 2.6): created lazily when the
 * destination opens (a missing table created first under `CREATE_IF_NEEDED`), or restored from a
 * checkpoint and probed by its first append; reused across checkpoints, never finalized. Its
 * connection slot can move to a fresh stream when a restored one is abandoned.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { Settings } from "../options.ts"
import type { Request } from "../storageWrite/backend.ts"
import { type ConnectionSlot, type Destination, makeSlot, untilTable } from "../storageWrite/destination.ts"
import type { SendBacklog } from "../transport/sendBacklog.ts"
import * as WriteStreams from "../transport/writeStreams.ts"

/**
 * The exactly-once state of one destination. Owned by the writer's owner fiber, except `name`,
 * which the destination's probe rewrites when it abandons a restored stream (the owner reads it
 * only once nothing is in flight: at a checkpoint's prepare).
 *
 * Appends are pipelined: each request is stamped, when it is sent, with the offset its rows go at if
 * every append before it lands whole ({@link nextStamp}), and carries a link to its predecessor's
 * final end (`storageWrite/backend.ts` `Link`), which it waits for only when the service says the
 * stamp is off.
 *
 * @internal
 */
export interface BufferedStream {
  /** The stream appended to. */
  name: string
  /** The end of the appended rows: the highest `offset + written` of the answered appends. */
  nextOffset: number
  /** Restored and not yet probed: the next append is the probe, alone in flight. */
  probe: boolean
  /** Appends sent and not yet answered. */
  inFlight: number
  /** Their rows. */
  inFlightRows: number
  /** The end of the last append sent: its successor's stamp is checked against it. */
  last: Deferred.Deferred<number, BigQueryError> | undefined
  /** Sealed requests waiting for the probe's answer, in order. */
  readonly queue: Array<Request>
  /**
   * The stream and `nextOffset` at the last checkpoint's prepare: the destination is clean (evictable)
   * when both are still the same (a probe that abandons the stream changes the name).
   */
  prepared: { readonly name: string; readonly offset: number }
  /** Points the slot at another stream (after an abandon). */
  readonly switchTo: (name: string) => Effect.Effect<void>
}

/**
 * The buffered stream of each open destination of a writer. A destination's entry is set by its
 * open before the destination reaches the owner, then read on the owner; it goes with the
 * destination when an idle one is forgotten.
 *
 * @internal
 */
export type Streams = WeakMap<Destination, BufferedStream>

/**
 * The offset of the next request: `nextOffset` plus the rows in flight. Never below where the rows
 * belong (an append writes at most its rows, and answers out of order only count some twice), so an
 * `OFFSET_ALREADY_EXISTS` at a stamp is the request's own earlier, unanswered attempt or another
 * writer's rows (`storageWrite/verdict.ts` tells them apart); too high, and the
 * request is restamped at its predecessor's end after `OFFSET_OUT_OF_RANGE`.
 *
 * @internal
 */
export const nextStamp = (b: BufferedStream): number => b.nextOffset + b.inFlightRows

/** Whether `b` is as the last checkpoint's prepare left it: same stream, same offset. @internal */
export const isClean = (b: BufferedStream): boolean => b.name === b.prepared.name && b.nextOffset === b.prepared.offset

/** A connection slot whose stream can change: the current one closed, the next opened on demand. @internal */
export const switchableSlot = (
  channel: grpc.Client,
  initial: string,
  backlog: SendBacklog
): Effect.Effect<{ readonly slot: ConnectionSlot; readonly switchTo: (name: string) => Effect.Effect<void> }> =>
  Effect.map(makeSlot(channel, initial, backlog), (first) => {
    let inner = first
    const slot: ConnectionSlot = {
      acquire: (descriptor) => Effect.suspend(() => inner.acquire(descriptor)),
      ready: (descriptor) => inner.ready(descriptor),
      retire: (connection) => Effect.suspend(() => inner.retire(connection)),
      abort: (connection, reason) => Effect.suspend(() => inner.abort(connection, reason)),
      close: Effect.suspend(() => inner.close)
    }
    // the next slot is in place before the old one closes: a closed slot opens nothing (`makeSlot`)
    const switchTo = (name: string) =>
      Effect.flatMap(makeSlot(channel, name, backlog), (next) => {
        const old = inner
        inner = next
        return old.close
      })
    return { slot, switchTo }
  })

/**
 * Creates a BUFFERED stream on `destination`'s table: a missing table is created first under
 * `CREATE_IF_NEEDED` (terminal under `CREATE_NEVER`), then `CreateWriteStream` retried on the
 * recovery budget.
 *
 * @internal
 */
export const create = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: TableDestination,
  schema: TableSchema.TableSchema
): Effect.Effect<string, BigQueryError> =>
  untilTable(
    client,
    settings,
    destination,
    schema,
    WriteStreams.createBuffered(client.write, destination.tablePath),
    "CreateWriteStream"
  )

/** Where a restored destination resumes: its stream and the offset after the flushed rows. @internal */
export interface Restored {
  readonly stream: string
  readonly nextOffset: number
}

/**
 * Connects a destination: to its restored stream (probed by the first append), or to a stream
 * created now.
 *
 * @internal
 */
export const connect = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: TableDestination,
  restored: Restored | undefined,
  backlog: SendBacklog
) =>
  Effect.fnUntraced(function*(schema: TableSchema.TableSchema) {
    const name = restored?.stream ?? (yield* create(client, settings, destination, schema))
    const { slot, switchTo } = yield* switchableSlot(client.write, name, backlog)
    const nextOffset = restored?.nextOffset ?? 0
    const buffered: BufferedStream = {
      name,
      nextOffset,
      probe: restored !== undefined,
      inFlight: 0,
      inFlightRows: 0,
      last: undefined,
      queue: [],
      prepared: { name, offset: nextOffset },
      switchTo
    }
    return { slot, buffered }
  })
