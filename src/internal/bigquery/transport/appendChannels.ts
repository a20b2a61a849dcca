/**
 * The AppendRows stream budget of one `BigQueryClient`: every destination keeps one bidi stream
 * open, and an HTTP/2 connection carries at most the server's `MAX_CONCURRENT_STREAMS` (100 at
 * Google's front ends). A stream past that limit is queued by HTTP/2 and never starts while the
 * others stay open, so a writer with more live destinations than that would hang (the Node
 * managedwriter's #423). Streams are therefore spread over channels of their own HTTP/2
 * connection, each carrying at most `streamsPerChannel` of them; more channels open on demand.
 *
 * **Details**
 *
 * - The client's own channel is the first one (it also carries the unary calls, hence the margin
 *   below 100 in the default). Channels opened here use a local subchannel pool, so grpc-js gives
 *   each its own connection instead of sharing one.
 * - A client built from the caller's channel (`fromClients`) cannot open more: its streams all go
 *   to that channel, as before.
 * - A channel whose stream went unanswered past `responseTimeout` (or whose unary call went past
 *   `adminTimeout`) is abandoned: later streams and unary calls go to a channel of a new connection.
 * - The budget is found by the client's `write` channel, so every writer on one client shares it.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"

/** A stream's place on a channel; `release` gives it back (once, however often it is called). @internal */
export interface Lease {
  readonly channel: grpc.Client
  readonly release: () => void
  /**
   * The stream went unanswered past its deadline: the connection under it may be black-holed
   * (packets dropped, nothing reset), so every later stream on it would hang as well. See
   * {@link AppendChannels.abandon}.
   */
  readonly abandon: () => void
}

/** @internal */
export interface AppendChannels {
  readonly lease: () => Lease
  /**
   * The channel unary calls (`GetWriteStream`) go on: the first one not abandoned, a new one when
   * every channel was abandoned.
   */
  readonly unary: () => grpc.Client
  /**
   * Stops placing streams (and unary calls) on `channel`, whose connection stopped answering: the
   * next lease goes to another channel, one of its own HTTP/2 connection (a new TCP connection), so
   * a re-send is not swallowed by the same black hole until keepalive notices (~40 s). An opened
   * channel is closed once its last stream ended; the client's own channel is only left alone. A
   * caller's own channel (no opener) cannot be replaced: nothing changes.
   */
  readonly abandon: (channel: grpc.Client) => void
  /** Closes the channels opened here (not the client's own). */
  readonly close: () => void
  /** Open streams per channel, the client's first (for tests and metrics). */
  readonly load: () => ReadonlyArray<number>
}

interface Slot {
  readonly channel: grpc.Client
  streams: number
  abandoned: boolean
}

/** Streams per channel by default: Google's front ends allow 100, less a margin for unary calls. @internal */
export const defaultStreamsPerChannel = 90

/** @internal */
export const make = (
  first: grpc.Client,
  open: (() => grpc.Client) | undefined,
  streamsPerChannel: number
): AppendChannels => {
  const firstSlot: Slot = { channel: first, streams: 0, abandoned: false }
  const slots: Array<Slot> = [firstSlot]
  const opened = (): Slot | undefined => {
    if (open === undefined) return undefined
    const slot: Slot = { channel: open(), streams: 0, abandoned: false }
    slots.push(slot)
    return slot
  }
  /** Closes an abandoned opened channel once nothing runs on it. */
  const collect = (slot: Slot): void => {
    if (!slot.abandoned || slot.streams > 0 || slot.channel === first) return
    const at = slots.indexOf(slot)
    if (at >= 0) slots.splice(at, 1)
    slot.channel.close()
  }
  const abandon = (channel: grpc.Client): void => {
    if (open === undefined) return
    const slot = slots.find((s) => s.channel === channel && !s.abandoned)
    if (slot === undefined) return
    slot.abandoned = true
    collect(slot)
  }
  const lease = (): Lease => {
    const held = slots.find((s) => !s.abandoned && s.streams < streamsPerChannel) ?? opened() ?? firstSlot
    held.streams++
    let released = false
    return {
      channel: held.channel,
      release: () => {
        if (released) return
        released = true
        held.streams--
        collect(held)
      },
      abandon: () => abandon(held.channel)
    }
  }
  return {
    lease,
    unary: () => (slots.find((s) => !s.abandoned) ?? opened() ?? firstSlot).channel,
    abandon,
    close: () => {
      for (const s of slots.slice(1)) s.channel.close()
      slots.length = 1
    },
    load: () => slots.map((s) => s.streams)
  }
}

const registry = new WeakMap<grpc.Client, AppendChannels>()

/** Registers the budget of a client's `write` channel (done by `BigQueryClient.make`). @internal */
export const register = (write: grpc.Client, channels: AppendChannels): void => {
  registry.set(write, channels)
}

/** The budget of a client's `write` channel; one without growth for a caller's own channel. @internal */
export const of = (write: grpc.Client): AppendChannels => {
  let found = registry.get(write)
  if (found === undefined) {
    found = make(write, undefined, defaultStreamsPerChannel)
    registry.set(write, found)
  }
  return found
}
