/**
 * One gRPC call on an HTTP/2 stream of a {@link Session}: the driver edge of our transport, where
 * Node's stream events become a message callback and one end.
 *
 * **Details**
 *
 * - Sending: {@link Call.write} hands one framed message (`messageFrame.ts`: prefix and message in
 *   one buffer) to the stream; `taken` is called once Node has passed it on to HTTP/2 (or the call
 *   ended and it never will be), which is what the writers' send backlog counts. `write()`'s return
 *   value is not used: a message above the stream's 16 KiB high-water mark makes it `false`; the
 *   bound on what waits for the wire is the caller's backlog of untaken writes.
 * - Receiving: DATA chunks are reassembled into messages (`MessageReader`) and handed to
 *   `onMessage` synchronously, in order, each valid during the call only.
 * - The end, exactly once and never after {@link Call.cancel}: `undefined` for `OK`, else a
 *   `CallError` (`callStatus.ts`): from the trailers or a trailers-only response (read once the
 *   stream's data has all been delivered), else from how the stream closed. A message that is
 *   compressed or larger than `maxReceiveMessageLength` cancels the call (`INTERNAL` /
 *   `RESOURCE_EXHAUSTED`, or the mapped HTTP status when the response was not 200, as grpc-js does).
 * - The listeners stay attached until the stream has closed (Node may still emit `error` after a
 *   cancel), then they are removed.
 *
 * @internal
 */
import * as http2 from "node:http2"
import { Code } from "../grpcStatus.ts"
import { type CallError, callError } from "./callError.ts"
import { fromClose, fromHttpStatus, fromTrailers } from "./callStatus.ts"
import { MessageReader, type ReadFailure } from "./messageFrame.ts"
import type { Session } from "./session.ts"

/** What a started call reports. @internal */
export interface CallHandlers {
  readonly onMessage: (message: Uint8Array) => void
  readonly onEnd: (error: CallError | undefined) => void
}

/** @internal */
export interface Call {
  /** Sends one framed message; `taken` once HTTP/2 has it or the call ended. */
  readonly write: (framed: Uint8Array, taken?: () => void) => void
  /** Sends one framed message and half-closes in the same write (a unary or server-streaming request). */
  readonly writeLast: (framed: Uint8Array) => void
  /** Half-closes: the server still answers what was sent. */
  readonly end: () => void
  /** Resets the stream (`CANCEL`); nothing is reported after it. */
  readonly cancel: () => void
}

const noop = (): void => {}

const readFailure = (failure: ReadFailure, httpStatus: number | undefined): CallError =>
  httpStatus !== undefined && httpStatus !== 200
    ? fromHttpStatus(httpStatus)
    : failure._tag === "TooLarge"
    ? callError(Code.RESOURCE_EXHAUSTED, `Received message larger than max (${failure.length} vs. ${failure.max})`)
    : callError(Code.INTERNAL, "Received a compressed message, but no compression was negotiated")

/** Whether a call is over, and how it ends (once). */
interface Ending {
  ended: boolean
  /**
   * The caller's handlers until the call ends, then nothing. Node keeps a closed stream, and what its
   * listeners reach, alive past the call; a stream that reached the handlers would keep the request
   * behind them (a Bigtable request's entries) through collections until they are promoted.
   */
  handlers: CallHandlers | undefined
  readonly end: (error: CallError | undefined) => void
}

/** What a call's response has shown so far. */
interface Response {
  httpStatus: number | undefined
  status: CallError | undefined | null // null: no trailers yet
  readsClosed: boolean
  streamError: (Error & { readonly code?: unknown }) | undefined
}

/** The stream closed: the call ends with its status, or with how the stream and its session closed. */
const closed = (stream: http2.ClientHttp2Stream, session: Session, ending: Ending, response: Response): void => {
  // the end is known once the session's own events (GOAWAY, error) have been seen
  process.nextTick(() => {
    ending.end(
      response.status !== null ? response.status : fromClose({
        rstCode: stream.rstCode ?? http2.constants.NGHTTP2_NO_ERROR,
        httpStatus: response.httpStatus,
        connectionDropped: session.dropped(),
        connectionLost: session.lost(),
        error: response.streamError ?? session.failure()
      })
    )
    stream.removeAllListeners()
    stream.on("error", noop)
  })
}

