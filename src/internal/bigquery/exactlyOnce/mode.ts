/**
 * The exactly-once mode of the BigQuery backend (`backend.ts` `Mode`, reference 2.6): each
 * destination appends to its own BUFFERED stream at explicit offsets, destinations in parallel, and
 * each destination's appends pipelined (ADR 0026): a request is stamped when it is sent with the
 * offset its rows go at if every append before it lands whole (`stream.ts` `nextStamp`), and linked
 * to the end of the append before it. After a row-level rejection (the survivors are re-appended at
 * the rejected offset) the appends behind it are answered `OFFSET_OUT_OF_RANGE` and each goes again
 * at its predecessor's final end: the reference's replay at recomputed offsets, without stopping the
 * pipeline. An append acknowledged at an offset other than its predecessor's end is terminal (an
 * inconsistent stream). A restored stream's probe goes alone; the requests behind it wait for its
 * answer. Everything else (preparing, batching by bytes, the append's decision, routing, counters)
 * is the Storage Write backend's (`storageWrite/`); the verdicts at an explicit offset are its
 * `verdict.ts` `classifyAtOffset`.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, RequestRejected } from "../../../BigQuery/BigQueryError.ts"
import type * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { Settings } from "../options.ts"
import type { Link, Mode, Request } from "../storageWrite/backend.ts"
import * as Destination from "../storageWrite/destination.ts"
import * as PendingAppend from "../storageWrite/pendingAppend.ts"
import { type BufferedStream, connect, create, isClean, nextStamp, type Restored, type Streams } from "./stream.ts"

const bufferedOf = (streams: Streams, d: Destination.Destination): BufferedStream => {
  const b = streams.get(d)
  if (b === undefined) throw new Error(`BigQuerySink: destination ${d.key} has no buffered stream`)
  return b
}

/** The link `stamp` gave a request: every request of this mode is stamped before it is sent. */
const linkOf = (request: Request): Link => {
  if (request.link === undefined) throw new Error(`BigQuerySink: an append to ${request.d.key} was sent unstamped`)
  return request.link
}

/** Stamps `request` at the stream's next offset and links it behind the last append sent. */
const stamp = (request: Request, b: BufferedStream): Request => {
  const offset = nextStamp(b)
  const previous = b.last
  const end = Deferred.makeUnsafe<number, BigQueryError>()
  b.inFlight++
  b.inFlightRows += request.sealed.count
  b.last = end
  return {
    ...request,
    link: { offset, after: previous === undefined ? Effect.succeed(offset) : Deferred.await(previous), end }
  }
}

const inconsistent = (key: string, offset: number, after: number) =>
  new BigQueryError({
    reason: new RequestRejected({
      method: "AppendRows",
      destination: key,
      code: "OK",
      detail: `the append at offset ${offset} was acknowledged, but the append before it ended at offset ` +
        `${after}: the stream is inconsistent`,
      cause: undefined
    })
  })

/** Leaves a restored stream that cannot be adopted for a fresh one, which `d` appends to from offset 0. */
const abandonRestored = Effect.fnUntraced(
  function*<A, E, R>(
    client: BigQueryClientService,
    settings: Settings<A, E, R>,
    b: BufferedStream,
    d: Destination.Destination,
    schema: TableSchema.TableSchema
  ) {
    const old = b.name
    const name = yield* create(client, settings, d.destination, schema)
    yield* b.switchTo(name)
    b.name = name
    yield* Effect.logWarning(
      `BigQuerySink: the restored stream ${old} of ${d.key} cannot be adopted; appending to a new stream ` +
        `${name} from offset 0 (the old one is left as it is, never finalized)`
    )
  }
)

