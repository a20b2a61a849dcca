/**
 * The channel the data calls (MutateRows, CheckAndMutateRow) travel on (ADR 0010, 0027): see
 * `wire/grpcChannel.ts`; production goes to `bigtable.googleapis.com:443`.
 *
 * A call that went past its deadline may sit on a black-holed connection (packets dropped, nothing
 * reset): every re-send on it would be swallowed too until keepalive notices (~40 s). The data
 * client therefore {@link renewing renews} its channel after such a call: later calls go on a new
 * channel with an HTTP/2 connection of its own.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import * as Effect from "effect/Effect"
import type { EmulatorEndpoint } from "../../../Sink/EmulatorEndpoint.ts"
import * as shared from "../../wire/grpcChannel.ts"
import { Code, fromError } from "../../wire/grpcStatus.ts"
import type { Cancel, StartCall } from "./dataCall.ts"
import { onChannel } from "./directCall.ts"

/** The production Bigtable data endpoint. @internal */
export const dataTarget = "bigtable.googleapis.com:443"

/** @internal */
export type HeaderSource = shared.HeaderSource

const data = shared.serviceChannels(dataTarget, "Bigtable")

/** The production channel (TLS plus call credentials); `separate`: on an HTTP/2 connection of its own. @internal */
export const productionChannel: (auth: HeaderSource, separate?: boolean) => grpc.Client = data.production

/** A plaintext channel without credentials to an emulator; `separate`: on an HTTP/2 connection of its own. @internal */
export const emulatorChannel: (endpoint: EmulatorEndpoint, separate?: boolean) => grpc.Client = data.emulator

/**
 * Data calls straight on the channel of `first` (`directCall.ts`, ADR 0027) that move to a new
 * channel (`open()`, which must give a channel of its own connection) once a call on the current one
 * went past its deadline (grpc-js ended it `DEADLINE_EXCEEDED`, or the caller's timer cancelled it);
 * the abandoned channel is closed (its other calls end by their own deadlines). `close` closes the
 * channel in use.
 *
 * @internal
 */
export const renewing = (
  first: grpc.Client,
  open: () => grpc.Client
): { readonly start: StartCall; readonly close: () => void; readonly renewals: () => number } => {
  let current = first
  let start = onChannel(first.getChannel())
  let renewals = 0
  const renew = (from: grpc.Client): void => {
    if (current !== from) return // already renewed by another call of the same channel
    current = open()
    start = onChannel(current.getChannel())
    renewals++
    from.close()
  }
  return {
    start: (method, encode, routing, timeout, listener) => {
      const client = current
      return Effect.map(
        start(method, encode, routing, timeout, {
          onMessage: listener.onMessage,
          onEnd: (error) => {
            if (error !== undefined && fromError(error).code === Code.DEADLINE_EXCEEDED) renew(client)
            listener.onEnd(error)
          }
        }),
        (cancel): Cancel => (reason) => {
          cancel(reason)
          if (reason === "deadline") renew(client)
        }
      )
    },
    close: () => current.close(),
    renewals: () => renewals
  }
}
