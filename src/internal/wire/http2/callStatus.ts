/**
 * The status a call ends with, read from what the server sent (trailers, or a trailers-only
 * response) or mapped from how the stream ended, with the mappings of grpc-js 1.14
 * (`subchannel-call.ts`), so that our transport and grpc-js give the classifiers the same codes:
 *
 * | what ended the call                               | code                                         |
 * | ------------------------------------------------- | -------------------------------------------- |
 * | trailers with `grpc-status`                       | that code, `grpc-message` percent-decoded    |
 * | no `grpc-status`, HTTP status other than 200      | 400 INTERNAL, 401 UNAUTHENTICATED, 403       |
 * |                                                   | PERMISSION_DENIED, 404 UNIMPLEMENTED, 429,   |
 * |                                                   | 502-504 UNAVAILABLE, other UNKNOWN           |
 * | no status at all                                  | UNKNOWN (trailers) / INTERNAL (stream ended) |
 * | RST_STREAM `REFUSED_STREAM` (also GOAWAY'd)       | UNAVAILABLE                                  |
 * | RST_STREAM `CANCEL`                               | CANCELLED, UNAVAILABLE if the connection     |
 * |                                                   | dropped                                      |
 * | the connection lost on our side (keepalive, socket) | UNAVAILABLE ("Connection dropped")         |
 * | RST_STREAM `ENHANCE_YOUR_CALM`                    | RESOURCE_EXHAUSTED                           |
 * | RST_STREAM `INADEQUATE_SECURITY`                  | PERMISSION_DENIED                            |
 * | RST_STREAM `INTERNAL_ERROR`                       | INTERNAL, UNAVAILABLE after ECONNRESET /     |
 * |                                                   | ETIMEDOUT                                    |
 * | any other RST_STREAM                              | INTERNAL                                     |
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as http2 from "node:http2"
import { Code } from "../grpcStatus.ts"
import { CallError, callError } from "./callError.ts"

const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_INADEQUATE_SECURITY, NGHTTP2_INTERNAL_ERROR } =
  http2.constants
const { NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM } = http2.constants

const utf8 = new TextDecoder("utf-8", { fatal: false })
const hex = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1

/**
 * `grpc-message` decoded: the spec percent-encodes it as UTF-8 bytes. A `%` not followed by two hex
 * digits stays as it is (a lenient reading, as a status message is for people).
 *
 * @internal
 */
export const percentDecode = (value: string): string => {
  if (!value.includes("%")) return value
  const bytes: Array<number> = []
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c === 37 && i + 2 < value.length) {
      const hi = hex(value.charCodeAt(i + 1))
      const lo = hex(value.charCodeAt(i + 2))
      if (hi >= 0 && lo >= 0) {
        bytes.push(hi * 16 + lo)
        i += 2
        continue
      }
    }
    // header values arrive as Latin-1 text: a character is a byte
    if (c < 0x100) bytes.push(c)
    else for (const b of Buffer.from(value.charAt(i), "utf8")) bytes.push(b)
  }
  return utf8.decode(Uint8Array.from(bytes))
}

/** The code an HTTP status maps to when a response carries no `grpc-status`. @internal */
export const httpStatusCode = (status: number): number => {
  switch (status) {
    case 400:
      return Code.INTERNAL
    case 401:
      return Code.UNAUTHENTICATED
    case 403:
      return Code.PERMISSION_DENIED
    case 404:
      return Code.UNIMPLEMENTED
    case 429:
    case 502:
    case 503:
    case 504:
      return Code.UNAVAILABLE
    default:
      return Code.UNKNOWN
  }
}

/** @internal */
export const fromHttpStatus = (status: number): CallError =>
  callError(httpStatusCode(status), `Received HTTP status code ${status}`)

const headerValue = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/**
 * The status in trailers (or a trailers-only response): `undefined` when it is `OK`, else the
 * {@link CallError} with the trailers as metadata (`-bin` values base64-decoded). Without a
 * `grpc-status`, a non-200 `httpStatus` is mapped, else the call ended `UNKNOWN`.
 *
 * @internal
 */