/**
 * The response side of a call: messages to `handlers`, and the status from the trailers (or a
 * trailers-only response), a broken message, or how the stream closed, to `ending`.
 */
const listen = (
  stream: http2.ClientHttp2Stream,
  session: Session,
  maxReceiveMessageLength: number,
  ending: Ending
): void => {
  const response: Response = { httpStatus: undefined, status: null, readsClosed: false, streamError: undefined }
  const reader = new MessageReader(maxReceiveMessageLength, (message) => {
    if (!ending.ended) ending.handlers?.onMessage(message)
  })
  const outputStatus = (): void => {
    if (response.status !== null && response.readsClosed) ending.end(response.status)
  }
  stream.on("response", (headers: http2.IncomingHttpHeaders, flags: number) => {
    response.httpStatus = Number(headers[":status"])
    // a trailers-only response: the status is in these headers, and the stream ends with them
    if ((flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0) {
      response.status = fromTrailers(headers, response.httpStatus)
      response.readsClosed = true
      outputStatus()
    }
  })
  stream.on("data", (chunk: Buffer) => {
    if (ending.ended) return
    const failure = reader.push(chunk)
    if (failure === undefined) return
    ending.end(readFailure(failure, response.httpStatus))
  })
  stream.on("trailers", (trailers: http2.IncomingHttpHeaders) => {
    response.status = fromTrailers(trailers, response.httpStatus)
    outputStatus()
  })
  stream.on("end", () => {
    response.readsClosed = true
    // a message cut short is lost: the call is not OK, whatever the trailers said
    if (reader.partial) response.status = callError(Code.INTERNAL, "the stream ended in the middle of a message")
    outputStatus()
  })
  stream.on("error", (error: Error & { readonly code?: unknown }) => {
    // errors other than a received RST_STREAM say more than its code does
    if (error.code !== "ERR_HTTP2_STREAM_ERROR") response.streamError ??= error
  })
  stream.once("close", () => closed(stream, session, ending, response))
}

/**
 * Starts a call on `session` with the request `headers` (a raw list: pseudo-headers, `:path` among
 * them, then the call's metadata); throws when the session no longer takes streams (the caller ends
 * the call `UNAVAILABLE`).
 *
 * @internal
 */
/** Ends the call for its stream: marks it ended and drops its handlers, returning them. */
const forget = (ending: Ending): CallHandlers | undefined => {
  const handlers = ending.handlers
  ending.ended = true
  ending.handlers = undefined
  return handlers
}

export const start = (
  session: Session,
  headers: ReadonlyArray<string>,
  maxReceiveMessageLength: number,
  handlers: CallHandlers
): Call => {
  const stream = session.raw.request(headers, { endStream: false })
  const release = session.activate()
  const ending: Ending = {
    ended: false,
    handlers,
    end: (error) => {
      if (ending.ended) return
      const ended = forget(ending)
      release()
      ended?.onEnd(error)
      // as grpc-js: the call is over, so our half of the stream is too (nothing more reaches the server)
      if (!stream.destroyed && !stream.closed) {
        stream.close(error === undefined ? http2.constants.NGHTTP2_NO_ERROR : http2.constants.NGHTTP2_CANCEL)
      }
    }
  }
  listen(stream, session, maxReceiveMessageLength, ending)
  const writeFailed = (error: Error | null | undefined): void => {
    if (error === null || error === undefined || ending.ended) return
    ending.end(callError(Code.UNAVAILABLE, `Write error: ${error.message}`, error))
  }
  const closedForWrites = () => ending.ended || stream.destroyed || stream.writableEnded
  return {
    write: (framed, taken) => {
      if (closedForWrites()) {
        taken?.()
        return
      }
      stream.write(framed, (error) => {
        writeFailed(error)
        taken?.()
      })
    },
    writeLast: (framed) => {
      if (closedForWrites()) return
      stream.write(framed, writeFailed)
      stream.end()
    },
    end: () => {
      if (!stream.destroyed && !stream.writableEnded) stream.end()
    },
    cancel: () => {
      if (ending.ended) return
      forget(ending)
      release()
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL)
    }
  }
}