/** An append answered: the stream's next offset moves on, and appends queued behind a probe are sent. */
const answered = (streams: Streams): Mode["answered"] => (request, outcome, send) =>
  Effect.suspend(() => {
    const b = bufferedOf(streams, request.d)
    b.inFlight--
    b.inFlightRows -= request.sealed.count
    if (b.inFlight === 0) b.last = undefined
    if (outcome === undefined) return Effect.void
    const end = outcome.offset + outcome.written
    // a probe may have abandoned the restored stream for a fresh one (its rows then start at 0)
    b.nextOffset = b.probe ? end : Math.max(b.nextOffset, end)
    // a probe whose every row was rejected before the service checked its offset proved nothing
    // about the restored stream: the next append, at the same offset, is the probe
    if (outcome.written > 0) b.probe = false
    if (b.queue.length === 0) return Effect.void
    const waiting = b.probe ? b.queue.splice(0, 1) : b.queue.splice(0)
    return Effect.forEach(waiting, (next) => send(stamp(next, b)), { discard: true })
  })

/**
 * Opens a destination on its buffered stream: the restored one (probed by its first append), or one
 * created now. Its stream's state joins `streams` before the destination reaches the owner.
 */
const open = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  restored: Map<string, Restored>,
  streams: Streams
): Mode["open"] =>
(destination, now, shared) => {
  const key = destination.toString()
  const connectTo = connect(client, settings, destination, restored.get(key), shared.backlog)
  let buffered: BufferedStream | undefined
  // A restored stream is adopted once: the destination's state moves on from its offset, so a
  // reopen after an eviction must not probe it again (and the entry must not outlive it).
  const slotOf = (schema: TableSchema.TableSchema) =>
    Effect.map(connectTo(schema), (connected) => {
      restored.delete(key)
      buffered = connected.buffered
      return connected.slot
    })
  return Effect.tap(Destination.openWith(settings, destination, now, shared, slotOf), (d) =>
    Effect.sync(() => {
      if (buffered !== undefined) streams.set(d, buffered)
    }))
}

/**
 * The mode; `restored` holds the streams a checkpoint restored, by destination key (taken when a
 * destination opens, after the restore); `streams`, each open destination's buffered stream.
 *
 * @internal
 */
export const make = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  restored: Map<string, Restored>,
  streams: Streams
): Mode => ({
  open: open(client, settings, restored, streams),
  send: (request, send) =>
    Effect.suspend(() => {
      const b = bufferedOf(streams, request.d)
      // behind a probe in flight (it may move the stream and its offsets), the next ones wait
      if (b.queue.length > 0 || (b.probe && b.inFlight > 0)) {
        b.queue.push(request)
        return Effect.void
      }
      return send(stamp(request, b))
    }),
  call: (request) =>
    Effect.suspend(() => {
      const d = request.d
      const b = bufferedOf(streams, d)
      const probe = b.probe
      const { offset, after, end } = linkOf(request)
      const abandon = abandonRestored(client, settings, b, d, request.schema)
      const atOffset = { offset, probe, abandon, after }
      const append = PendingAppend.run(settings, d, request, PendingAppend.progressFor(request, atOffset), atOffset)
      // acknowledged: its rows must start where the append before it ended (a probe has none before it)
      const checked = Effect.flatMap(append, (step) =>
        probe || step._tag !== "done" ? Effect.succeed(step) : Effect.flatMap(
          after,
          (before) =>
            before === step.outcome.offset
              ? Effect.succeed(step)
              : Effect.fail(inconsistent(d.key, step.outcome.offset, before))
        ))
      // its end is known once its last call is over: done, or failed (a reconnect or a repair calls again)
      return Effect.onExit(checked, (exit) =>
        Exit.isFailure(exit)
          ? Deferred.failCause(end, exit.cause)
          : exit.value._tag === "done"
          ? Deferred.succeed(end, exit.value.outcome.offset + exit.value.outcome.written)
          : Effect.void)
    }),
  answered: answered(streams),
  evictable: (d) => {
    const b = streams.get(d)
    return b === undefined || (b.inFlight === 0 && b.queue.length === 0 && isClean(b))
  }
})
