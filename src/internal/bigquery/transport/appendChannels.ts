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
import type { Http2Channel } from "../../wire/http2/channel.ts"

/**
 * A stream's place on a channel; `release` gives it back (once, however often it is called). The
 * channel is a grpc-js client, or one of our HTTP/2 transport (`transport` says which).
 *
 * @internal
 */
export type Lease = GrpcLease | Http2Lease

/** @internal */
export interface LeaseOf<C> {
  readonly channel: C
  readonly release: () => void
  /**
   * The stream went unanswered past its deadline: the connection under it may be black-holed
   * (packets dropped, nothing reset), so every later stream on it would hang as well. See
   * {@link AppendChannels.abandon}.
   */
  readonly abandon: () => void
}

/** @internal */
export interface GrpcLease extends LeaseOf<grpc.Client> {
  readonly transport: "grpc-js"
}

/** @internal */
export interface Http2Lease extends LeaseOf<Http2Channel> {
  readonly transport: "http2"
}

/** @internal */
export interface AppendChannels {
  readonly lease: () => Lease
  /**
   * The channel unary calls (`GetWriteStream`) go on: the first one not abandoned, a new one when
   * every channel was abandoned. Unary calls always go on grpc-js.
   */
  readonly unary: () => grpc.Client
  /**
   * Stops placing unary calls (and, on grpc-js, streams) on `channel`, whose connection stopped
   * answering: the next lease goes to another channel, one of its own HTTP/2 connection (a new TCP
   * connection), so a re-send is not swallowed by the same black hole until keepalive notices
   * (~40 s). An opened channel is closed once its last stream ended; the client's own channel is
   * only left alone. A caller's own channel (no opener) cannot be replaced: nothing changes.
   */
  readonly abandon: (channel: grpc.Client) => void
  /** Closes the channels opened here (not the client's own). */
  readonly close: () => void
  /** Open streams per channel, the client's first (for tests and metrics). */
  readonly load: () => ReadonlyArray<number>
}

interface Slot<C> {
  readonly channel: C
  streams: number
  abandoned: boolean
}

/** Streams per channel by default: Google's front ends allow 100, less a margin for unary calls. @internal */
export const defaultStreamsPerChannel = 90

/**
 * Places for streams on channels of type `C`: `first` (the client's own, never closed here; none
 * for our HTTP/2 transport, whose channels are all opened here), more from `open` when every
 * channel is full, each closed with `close` once abandoned and idle.
 */
const budget = <C>(
  first: C | undefined,
  open: (() => C) | undefined,
  close: (channel: C) => void,
  streamsPerChannel: number
) => {
  const slots: Array<Slot<C>> = first === undefined ? [] : [{ channel: first, streams: 0, abandoned: false }]
  const opened = (): Slot<C> | undefined => {
    if (open === undefined) return undefined
    const slot: Slot<C> = { channel: open(), streams: 0, abandoned: false }
    slots.push(slot)
    return slot
  }
  /** Closes an abandoned opened channel once nothing runs on it. */
  const collect = (slot: Slot<C>): void => {
    if (!slot.abandoned || slot.streams > 0 || slot.channel === first) return
    const at = slots.indexOf(slot)
    if (at >= 0) slots.splice(at, 1)
    close(slot.channel)
  }
  const abandon = (channel: C): void => {
    if (open === undefined) return
    const slot = slots.find((s) => s.channel === channel && !s.abandoned)
    if (slot === undefined) return
    slot.abandoned = true
    collect(slot)
  }
  /** The first channel not abandoned, a new one, else the first (a caller's own channel). */
  const usable = (): Slot<C> => {
    const found = slots.find((s) => !s.abandoned) ?? opened() ?? slots[0]
    if (found === undefined) throw new Error("a stream budget without a channel or an opener")
    return found
  }
  const lease = (): LeaseOf<C> => {
    const held = slots.find((s) => !s.abandoned && s.streams < streamsPerChannel) ?? opened() ?? usable()
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
    usable: () => usable().channel,
    abandon,
    close: () => {
      for (const s of slots) if (s.channel !== first) close(s.channel)
      slots.length = first === undefined ? 0 : 1
    },
    load: () => slots.map((s) => s.streams)
  }
}

const closeGrpc = (channel: grpc.Client): void => channel.close()

/**
 * The budget of a client whose streams go on grpc-js: `first` (the client's own channel), more
 * from `open` (each of its own connection); `undefined` when the channel is the caller's own.
 *
 * @internal
 */
export const make = (
  first: grpc.Client,
  open: (() => grpc.Client) | undefined,
  streamsPerChannel: number
): AppendChannels => {
  const grpcBudget = budget(first, open, closeGrpc, streamsPerChannel)
  return {
    lease: () => ({ transport: "grpc-js", ...grpcBudget.lease() }),
    unary: grpcBudget.usable,
    abandon: grpcBudget.abandon,
    close: grpcBudget.close,
    load: grpcBudget.load
  }
}

/**
 * The budget of a client whose streams go on our HTTP/2 transport (channels from `open`, each its
 * own connection) while its unary calls stay on grpc-js (`unary`: the client's channel, more from
 * `openUnary` after one is abandoned).
 *
 * @internal
 */
export const makeHttp2 = (
  unary: grpc.Client,
  openUnary: () => grpc.Client,
  open: () => Http2Channel,
  streamsPerChannel: number
): AppendChannels => {
  const unaryBudget = budget(unary, openUnary, closeGrpc, streamsPerChannel)
  const streams = budget<Http2Channel>(undefined, open, (channel) => channel.close(), streamsPerChannel)
  return {
    lease: () => ({ transport: "http2", ...streams.lease() }),
    unary: unaryBudget.usable,
    abandon: unaryBudget.abandon,
    close: () => {
      streams.close()
      unaryBudget.close()
    },
    load: streams.load
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
