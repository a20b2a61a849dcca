/**
 * The driver edge of the Bigtable client. MutateRows and CheckAndMutateRow are data calls
 * (`dataCall.ts`: straight on the grpc-js channel, ADR 0027) with hand-encoded request bytes and
 * minimal response decoders (ADR 0010, 0024), MutateRows folding every outcome into per-entry
 * statuses. The admin calls are `admin/adminCalls.ts`.
 *
 * @internal
 */
import * as grpcJs from "@grpc/grpc-js"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { CheckAndMutateRowRequest, EntryStatus, MutateRowsRequest } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, RpcFailed } from "../../../Bigtable/BigtableError.ts"
import * as deadline from "../../wire/deadline.ts"
import * as grpc from "../../wire/grpcStatus.ts"
import * as checkAndMutate from "./checkAndMutateProto.ts"
import type { StartCall } from "./dataCall.ts"
import { encodeRequest, entryByteSize } from "./mutationProto.ts"
import { readResponse } from "./responseProto.ts"

/** The gRPC method path of MutateRows. @internal */
export const mutateRowsPath = "/google.bigtable.v2.Bigtable/MutateRows"

const missing: EntryStatus = { code: undefined, message: "MutateRows ended without a status for this entry" }

/**
 * The routing header gax sends with MutateRows (`querystring` escaping, as gax's `routingHeader`):
 * the backend routes the call to the table's cluster by it.
 *
 * @internal
 */
export const requestParams = (tableName: string, appProfileId: string | undefined): string =>
  appProfileId === undefined
    ? `table_name=${encodeURIComponent(tableName)}`
    : `table_name=${encodeURIComponent(tableName)}&app_profile_id=${encodeURIComponent(appProfileId)}`

/** Interrupting a call: `settle` says whether it was still running (and marks it ended); then cancel it. */
const interrupt = (settle: () => boolean, cancel: () => void): Effect.Effect<void> =>
  Effect.sync(() => {
    if (settle()) cancel()
  })

/**
 * One MutateRows call. An entry gets the status the server streamed for it; entries left without
 * one when the call fails get the call's status (so a reset connection reads as `UNAVAILABLE` for
 * exactly the unanswered entries). A response that cannot be decoded cancels the call, and its
 * unanswered entries get a status without a code (fatal). Interruption cancels the call. Nothing
 * is re-sent here: retries are the writer's, per entry.
 *
 * The call has a deadline (`request.timeout`, else the fiber's `ResponseTimeout`): past it grpc-js
 * ends the call `DEADLINE_EXCEEDED` (transient, retried), also when the connection never came up,
 * and the stall is logged.
 *
 * @internal
 */
export const mutateRows = (start: StartCall) => (request: MutateRowsRequest): Effect.Effect<Array<EntryStatus>> =>
  Effect.flatMap(deadline.responseTimeout(request.timeout), (limit) =>
    Effect.callback<Array<EntryStatus>>((resume) => {
      const statuses: Array<EntryStatus | undefined> = Array.from({ length: request.entries.length })
      let done = false
      const finish = (fill: EntryStatus) => {
        if (done) return
        done = true
        const result = Effect.succeed(statuses.map((status) => status ?? fill))
        resume(
          fill.code === grpc.Code.DEADLINE_EXCEEDED
            ? Effect.andThen(deadline.logExceeded("MutateRows", request.tableName, limit), result)
            : result
        )
      }
      let cancel: () => void
      try {
        const metadata = new grpcJs.Metadata()
        metadata.set("x-goog-request-params", requestParams(request.tableName, request.appProfileId))
        cancel = start(
          mutateRowsPath,
          encodeRequest(
            request.tableName,
            request.appProfileId,
            request.entries,
            request.entryByteSizes ?? request.entries.map(entryByteSize)
          ),
          metadata,
          deadline.grpcDeadline(limit),
          {
            onMessage: (response) => {
              if (done) return
              try {
                readResponse(response, statuses)
              } catch (cause) {
                finish({ code: undefined, message: `malformed MutateRowsResponse: ${grpc.fromError(cause).message}` })
                cancel()
              }
            },
            onEnd: (error) => finish(error === undefined ? missing : grpc.fromError(error))
          }
        )
      } catch (cause) {
        finish(grpc.fromError(cause))
        return
      }
      return interrupt(() => (done ? false : (done = true)), cancel)
    }))

