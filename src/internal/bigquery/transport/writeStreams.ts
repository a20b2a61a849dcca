/**
 * The buffered-stream calls of the exactly-once mode (reference 2.6): `CreateWriteStream` (type
 * `BUFFERED`) and `FlushRows`, each one unary call on the client's unary channel
 * (`connection.unary`). Their retry policies live with their callers (`exactlyOnce/`).
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { routingParams, type StreamFailure, streamFailure, unary } from "./connection.ts"
import {
  bufferedType,
  decodeFlushRowsResponse,
  decodeWriteStream,
  encodeCreateWriteStreamRequest,
  encodeFlushRowsRequest
} from "./writeProto.ts"

/** @internal */
export const createWriteStreamPath = "/google.cloud.bigquery.storage.v1.BigQueryWrite/CreateWriteStream"
/** @internal */
export const flushRowsPath = "/google.cloud.bigquery.storage.v1.BigQueryWrite/FlushRows"

const decoded = <A>(method: string, decode: () => A): Effect.Effect<A, StreamFailure> =>
  Effect.try({ try: decode, catch: (cause) => streamFailure(undefined, `malformed ${method} response`, cause) })

/**
 * Creates a `BUFFERED` stream on `table` (`projects/p/datasets/d/tables/t`); its name.
 *
 * @internal
 */
export const createBuffered = (
  write: grpc.Client,
  table: string,
  timeout?: Duration.Duration
): Effect.Effect<string, StreamFailure> =>
  unary(write, {
    method: "CreateWriteStream",
    path: createWriteStreamPath,
    request: encodeCreateWriteStreamRequest(table, bufferedType),
    routing: routingParams("parent", table),
    target: table
  }, timeout).pipe(
    Effect.flatMap((bytes) => decoded("CreateWriteStream", () => decodeWriteStream(bytes).name ?? "")),
    Effect.filterOrFail(
      (name) => name.length > 0,
      () => streamFailure(undefined, "CreateWriteStream answered a stream without a name", undefined)
    )
  )

/**
 * `FlushRows` of `stream` up to `offset`; the offset the service answered (the caller compares).
 *
 * @internal
 */
export const flushRows = (
  write: grpc.Client,
  stream: string,
  offset: number,
  timeout?: Duration.Duration
): Effect.Effect<number, StreamFailure> =>
  unary(write, {
    method: "FlushRows",
    path: flushRowsPath,
    request: encodeFlushRowsRequest(stream, offset),
    routing: routingParams("write_stream", stream),
    target: stream
  }, timeout).pipe(
    Effect.flatMap((bytes) => decoded("FlushRows", () => decodeFlushRowsResponse(bytes).offset ?? 0))
  )
