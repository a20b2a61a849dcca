/**
 * One `AppendRows` bidi stream on the `_default` stream of one table (cf. Go's `connection.go`),
 * driven through `@grpc/grpc-js` with hand-framed request bytes (ADR 0007).
 *
 * **Details**
 *
 * - `write_stream` goes on every request (bqemulator resolves it on each, BigQuery accepts it on
 *   each), framed into the body's headroom. The connection's descriptor is fixed: `writer_schema` and
 *   `trace_id` go on its first request only; a schema change opens a new connection.
 * - Responses arrive in request order, so each append's `Deferred` waits in a FIFO. Appending
 *   (enqueue + write) and the stream's listeners are synchronous blocks on the one JS thread, so the
 *   FIFO has one writer at a time; the listeners only complete `Deferred`s, forwarding every
 *   response and every `'error'` into the fibers awaiting them.
 * - A stream error fails every waiting append with the status and the `StorageError` of the
 *   trailers; the connection is then broken and the destination opens a new one.
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as deadline from "../../wire/deadline.ts"
import { Code, fromError } from "../../wire/grpcStatus.ts"
import * as AppendCall from "./appendCall.ts"
import * as AppendChannels from "./appendChannels.ts"
import * as AppendRequest from "./appendRequest.ts"
import { type AppendAnswer, decodeAnswer as decodeAppendAnswer, storageCodeOfMetadata } from "./rowErrors.ts"
import type { SendBacklog } from "./sendBacklog.ts"
import * as sendBacklog from "./sendBacklog.ts"
import {
  make as makeWaiting,
  type StreamFailure,
  streamFailure,
  type Waiter,
  type WaitingAppends
} from "./waitingAppends.ts"
import { encodeGetWriteStreamRequest } from "./writeProto.ts"

export { appendRowsPath, routingParams } from "./appendCall.ts"
export { type StreamFailure, streamFailure, type Waiter } from "./waitingAppends.ts"

/** @internal */
export interface Connection {
  readonly id: number
  /** The encoded `DescriptorProto` every row on this connection was encoded with. */
  readonly descriptor: Uint8Array
  /**
   * Sends one request with a `ProtoRows` body (a sealed batch buffer from `Split.seal`, or
   * `AppendRequest.encodeRows` for re-appended survivors; either keeps `AppendRequest.headroom`
   * free bytes before it) now; `answer` takes its response, or the failure, once: at once (before
   * this returns) when the connection is already broken.
   */
  readonly appendNow: (body: Uint8Array, offset: number | undefined, answer: Waiter) => void
  /** True once the stream failed or was closed: open a new one. */
  readonly isBroken: () => boolean
  /** Appends awaiting a response. */
  readonly pending: () => number
  /**
   * Cancels the stream: every waiting append fails with `CANCELLED` (used by the watchdog), and the
   * channel under it is abandoned (appendChannels.ts), so the next connection opens a new HTTP/2
   * connection instead of re-sending into the same silent one. Once: later calls do nothing.
   */
  readonly abort: (reason: string) => Effect.Effect<void>
  /**
   * Completes once the stream's call has ended (its status came), however it ended. An aborted
   * append waits for it before its request leaves `maxInFlightRequests`: a cancellation takes
   * effect a turn later, and until then the request is still on the wire.
   */
  readonly ended: Effect.Effect<void>
  /** Half-closes the stream; the service still answers what was sent. */
  readonly close: Effect.Effect<void>
}

const toBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
const identity = (bytes: Buffer): Buffer => bytes

let nextId = 0

const decodeAnswer = (bytes: Uint8Array): Result.Result<AppendAnswer, StreamFailure> => {
  try {
    return Result.succeed(decodeAppendAnswer(bytes))
  } catch (cause) {
    return Result.fail(streamFailure(undefined, "malformed AppendRowsResponse", cause))
  }
}

const trailersOf = (error: unknown): grpc.Metadata | undefined =>
  typeof error === "object" && error !== null && "metadata" in error && error.metadata instanceof grpc.Metadata
    ? error.metadata
    : undefined

