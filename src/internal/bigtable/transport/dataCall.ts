/**
 * The one call shape of the Bigtable data calls (MutateRows, CheckAndMutateRow): a single request
 * message of wire bytes, response messages of wire bytes, then one end. `client.ts` writes both
 * calls against {@link StartCall}; it is implemented straight on a grpc-js channel
 * (`directCall.ts`, ADR 0027) for the clients `BigtableClient.make` builds, and {@link overClient
 * over a `DataClient`}'s `makeServerStreamRequest` for the clients a caller hands to
 * `BigtableClient.fromClients` (a grpc-js `Client` with its interceptors, or an in-process fake).
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import type { DataClient } from "../../../Bigtable/BigtableClient.ts"

/**
 * What a started call reports: each response message in order, then its end exactly once:
 * `undefined` when it ended `OK`, else the error (a grpc-js `ServiceError`: `code`, `details`,
 * `metadata`). Nothing is reported after `cancel`.
 *
 * @internal
 */
export interface CallListener {
  readonly onMessage: (response: Buffer) => void
  readonly onEnd: (error: unknown) => void
}

/**
 * Starts one call on `method` with the single message `request` (wire bytes), `metadata` and the
 * absolute `deadline`; returns the call's cancel. Throws when the call cannot be created (a closed
 * channel).
 *
 * @internal
 */
export type StartCall = (
  method: string,
  request: Buffer,
  metadata: grpc.Metadata,
  deadline: grpc.Deadline,
  listener: CallListener
) => () => void

const identity = (bytes: Buffer): Buffer => bytes

/**
 * The calls of a `DataClient` (`fromClients`): one `makeServerStreamRequest` with identity
 * serializers, its `data` events as messages, its first `error` or `end` as the end. The `error`
 * listener stays attached after the end: a cancelled call still emits `error` (CANCELLED), which
 * must not become an unhandled error event.
 *
 * @internal
 */
export const overClient = (raw: DataClient): StartCall => (method, request, metadata, deadline, listener) => {
  const call = raw.makeServerStreamRequest(method, identity, identity, request, metadata, { deadline })
  let ended = false
  const detach = (): boolean => {
    if (ended) return false
    ended = true
    call.removeAllListeners("data")
    call.removeAllListeners("end")
    return true
  }
  call.on("data", (response) => {
    if (!ended) listener.onMessage(response)
  })
  call.on("error", (error) => {
    if (detach()) listener.onEnd(error)
  })
  call.on("end", () => {
    if (detach()) listener.onEnd(undefined)
  })
  return () => {
    detach()
    call.cancel()
  }
}
