/**
 * The Bigtable data calls on our HTTP/2 data path (ADR 0043): the request encoded after 5 free bytes
 * and framed there with gRPC's prefix, so it is one buffer written once (grpc-js copies it into a
 * new one to prepend the prefix), with the routing header and `grpc-timeout`. A call cancelled at
 * its deadline abandons the channel's connection (it may be black-holed): later calls go on a new
 * one, as `channel.ts` renews a grpc-js channel.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Http2Channel } from "../../wire/http2/channel.ts"
import { prefixLength, writePrefix } from "../../wire/http2/messageFrame.ts"
import type { StartCall } from "./dataCall.ts"

/** Calls on `channel`; the caller keeps each call's deadline timer (`localDeadline`). @internal */
export const overHttp2 = (channel: Http2Channel): StartCall => Object.assign(start(channel), { localDeadline: true })

const start = (channel: Http2Channel): StartCall => (method, encode, routing, timeout, listener) =>
  Effect.map(
    channel.call(method, { "x-goog-request-params": routing }, timeout, {
      onMessage: listener.onMessage,
      onEnd: listener.onEnd
    }),
    (call) => {
      const framed = encode(prefixLength)
      writePrefix(framed, 0, framed.length - prefixLength)
      call.writeLast(framed)
      return (reason) => {
        call.cancel()
        if (reason === "deadline") channel.abandon()
      }
    }
  )