/**
 * The events of a call, forwarded to the appends waiting on it: each response to the oldest one, a
 * failure or the end to all of them; once the call is over its place on the channel is given back
 * and `onEnd` runs. `cancel` is the call's (set once it is started).
 */
const eventsOf = (
  waiting: WaitingAppends,
  lease: AppendChannels.Lease,
  cancel: () => void,
  onEnd: () => void
): AppendCall.AppendEvents => ({
  response: (bytes) => {
    const d = waiting.take()
    if (d === undefined) {
      waiting.failAll(streamFailure(undefined, "a response arrived with no append waiting for it", undefined))
      cancel()
      return
    }
    d(decodeAnswer(bytes))
  },
  failed: (error) => {
    const status = fromError(error)
    waiting.failAll(streamFailure(status.code, status.message, error, storageCodeOfMetadata(trailersOf(error))))
  },
  ended: () => waiting.failAll(streamFailure(Code.UNAVAILABLE, "the AppendRows stream ended", undefined)),
  closed: () => {
    lease.release()
    onEnd()
  }
})

/**
 * Appends on a listening call: each request written with its header (the first carries the
 * descriptor, every one the stream's name) and its answer awaited in request order.
 */
const appender = (
  call: AppendCall.AppendCall,
  waiting: WaitingAppends,
  writes: ReturnType<typeof sendBacklog.forCall>,
  writeStream: string,
  descriptor: Uint8Array
): Connection["appendNow"] => {
  // encoded once: every request carries the name
  const streamName = AppendRequest.utf8(writeStream)
  const firstHeader: AppendRequest.Header = { writeStream: streamName, descriptor, traceId: AppendRequest.traceId }
  const laterHeader: AppendRequest.Header = { writeStream: streamName }
  let first = true
  return (body, offset, answer) => {
    const broken = waiting.broken()
    if (broken !== undefined) return answer(Result.fail(broken))
    const base = first ? firstHeader : laterHeader
    const header = offset === undefined ? base : { ...base, offset }
    first = false
    waiting.push(answer)
    writes.write(sendBacklog.weightOf(body.byteLength), (taken) => call.send(header, body, taken))
  }
}

/** The connection's operations over a listening call. */
const connectionOf = (
  call: AppendCall.AppendCall,
  waiting: WaitingAppends,
  lease: AppendChannels.Lease,
  writes: ReturnType<typeof sendBacklog.forCall>,
  writeStream: string,
  descriptor: Uint8Array,
  ended: Deferred.Deferred<void>
): Connection => {
  const appendNow = appender(call, waiting, writes, writeStream, descriptor)
  let aborted = false
  return {
    id: nextId++,
    descriptor,
    appendNow,
    isBroken: () => waiting.broken() !== undefined,
    pending: waiting.size,
    ended: Deferred.await(ended),
    abort: (reason) =>
      Effect.suspend(() => {
        // once: several appends' watchdogs may fire on one connection
        if (aborted) return Effect.void
        aborted = true
        waiting.failAll(streamFailure(Code.CANCELLED, reason, undefined))
        call.cancel()
        writes.end()
        // no answer may mean a black-holed connection: the next stream goes on another one
        lease.abandon()
        return Effect.logWarning(
          `AppendRows on ${writeStream}: ${reason}; stream cancelled, its connection abandoned, appends re-sent`
        ).pipe(Effect.annotateLogs({ method: "AppendRows", target: writeStream }))
      }),
    close: Effect.sync(() => {
      waiting.markBroken(streamFailure(Code.CANCELLED, "connection closed", undefined))
      call.end()
    })
  }
}

/**
 * Opens a connection on `writeStream` (`projects/p/datasets/d/tables/t/streams/_default`) over the
 * lease's channel, on its transport. Opening sends nothing; the first append carries the
 * descriptor. Each request counts in the writer's `backlog` until the transport has taken it for
 * the wire. On our HTTP/2 transport the call starts here (connecting first when the channel has no
 * connection); one that cannot start gives a connection already broken with the failure, which its
 * first append reports.
 *
 * @internal
 */
