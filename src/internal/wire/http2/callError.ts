/**
 * How a call on our HTTP/2 transport ends when it does not end `OK`: a {@link CallError} shaped as
 * grpc-js's `ServiceError` (`code`, `details`, `metadata` with the trailers), so the classifiers that
 * read a grpc-js failure (`grpcStatus.fromError`, the BigQuery `StorageError` trailer reader) read
 * ours alike, on either transport.
 *
 * @internal
 */
import * as grpc from "@grpc/grpc-js"
import * as Data from "effect/Data"
import { Code, name } from "../grpcStatus.ts"

/**
 * A call that ended with a non-`OK` status: from the server's trailers, or mapped from what ended it
 * (an HTTP status, `RST_STREAM`, `GOAWAY`, a lost connection, TLS, a deadline), as grpc-js maps them.
 *
 * @internal
 */
export class CallError extends Data.TaggedError("CallError")<{
  readonly code: number
  readonly details: string
  /** The trailers (`grpc-status-details-bin`, the storage error trailer), decoded as grpc-js decodes them. */
  readonly metadata: grpc.Metadata
  readonly cause?: unknown
}> {
  override get message(): string {
    return `${this.code} ${name(this.code)}: ${this.details}`
  }
}

/** A {@link CallError} without trailers. @internal */
export const callError = (code: number, details: string, cause?: unknown): CallError =>
  new CallError({ code, details, metadata: new grpc.Metadata(), cause })

/** The failure of a call whose connection dropped (closed, reset, GOAWAY'd with the call in it). @internal */
export const connectionDropped = (cause?: unknown): CallError =>
  callError(Code.UNAVAILABLE, "Connection dropped", cause)