export const fromTrailers = (
  trailers: http2.IncomingHttpHeaders,
  httpStatus: number | undefined
): CallError | undefined => {
  const raw = headerValue(trailers["grpc-status"])
  const code = raw === undefined ? undefined : Number(raw)
  if (code === Code.OK) return undefined
  const metadata = metadataOf(trailers)
  if (code !== undefined && Number.isInteger(code) && code >= 0 && code <= 16) {
    const message = headerValue(trailers["grpc-message"])
    return new CallError({ code, details: message === undefined ? "" : percentDecode(message), metadata })
  }
  if (httpStatus !== undefined && httpStatus !== 200) {
    return new CallError({
      code: httpStatusCode(httpStatus),
      details: `Received HTTP status code ${httpStatus}`,
      metadata
    })
  }
  return new CallError({
    code: Code.UNKNOWN,
    details: raw === undefined ? "No status information received" : `Invalid grpc-status: ${raw}`,
    metadata
  })
}

/** The trailers as grpc-js `Metadata`; a malformed header is left out rather than failing the call. */
const metadataOf = (trailers: http2.IncomingHttpHeaders): grpc.Metadata => {
  try {
    return grpc.Metadata.fromHttp2Headers(trailers)
  } catch {
    return new grpc.Metadata()
  }
}

/** What is known of a stream that closed without a status. @internal */
export interface Ending {
  readonly rstCode: number
  readonly httpStatus: number | undefined
  /** Its connection was destroyed with the call in it (a `CANCEL` then means dropped, not cancelled). */
  readonly connectionDropped: boolean
  /** Its connection was lost on our side (keepalive, socket): the call ends `UNAVAILABLE` whatever the code. */
  readonly connectionLost: Error | undefined
  /** A Node error the stream or its session reported (an `ECONNRESET`, a TLS failure), if any. */
  readonly error: (Error & { readonly code?: unknown }) | undefined
}

/**
 * The status of a stream that closed without trailers, from its `RST_STREAM` code and what else is
 * known (the table above).
 *
 * @internal
 */
export const fromClose = (ending: Ending): CallError => {
  const { error, httpStatus, rstCode } = ending
  const lost = ending.connectionLost
  if (lost !== undefined) return callError(Code.UNAVAILABLE, `Connection dropped: ${lost.message}`, lost)
  switch (rstCode) {
    case NGHTTP2_NO_ERROR:
      return httpStatus !== undefined && httpStatus !== 200
        ? fromHttpStatus(httpStatus)
        : callError(Code.INTERNAL, `Received RST_STREAM with code ${rstCode} (Call ended without gRPC status)`)
    case NGHTTP2_REFUSED_STREAM:
      return callError(Code.UNAVAILABLE, "Stream refused by server")
    case NGHTTP2_CANCEL:
      // Node resets the streams of a destroyed connection with CANCEL
      return ending.connectionDropped
        ? callError(Code.UNAVAILABLE, "Connection dropped")
        : callError(Code.CANCELLED, "Call cancelled")
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return callError(Code.RESOURCE_EXHAUSTED, "Bandwidth exhausted or memory limit exceeded")
    case NGHTTP2_INADEQUATE_SECURITY:
      return callError(Code.PERMISSION_DENIED, "Protocol not secure enough")
    case NGHTTP2_INTERNAL_ERROR:
      if (error === undefined) {
        return callError(Code.INTERNAL, `Received RST_STREAM with code ${rstCode} (Internal server error)`)
      }
      return error.code === "ECONNRESET" || error.code === "ETIMEDOUT"
        ? callError(Code.UNAVAILABLE, error.message, error)
        : callError(
          Code.INTERNAL,
          `Received RST_STREAM with code ${rstCode} triggered by internal client error: ${error.message}`,
          error
        )
    default:
      return callError(Code.INTERNAL, `Received RST_STREAM with code ${rstCode}`)
  }
}