export const open = (
  lease: AppendChannels.Lease,
  writeStream: string,
  descriptor: Uint8Array,
  backlog: SendBacklog
): Effect.Effect<Connection> =>
  Effect.suspend(() => {
    const waiting = makeWaiting()
    const writes = sendBacklog.forCall(backlog)
    const ended = Deferred.makeUnsafe<void>()
    let call: AppendCall.AppendCall | undefined
    const events = eventsOf(waiting, lease, () => call?.cancel(), () => {
      writes.end()
      Deferred.doneUnsafe(ended, Exit.void)
    })
    const started = lease.transport === "http2"
      ? AppendCall.overHttp2(lease.channel, writeStream, events)
      : Effect.sync(() => AppendCall.overGrpc(lease.channel, writeStream, events))
    return Effect.map(started, (c) => {
      call = c
      return connectionOf(c, waiting, lease, writes, writeStream, descriptor, ended)
    })
  })

/** The gRPC method path of `GetWriteStream`. @internal */
export const getWriteStreamPath = "/google.cloud.bigquery.storage.v1.BigQueryWrite/GetWriteStream"

/**
 * One unary `BigQueryWrite` call (`GetWriteStream`, `CreateWriteStream`, `FlushRows`) on the client's
 * unary channel (`AppendChannels.unary`), with the routing header `routing` and a deadline (`timeout`,
 * else the fiber's `AdminTimeout`): a server that never answers, or an endpoint that never speaks
 * HTTP/2, fails it `DEADLINE_EXCEEDED` (logged), and its channel is abandoned so the caller's retry
 * opens a new connection. Fails with the call's status; interruption cancels it.
 *
 * @internal
 */
export const unary = (
  write: grpc.Client,
  call: {
    readonly method: string
    readonly path: string
    readonly request: Uint8Array
    readonly routing: string
    readonly target: string
  },
  timeout?: Duration.Duration
): Effect.Effect<Buffer, StreamFailure> =>
  Effect.flatMap(deadline.adminTimeout(timeout), (limit) =>
    Effect.callback<Buffer, StreamFailure>((resume) => {
      const channels = AppendChannels.of(write)
      const channel = channels.unary()
      const metadata = new grpc.Metadata()
      metadata.set("x-goog-request-params", call.routing)
      const pending = channel.makeUnaryRequest<Uint8Array, Buffer>(
        call.path,
        toBuffer,
        identity,
        call.request,
        metadata,
        { deadline: deadline.grpcDeadline(limit) },
        (error, response) => {
          if (error === null || error === undefined) return resume(Effect.succeed(response ?? Buffer.alloc(0)))
          const status = fromError(error)
          const failure = Effect.fail(
            streamFailure(status.code, status.message, error, storageCodeOfMetadata(error.metadata))
          )
          if (status.code !== Code.DEADLINE_EXCEEDED) return resume(failure)
          // unanswered: the connection may be black-holed, the next attempt goes on another one
          channels.abandon(channel)
          resume(Effect.andThen(deadline.logExceeded(call.method, call.target, limit), failure))
        }
      )
      return Effect.sync(() => pending.cancel())
    }))

/**
 * `GetWriteStream` on `name` (view BASIC): proves the table exists before the first append, the
 * way the Java writer primes `_default`; a {@link unary} call.
 *
 * @internal
 */
export const getWriteStream = (
  write: grpc.Client,
  name: string,
  timeout?: Duration.Duration
): Effect.Effect<void, StreamFailure> =>
  Effect.asVoid(unary(write, {
    method: "GetWriteStream",
    path: getWriteStreamPath,
    request: encodeGetWriteStreamRequest(name, 1), // view BASIC
    routing: AppendCall.routingParams("name", name),
    target: name
  }, timeout))
