/**
 * The one call shape of the Bigtable data calls (MutateRows, CheckAndMutateRow): a single request
 * message of wire bytes, response messages of wire bytes, then one end. `client.ts` writes both
 * calls against {@link StartCall}, which each transport implements (ADR 0043): our HTTP/2 data path
 * (`http2Call.ts`, the default of `BigtableClient.make`), straight on a grpc-js channel
 * (`directCall.ts`, ADR 0027), and {@link overClient over a `DataClient`}'s `makeServerStreamRequest`
 * for the clients a caller hands to `BigtableClient.fromClients` (a grpc-js `Client` with its
 * interceptors, or an in-process fake).
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { DataClient } from "../../../Bigtable/BigtableClient.ts"
import * as deadline from "../../wire/deadline.ts"
import type { DeadlineKeeper } from "../../wire/deadlineKeeper.ts"

/**
 * What a started call reports: each response message in order (valid during the call only), then
 * its end exactly once: `undefined` when it ended `OK`, else the error (shaped as grpc-js's
 * `ServiceError`: `code`, `details`, `metadata`). Nothing is reported after a cancel.
 *
 * @internal
 */
export interface CallListener {
  readonly onMessage: (response: Uint8Array) => void
  readonly onEnd: (error: unknown) => void
}

/**
 * Ends a started call: `"deadline"` when it went unanswered past its deadline (the transport may
 * move later calls to a new connection: this one may be black-holed), `"interrupted"` otherwise.
 *
 * @internal
 */
export type Cancel = (reason: "deadline" | "interrupted") => void

/**
 * Starts one call on `method` with the single message `encode(reserve)` (wire bytes after `reserve`
 * free bytes the transport frames in), the routing header `routing` and the deadline `timeout`. A
 * call that cannot start ends through `listener.onEnd`; so does one whose `encode` throws, with what
 * was thrown: the request is encoded before the call opens, so no call is left half-open.
 *
 * grpc-js keeps the deadline itself (its own timer on the wall clock, ending the call
 * `DEADLINE_EXCEEDED`); a transport that only sends it to the server (`grpc-timeout`) says so with
 * `local`, and the caller keeps the timer (`client.ts`): on the transport's deadline keeper (the
 * clock of the fiber that built the transport) for a call started at once, else on the fiber's clock.
 *
 * @internal
 */
export type StartCall =
  & ((...call: Parameters<SyncStart>) => Effect.Effect<Cancel>)
  & { readonly local?: LocalDeadline | undefined; readonly sync?: SyncStart | undefined }

/**
 * The synchronous start of a transport whose every call starts at once and keeps its own deadline
 * (grpc-js: `StartCall.sync`); a call that cannot start ends through the listener.
 *
 * @internal
 */
export type SyncStart = (
  method: string,
  encode: (reserve: number) => Buffer,
  routing: string,
  timeout: Duration.Duration,
  listener: CallListener
) => Cancel

/**
 * What a transport that keeps no deadline of its own gives the caller: the keeper of the deadlines of
 * the calls it starts at once, and that start (`now` in epoch milliseconds, as
 * `Clock.currentTimeMillis`), which returns `undefined` when the call must wait for a connection or
 * credentials (then the effect starts it).
 *
 * @internal
 */
export interface LocalDeadline {
  readonly deadlines: DeadlineKeeper
  readonly startNow: StartNow
}

/** The synchronous start of a call (`LocalDeadline.startNow`). @internal */
export type StartNow = (
  method: string,
  encode: (reserve: number) => Buffer,
  routing: string,
  timeout: Duration.Duration,
  listener: CallListener,
  now: number
) => Cancel | undefined

/** The `encode` of a message already encoded: `bytes` after the free bytes. @internal */
export const encoded = (bytes: Uint8Array) => (reserve: number): Buffer => {
  const framed = Buffer.allocUnsafe(reserve + bytes.length)
  framed.set(bytes, reserve)
  return framed
}

/** The metadata of a grpc-js call: the routing header. @internal */
export const metadataOf = (routing: string): grpc.Metadata => {
  const metadata = new grpc.Metadata()
  metadata.set("x-goog-request-params", routing)
  return metadata
}

/**
 * The calls of a transport that starts them synchronously (grpc-js), as a `StartCall` with its `sync`
 * start; one whose start throws (a closed channel) ends through the listener.
 *
 * @internal
 */
export const synchronous = (start: SyncStart): StartCall => {
  const sync: SyncStart = (method, encode, routing, timeout, listener) => {
    try {
      return start(method, encode, routing, timeout, listener)
    } catch (cause) {
      listener.onEnd(cause)
      return () => {}
    }
  }
  return Object.assign((...call: Parameters<SyncStart>) => Effect.sync(() => sync(...call)), { sync })
}

const identity = (bytes: Buffer): Buffer => bytes

/**
 * The calls of a `DataClient` (`fromClients`): one `makeServerStreamRequest` with identity
 * serializers, its `data` events as messages, its first `error` or `end` as the end. The `error`
 * listener stays attached after the end: a cancelled call still emits `error` (CANCELLED), which
 * must not become an unhandled error event.
 *
 * @internal
 */
export const overClient = (raw: DataClient): StartCall =>
  synchronous((method, encode, routing, timeout, listener) => {
    const call = raw.makeServerStreamRequest(method, identity, identity, encode(0), metadataOf(routing), {
      deadline: deadline.grpcDeadline(timeout)
    })
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
  })
