/**
 * A destination's BUFFERED stream in the exactly-once mode (reference 2.6): created lazily when the
 * destination opens (a missing table created first under `CREATE_IF_NEEDED`), or restored from a
 * checkpoint and probed by its first append; reused across checkpoints, never finalized. Its
 * connection slot can move to a fresh stream when a restored one is abandoned.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import * as Effect from "effect/Effect"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import type { BigQueryError } from "../../../BigQuery/BigQueryError.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { Request } from "../backend.ts"
import { type ConnectionSlot, makeSlot, untilTable } from "../destination.ts"
import type { Settings } from "../options.ts"
import * as WriteStreams from "../writeStreams.ts"

/**
 * The exactly-once state of one destination. Owned by the writer's owner fiber, except `name`,
 * which the destination's one append in flight rewrites when it abandons a restored stream (the
 * owner reads it only once nothing is in flight: at a checkpoint's prepare).
 *
 * @internal
 */
export interface BufferedStream {
  /** The stream appended to. */
  name: string
  /** The offset of the next batch: rows `0..nextOffset-1` are appended (acknowledged). */
  nextOffset: number
  /** Restored and not yet probed: the next append is the probe. */
  probe: boolean
  /** The append in flight (one at a time: each offset follows the previous answer). */
  sending: boolean
  /** Sealed requests waiting for it, in order. */
  readonly queue: Array<Request>
  /** `nextOffset` at the last checkpoint's prepare: the destination is clean (evictable) when equal. */
  prepared: number
  /** Points the slot at another stream (after an abandon). */
  readonly switchTo: (name: string) => Effect.Effect<void>
}

/** A connection slot whose stream can change: the current one closed, the next opened on demand. @internal */
export const switchableSlot = (
  channel: grpc.Client,
  initial: string
): Effect.Effect<{ readonly slot: ConnectionSlot; readonly switchTo: (name: string) => Effect.Effect<void> }> =>
  Effect.map(makeSlot(channel, initial), (first) => {
    let inner = first
    const slot: ConnectionSlot = {
      acquire: (descriptor) => Effect.suspend(() => inner.acquire(descriptor)),
      retire: (connection) => Effect.suspend(() => inner.retire(connection)),
      abort: (connection, reason) => Effect.suspend(() => inner.abort(connection, reason)),
      close: Effect.suspend(() => inner.close)
    }
    const switchTo = (name: string) =>
      Effect.suspend(() => {
        const old = inner
        return Effect.andThen(old.close, Effect.map(makeSlot(channel, name), (next) => void (inner = next)))
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
  restored: Restored | undefined
) =>
(schema: TableSchema.TableSchema): Effect.Effect<
  { readonly slot: ConnectionSlot; readonly buffered: BufferedStream },
  BigQueryError
> =>
  Effect.gen(function*() {
    const name = restored?.stream ?? (yield* create(client, settings, destination, schema))
    const { slot, switchTo } = yield* switchableSlot(client.write, name)
    const nextOffset = restored?.nextOffset ?? 0
    const buffered: BufferedStream = {
      name,
      nextOffset,
      probe: restored !== undefined,
      sending: false,
      queue: [],
      prepared: nextOffset,
      switchTo
    }
    return { slot, buffered }
  })
