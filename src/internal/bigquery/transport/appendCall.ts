/**
 * The AppendRows bidi call of one `Connection` on either transport (ADR 0043): grpc-js, or our own
 * HTTP/2 data path (`wire/http2/`). Both send one buffer per request framed in the batch buffer's
 * headroom (`appendRequest.ts`; on HTTP/2 with gRPC's 5-byte prefix in front, so grpc-js's copy of
 * each request to prepend it is gone) and report to the connection the same events, with the same
 * status codes for the same faults (`wire/http2/callStatus.ts`).
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as Effect from "effect/Effect"
import type { Http2Channel } from "../../wire/http2/channel.ts"
import * as AppendRequest from "./appendRequest.ts"

/** The gRPC method path. @internal */
export const appendRowsPath = "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"

/**
 * The routing header's value, percent-encoded as Google's clients encode it (gax's `routingHeader`):
 * grpc-js refuses a metadata value outside printable ASCII, and a table id may be Unicode.
 *
 * @internal
 */
export const routingParams = (key: string, value: string): string => `${key}=${encodeURIComponent(value)}`

/** What a call reports to its connection, each from a listener, synchronously. @internal */
export interface AppendEvents {
  /** One `AppendRowsResponse`'s bytes (valid during the call only). */
  readonly response: (bytes: Uint8Array) => void
  /** The call ended with a non-`OK` status: a grpc-js `ServiceError` or our `CallError` (same shape). */
  readonly failed: (error: unknown) => void
  /** The server ended the call `OK`: no more answers will come. */
  readonly ended: () => void
  /** The call is over, however it ended (after `failed` or `ended`); may be reported more than once. */
  readonly closed: () => void
}

/** @internal */
export interface AppendCall {
  /** Frames and sends one request (`body` after `header`); `taken` once the transport has it for the wire. */
  readonly send: (header: AppendRequest.Header, body: Uint8Array, taken: () => void) => void
  /** Half-closes: the service still answers what was sent. */
  readonly end: () => void
  readonly cancel: () => void
}

const toBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
const identity = (bytes: Buffer): Buffer => bytes

/**
 * The call on a grpc-js channel: `makeBidiStreamRequest` with identity serializers (grpc-js frames
 * each request into a new buffer).
 *
 * @internal
 */
export const overGrpc = (channel: grpc.Client, writeStream: string, events: AppendEvents): AppendCall => {
  const metadata = new grpc.Metadata()
  metadata.set("x-goog-request-params", routingParams("write_stream", writeStream))
  const call = channel.makeBidiStreamRequest<Uint8Array, Buffer>(appendRowsPath, toBuffer, identity, metadata)
  call.on("data", events.response)
  call.on("error", events.failed)
  call.on("end", events.ended)
  call.on("status", events.closed)
  call.on("error", events.closed)
  return {
    send: (header, body, taken) => call.write(AppendRequest.encodeBody(header, body), taken),
    end: () => call.end(),
    cancel: () => call.cancel()
  }
}

/**
 * The call on one of our HTTP/2 channels: each request is framed with its gRPC prefix in the batch
 * buffer's headroom and written once. A call that cannot start (no connection, no credentials)
 * reports its failure at once.
 *
 * @internal
 */
export const overHttp2 = (
  channel: Http2Channel,
  writeStream: string,
  events: AppendEvents
): Effect.Effect<AppendCall> =>
  Effect.map(
    channel.call(appendRowsPath, { "x-goog-request-params": routingParams("write_stream", writeStream) }, undefined, {
      onMessage: events.response,
      onEnd: (error) => {
        if (error === undefined) events.ended()
        else events.failed(error)
        events.closed()
      }
    }),
    (call): AppendCall => ({
      send: (header, body, taken) => call.write(AppendRequest.encodeFramed(header, body), taken),
      end: call.end,
      cancel: call.cancel
    })
  )