/**
 * The routing header of the last table and profile called, kept per client (`checkAndMutateRow` is
 * applied once per client, in `connect.ts` `service`): recomputed whenever they change, so correct
 * for any mix of tables, and free when consecutive requests share one (the usual commit).
 */
const routingParams = () => {
  let lastTable: string | undefined
  let lastProfile: string | undefined
  let lastParams = ""
  return (tableName: string, appProfileId: string | undefined): string => {
    if (tableName !== lastTable || appProfileId !== lastProfile) {
      lastParams = requestParams(tableName, appProfileId)
      lastTable = tableName
      lastProfile = appProfileId
    }
    return lastParams
  }
}

/** A failed `CheckAndMutateRow`; past its deadline it is ambiguous, and said so in the log. */
const checkAndMutateFailed = (
  tableName: string,
  limit: Duration.Duration,
  cause: unknown
): Effect.Effect<never, BigtableError> => {
  const error = rpcError("CheckAndMutateRow", tableName, cause)
  return error.reason._tag === "RpcFailed" && error.reason.code === grpc.Code.DEADLINE_EXCEEDED
    ? Effect.andThen(
      Effect.logWarning(
        `${deadline.message("CheckAndMutateRow", tableName, limit)}; ambiguous (it may have ` +
          "been applied): the write fails, restore its checkpoint to retry the same envelopes"
      ),
      Effect.fail(error)
    )
    : Effect.fail(error)
}

/**
 * One CheckAndMutateRow call guarded by a marker (`exactlyOnce/checkAndMutateProto.ts`): succeeds
 * with `predicate_matched` (true: the marker was there, nothing applied), fails with `RpcFailed`.
 * One attempt, no re-send: a call past its deadline (`request.timeout`, else the fiber's
 * `ResponseTimeout`) fails `DEADLINE_EXCEEDED`, which is ambiguous (it may have been applied).
 * Unary on the wire, it is sent in the server-streaming call shape: gRPC frames a unary and a
 * server-streaming call alike, so the data calls stay one call shape (ADR 0024, `dataCall.ts`).
 *
 * @internal
 */
export const checkAndMutateRow = (start: StartCall) => {
  const paramsOf = routingParams()
  const send = (request: CheckAndMutateRowRequest, limit: Duration.Duration): Effect.Effect<boolean, BigtableError> =>
    Effect.callback<boolean, BigtableError>((resume) => {
      let done = false
      let matched: boolean | undefined
      const fail = (cause: unknown) => {
        if (done) return
        done = true
        resume(checkAndMutateFailed(request.tableName, limit, cause))
      }
      let cancel: () => void
      try {
        const metadata = new grpcJs.Metadata()
        metadata.set("x-goog-request-params", paramsOf(request.tableName, request.appProfileId))
        cancel = start(
          checkAndMutate.checkAndMutateRowPath,
          checkAndMutate.encodeRequest(request),
          metadata,
          deadline.grpcDeadline(limit),
          {
            onMessage: (response) => {
              if (done) return
              try {
                matched = checkAndMutate.readPredicateMatched(response)
              } catch (cause) {
                fail(new Error(`malformed CheckAndMutateRowResponse: ${grpc.fromError(cause).message}`))
                cancel()
              }
            },
            onEnd: (error) => {
              if (done) return
              if (error !== undefined) return fail(error)
              if (matched === undefined) return fail(new Error("CheckAndMutateRow ended without a response"))
              done = true
              resume(Effect.succeed(matched))
            }
          }
        )
      } catch (cause) {
        fail(cause)
        return
      }
      return interrupt(() => (done ? false : (done = true)), cancel)
    })
  return (request: CheckAndMutateRowRequest): Effect.Effect<boolean, BigtableError> =>
    request.timeout !== undefined
      ? send(request, request.timeout)
      : Effect.flatMap(deadline.responseTimeout(undefined), (limit) => send(request, limit))
}

/** @internal */
export const rpcError = (method: string, table: string, cause: unknown, attempts = 1): BigtableError => {
  const status = grpc.fromError(cause)
  return new BigtableError({
    reason: new RpcFailed({ method, table, code: status.code, description: status.message, attempts, cause })
  })
}
