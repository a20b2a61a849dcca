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
 * - The budget is found by the client's `write` channel, so every writer on one client shares it.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"

/** A stream's place on a channel; `release` gives it back (once, however often it is called). @internal */
export interface Lease {
  readonly channel: grpc.Client
  readonly release: () => void
}

/** @internal */
export interface AppendChannels {
  readonly lease: () => Lease
  /** Closes the channels opened here (not the client's own). */
  readonly close: () => void
  /** Open streams per channel, the client's first (for tests and metrics). */
  readonly load: () => ReadonlyArray<number>
}

interface Slot {
  readonly channel: grpc.Client
  streams: number
}

/** Streams per channel by default: Google's front ends allow 100, less a margin for unary calls. @internal */
export const defaultStreamsPerChannel = 90

/** @internal */
export const make = (
  first: grpc.Client,
  open: (() => grpc.Client) | undefined,
  streamsPerChannel: number
): AppendChannels => {
  const slots: Array<Slot> = [{ channel: first, streams: 0 }]
  const lease = (): Lease => {
    let slot = slots.find((s) => s.streams < streamsPerChannel)
    if (slot === undefined) {
      if (open === undefined) {
        slot = slots[0] as Slot
      } else {
        slot = { channel: open(), streams: 0 }
        slots.push(slot)
      }
    }
    const held = slot
    held.streams++
    let released = false
    return {
      channel: held.channel,
      release: () => {
        if (released) return
        released = true
        held.streams--
      }
    }
  }
  return {
    lease,
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
