/**
 * The Bigtable data calls on our HTTP/2 data path (ADR 0043): the request encoded after 5 free bytes
 * and framed there with gRPC's prefix, so it is one buffer written once (grpc-js copies it into a
 * new one to prepend the prefix), with the routing header and `grpc-timeout`. A call cancelled at
 * its deadline abandons the channel's connection (it may be black-holed): later calls go on a new
 * one, as `channel.ts` renews a grpc-js channel.
 *
 * A call on a connection that is up, with credentials cached, starts at once (`startNow`) and its
 * deadline is kept by the transport's {@link DeadlineKeeper} (one fiber for all calls); a call that
 * must wait for a connection or credentials goes through the effect, and `client.ts` keeps its
 * deadline with a timer of its own, which also ends the wait.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as DeadlineKeeper from "../../wire/deadlineKeeper.ts"
import type { Call } from "../../wire/http2/call.ts"
import type { Http2Channel } from "../../wire/http2/channel.ts"
import { prefixLength, writePrefix } from "../../wire/http2/messageFrame.ts"
import type { CallListener, Cancel, StartCall, StartNow } from "./dataCall.ts"

/**
 * Calls on `channel`; the caller keeps each call's deadline (`local`), on the keeper made here (on
 * this fiber's clock, running in the scope) for the calls started at once.
 *
 * @internal
 */
export const overHttp2 = (channel: Http2Channel): Effect.Effect<StartCall, never, Scope.Scope> =>
  Effect.map(
    DeadlineKeeper.make,
    (deadlines) => Object.assign(start(channel), { local: { deadlines, startNow: startNow(channel) } })
  )

/**
 * The request framed in one buffer (encoded after the 5 bytes of gRPC's prefix), or, when encoding
 * throws, nothing: the call then ends through its listener with what was thrown, before any stream
 * is opened (none is left half-open).
 */
const framedOrEnd = (encode: (reserve: number) => Buffer, listener: CallListener): Buffer | undefined => {
  try {
    const framed = encode(prefixLength)
    writePrefix(framed, 0, framed.length - prefixLength)
    return framed
  } catch (cause) {
    listener.onEnd(cause)
    return undefined
  }
}

/** The cancel of a call that never started. */
const nothingToCancel: Cancel = () => {}

/** Writes the framed request as the call's one message; the call's cancel. */
const send = (channel: Http2Channel, call: Call, framed: Buffer): Cancel => {
  call.writeLast(framed)
  return (reason) => {
    call.cancel()
    if (reason === "deadline") channel.abandon()
  }
}

const start = (channel: Http2Channel): StartCall => (method, encode, routing, timeout, listener) =>
  Effect.suspend(() => {
    const framed = framedOrEnd(encode, listener)
    if (framed === undefined) return Effect.succeed(nothingToCancel)
    return Effect.map(
      channel.call(method, { "x-goog-request-params": routing }, timeout, listener),
      (call) => send(channel, call, framed)
    )
  })

// `encode` is called here and again if the call then waits (`start`): `client.ts` encodes a request once
const startNow = (channel: Http2Channel): StartNow => (method, encode, routing, timeout, listener, now) => {
  const framed = framedOrEnd(encode, listener)
  if (framed === undefined) return nothingToCancel
  const call = channel.callNow(method, { "x-goog-request-params": routing }, timeout, listener, now)
  return call === undefined ? undefined : send(channel, call, framed)
}
