/**
 * A Bigtable data call straight on a grpc-js channel (ADR 0027): `channel.createCall`, then
 * `start`, one message, `halfClose` and a read after each message, as grpc-js's own `Client` does
 * below its interceptors, without them: no interceptor chain, no `ClientReadableStream` (a Node
 * stream) and no event emitter per call.
 *
 * **Details**
 *
 * - Credentials: the channel's own. Call credentials composed into the channel credentials (the
 *   production channel, `wire/grpcChannel.ts`) are applied by grpc-js below `createCall`, to every
 *   call of the channel; only per-call credentials (`CallOptions.credentials`, which the sinks do
 *   not use) would need `setCredentials`.
 * - Status: an `OK` status ends the call with `undefined`; any other with an `Error` shaped as
 *   grpc-js's `ServiceError` (`code`, `details`, `metadata`, message `"14 UNAVAILABLE: details"`),
 *   so `grpcStatus.fromError` reads it as it reads the `Client`'s.
 * - Deadline: the channel ends the call `DEADLINE_EXCEEDED` past it, also when no connection came up.
 * - Cancel: `CANCELLED` on the channel; nothing is reported after it.
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as deadline from "../../wire/deadline.ts"
import { metadataOf, type StartCall, synchronous } from "./dataCall.ts"

/** The status a cancel ends the call with on the wire (as grpc-js's `Client` cancels). */
const cancelled = "Cancelled on client"

/** A grpc-js `ServiceError` from a non-OK status. @internal */
export const serviceError = (status: grpc.StatusObject): grpc.ServiceError =>
  Object.assign(new Error(`${status.code} ${grpc.status[status.code]}: ${status.details}`), {
    code: status.code,
    details: status.details,
    metadata: status.metadata
  })

const noMetadata = (): void => {}

/**
 * Calls on `channel` (a grpc-js `Client`'s `getChannel()`), with no parent call and the default
 * propagation flags.
 *
 * @internal
 */
export const onChannel = (channel: grpc.ChannelInterface): StartCall =>
  synchronous((method, encode, routing, timeout, listener) => {
    // encoded first: one that throws ends the call before it starts (no call is left half-open)
    const request = encode(0)
    const call = channel.createCall(method, deadline.grpcDeadline(timeout), undefined, null, undefined)
    let ended = false
    call.start(metadataOf(routing), {
      onReceiveMetadata: noMetadata,
      onReceiveMessage: (message: Buffer) => {
        if (ended) return
        listener.onMessage(message)
        // the next message is read only when asked for; the status waits for the messages before it
        if (!ended) call.startRead()
      },
      onReceiveStatus: (status) => {
        if (ended) return
        ended = true
        listener.onEnd(status.code === grpc.status.OK ? undefined : serviceError(status))
      }
    })
    call.sendMessageWithContext({}, request)
    call.halfClose()
    call.startRead()
    return () => {
      if (ended) return
      ended = true
      call.cancelWithStatus(grpc.status.CANCELLED, cancelled)
    }
  })
