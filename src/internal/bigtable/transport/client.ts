/**
 * The driver edge of the Bigtable client. MutateRows and CheckAndMutateRow are data calls
 * (`dataCall.ts`: straight on the grpc-js channel, ADR 0027) with hand-encoded request bytes and
 * minimal response decoders (ADR 0010, 0024), MutateRows folding every outcome into per-entry
 * statuses. The admin calls are `admin/adminCalls.ts`.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { CheckAndMutateRowRequest, EntryStatus, MutateRowsRequest } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, RpcFailed } from "../../../Bigtable/BigtableError.ts"
import { unset } from "../../sitelessArrays.ts"
import * as deadline from "../../wire/deadline.ts"
import * as grpc from "../../wire/grpcStatus.ts"
import { SizedMutateRows } from "../heapObjects.ts"
import * as checkAndMutate from "./checkAndMutateProto.ts"
import type { CallListener, Cancel, StartCall } from "./dataCall.ts"
import { encodeRequest, encodeSized, entryByteSize } from "./mutationProto.ts"
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

/** One call to start: what {@link StartCall} takes. */
interface CallParts {
  readonly method: string
  readonly encode: (reserve: number) => Buffer
  readonly routing: string
  readonly listener: CallListener
}

/**
 * `encode` run at most once per reserve: a call that tries to start at once encodes its request, and
 * encodes it again only if it then waits for a connection on a transport with another reserve (none does).
 */
const encodedOnce = (encode: (reserve: number) => Buffer): (reserve: number) => Buffer => {
  let reserved = -1
  let bytes: Buffer | undefined
  return (reserve) => {
    if (bytes === undefined || reserve !== reserved) {
      bytes = encode(reserve)
      reserved = reserve
    }
    return bytes
  }
}

/** A call's cancel, once it started: shared by the call's runner and its listener. */
interface Started {
  cancel: Cancel | undefined
}

/**
 * Runs one call, whose listener completes `done` (the first outcome wins); `started.cancel` is its
 * cancel once it started (the listener cancels through it too).
 * Interruption cancels it. A transport that keeps no deadline of its own (`local`, our HTTP/2 data
 * path) gets one here, `limit` long: past it the call is cancelled (`"deadline"`: later
 * calls may go on a new connection) and `onDeadline` is the outcome, as grpc-js's own deadline would
 * have ended it.
 *
 * A call the transport can start at once (`startNow`: a connection up, credentials cached) arms its
 * deadline on the transport's keeper (`wire/deadlineKeeper.ts`, one fiber for all calls); one that
 * must wait for a connection or credentials races a timer on the fiber's clock, which also ends
 * that wait.
 */
const runCall = <A>(
  start: StartCall,
  parts: CallParts,
  limit: Duration.Duration,
  done: Deferred.Deferred<A>,
  onDeadline: () => A,
  started: Started
): Effect.Effect<A> =>
  Effect.suspend(() => {
    // the call may have ended this very turn: its outcome stands
    const expire = (): void => {
      if (Deferred.doneUnsafe(done, Exit.succeed(onDeadline()))) started.cancel?.("deadline")
    }
    const local = start.local
    if (local !== undefined) {
      const { deadlines, startNow } = local
      // the clean-up is in place before the call starts (an interruption at any step after the start
      // must cancel the stream and clear the deadline), and runs only for a call started here
      let clear: (() => void) | undefined
      return Effect.onExit(
        Effect.clockWith((clock) => {
          const { method, routing, listener } = parts
          const encode = encodedOnce(parts.encode)
          const call = startNow(method, encode, routing, limit, listener, clock.currentTimeMillisUnsafe())
          if (call === undefined) return waiting(start, { ...parts, encode }, limit, done, expire, started)
          started.cancel = call
          clear = deadlines.arm(limit, expire)
          return Deferred.await(done)
        }),
        (exit) =>
          clear === undefined ? Effect.void : Effect.sync(() => {
            clear?.()
            if (Exit.hasInterrupts(exit)) started.cancel?.("interrupted")
          })
      )
    }
    return waiting(start, parts, limit, done, expire, started)
  })

/** A call through the transport's effect (it may wait for a connection), with a timer of its own. */
const waiting = <A>(
  start: StartCall,
  parts: CallParts,
  limit: Duration.Duration,
  done: Deferred.Deferred<A>,
  expire: () => void,
  started: Started
): Effect.Effect<A> => {
  const call = Effect.flatMap(start(parts.method, parts.encode, parts.routing, limit, parts.listener), (c) => {
    started.cancel = c
    return Deferred.await(done)
  })
  const timed = start.local === undefined ? call : Effect.timeoutOrElse(call, {
    duration: limit,
    orElse: () => Effect.andThen(Effect.sync(expire), Deferred.await(done))
  })
  return Effect.onInterrupt(timed, () => Effect.sync(() => started.cancel?.("interrupted")))
}

const deadlineExceeded = (method: string, table: string, limit: Duration.Duration): EntryStatus => ({
  code: grpc.Code.DEADLINE_EXCEEDED,
  message: deadline.message(method, table, limit)
})

/**
 * One MutateRows call. An entry gets the status the server streamed for it; entries left without
 * one when the call fails get the call's status (so a reset connection reads as `UNAVAILABLE` for
 * exactly the unanswered entries). A response that cannot be decoded cancels the call, and its
 * unanswered entries get a status without a code (fatal). Interruption cancels the call. Nothing
 * is re-sent here: retries are the writer's, per entry.
 *
 * The call has a deadline (`request.timeout`, else the fiber's `ResponseTimeout`), sent to the
 * server and kept locally ({@link runCall}: on the transport's deadline keeper, or a timer on the
 * fiber's clock while the call waits for a connection): past it the unanswered entries get
 * `DEADLINE_EXCEEDED` (transient, retried), also when the connection never came up, and the stall
 * is logged.
 *
 * @internal
 */
export const mutateRows = (start: StartCall) => {
  const paramsOf = routingParams()
  return (request: MutateRowsRequest): Effect.Effect<Array<EntryStatus>> =>
    Effect.flatMap(deadline.responseTimeout(request.timeout), (limit) =>
      Effect.suspend(() => {
        const statuses = unanswered(request)
        const done = Deferred.makeUnsafe<EntryStatus>()
        const started: Started = { cancel: undefined }
        const listener = listenerOf(statuses, done, started)
        const parts = mutateRowsParts(request, paramsOf, listener)
        const onDeadline = () => deadlineExceeded("MutateRows", request.tableName, limit)
        return Effect.flatMap(
          runCall(start, parts, limit, done, onDeadline, started),
          (fill) => {
            const result = Effect.succeed(filled(statuses, fill))
            return fill.code === grpc.Code.DEADLINE_EXCEEDED
              ? Effect.andThen(deadline.logExceeded("MutateRows", request.tableName, limit), result)
              : result
          }
        )
      }))
}

/**
 * A MutateRows call's listener, made apart from the request: a closure shares its function's context,
 * and a transport may keep the listener past the call (Node keeps a stream), so closures made beside
 * the request would keep its entries alive (ADR 0056).
 */
const listenerOf = (
  statuses: Array<EntryStatus | undefined>,
  done: Deferred.Deferred<EntryStatus>,
  started: Started
): CallListener =>
  statusListener(
    statuses,
    () => Deferred.isDoneUnsafe(done),
    (fill) => Deferred.doneUnsafe(done, Exit.succeed(fill)),
    () => started.cancel?.("interrupted")
  )

/** A status slot for each entry of `request`, none answered yet. */
const unanswered = (request: MutateRowsRequest): Array<EntryStatus | undefined> =>
  unset(request instanceof SizedMutateRows ? request.sized.length : request.entries.length)

/**
 * A call's statuses once it ended: each entry the server answered keeps its own, the others get the
 * call's (`fill`). In place: nothing reads the array after the call ended but its outcome.
 */
const filled = (statuses: Array<EntryStatus | undefined>, fill: EntryStatus): Array<EntryStatus> => {
  for (let i = 0; i < statuses.length; i++) if (statuses[i] === undefined) statuses[i] = fill
  return statuses as Array<EntryStatus>
}

/**
 * The listener of a MutateRows call: fills `statuses` from the responses; `end` takes the status of
 * the entries left without one once the call ended (the first time wins: it says whether it was),
 * `ended` tells whether it has; a response that cannot be decoded ends it and cancels the call.
 */
const statusListener = (
  statuses: Array<EntryStatus | undefined>,
  ended: () => boolean,
  end: (fill: EntryStatus) => boolean,
  cancel: () => void
): CallListener => ({
  onMessage: (response) => {
    if (ended()) return
    try {
      readResponse(response, statuses)
    } catch (cause) {
      if (end({ code: undefined, message: `malformed MutateRowsResponse: ${grpc.fromError(cause).message}` })) cancel()
    }
  },
  onEnd: (error) => void end(error === undefined ? missing : grpc.fromError(error))
})

const mutateRowsParts = (
  request: MutateRowsRequest,
  paramsOf: (tableName: string, appProfileId: string | undefined) => string,
  listener: CallListener
): CallParts => ({
  method: mutateRowsPath,
  encode: (reserve) =>
    request instanceof SizedMutateRows
      ? encodeSized(request.tableName, request.appProfileId, request.sized, reserve)
      : encodeRequest(
        request.tableName,
        request.appProfileId,
        request.entries,
        request.entryByteSizes ?? request.entries.map(entryByteSize),
        reserve
      ),
  routing: paramsOf(request.tableName, request.appProfileId),
  listener
})

/**
 * A MutateRows call started at once, on no fiber ({@link mutateRowsNow}): `deliver` gets every
 * entry's status, as {@link mutateRows} gives them, and whether the call ended past its deadline.
 * `now` is the epoch milliseconds of the caller's clock. Returns the call's cancel (`deliver` is not
 * called after it), or `undefined` when the call cannot start at once (it did not start).
 *
 * @internal
 */
export type MutateRowsNow = (
  request: MutateRowsRequest,
  limit: Duration.Duration,
  now: number,
  deliver: (statuses: Array<EntryStatus>, expired: boolean) => void
) => (() => void) | undefined

/**
 * MutateRows without a fiber of its own, for a transport that can start a call synchronously: our
 * HTTP/2 data path when a connection is up and credentials are cached (`local.startNow`; the deadline
 * on the transport's keeper, as {@link runCall} arms it), or grpc-js (`sync`; the deadline its own).
 * `undefined` for a transport that cannot. Logging a call past its deadline is the caller's (`expired`).
 *
 * @internal
 */
export const mutateRowsNow = (start: StartCall): MutateRowsNow | undefined => {
  const { local, sync } = start
  if (local === undefined && sync === undefined) return undefined
  const paramsOf = routingParams()
  return (request, limit, now, deliver) => {
    const tableName = request.tableName
    const statuses = unanswered(request)
    let ended = false
    let call: Cancel | undefined
    let clear: (() => void) | undefined
    // A transport may keep the listener past the call (Node keeps a stream): no closure here names
    // `request` or `deliver`, and `deliverTo` is dropped once used, so it keeps neither the entries
    // nor the caller's records alive (ADR 0056).
    let deliverTo: typeof deliver | undefined = deliver
    // the first of the answer, the deadline and the caller's cancel ends it
    const finish = (): boolean => {
      if (ended) return false
      ended = true
      clear?.()
      return true
    }
    const end = (fill: EntryStatus): boolean => {
      if (!finish()) return false
      const to = deliverTo
      deliverTo = undefined
      to?.(filled(statuses, fill), fill.code === grpc.Code.DEADLINE_EXCEEDED)
      return true
    }
    const listener = statusListener(statuses, () => ended, end, () => call?.("interrupted"))
    const parts = mutateRowsParts(request, paramsOf, listener)
    if (local !== undefined) {
      call = local.startNow(parts.method, parts.encode, parts.routing, limit, listener, now)
      if (call === undefined) return undefined
      if (!ended) {
        const expire = (): void => {
          if (end(deadlineExceeded("MutateRows", tableName, limit))) call?.("deadline")
        }
        clear = local.deadlines.arm(limit, expire)
      }
    } else if (sync !== undefined) {
      call = sync(parts.method, parts.encode, parts.routing, limit, listener)
    }
    return () => {
      if (finish()) call?.("interrupted")
    }
  }
}

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
  return error.reason._tag === "BigtableRpcFailed" && error.reason.code === grpc.Code.DEADLINE_EXCEEDED
    ? Effect.andThen(
      Effect.logWarning(
        `${deadline.message("CheckAndMutateRow", tableName, limit)}; ambiguous (it may have ` +
          "been applied): the write fails, restore its checkpoint to retry the same envelopes"
      ),
      Effect.fail(error)
    )
    : Effect.fail(error)
}

/** The outcome of one CheckAndMutateRow: `predicate_matched`, or the failure's cause. */
type Checked = { readonly matched: boolean } | { readonly failure: unknown }

/** The listener of one CheckAndMutateRow, completing `done` with its outcome. */
const checkListener = (done: Deferred.Deferred<Checked>, started: Started): CallListener => {
  let matched: boolean | undefined
  const settle = (outcome: Checked): boolean => Deferred.doneUnsafe(done, Exit.succeed(outcome))
  return {
    onMessage: (response) => {
      if (Deferred.isDoneUnsafe(done)) return
      try {
        matched = checkAndMutate.readPredicateMatched(response)
      } catch (cause) {
        const failure = new Error(`malformed CheckAndMutateRowResponse: ${grpc.fromError(cause).message}`)
        if (settle({ failure })) started.cancel?.("interrupted")
      }
    },
    onEnd: (error) => {
      if (error !== undefined) settle({ failure: error })
      else if (matched === undefined) settle({ failure: new Error("CheckAndMutateRow ended without a response") })
      else settle({ matched })
    }
  }
}

/**
 * One CheckAndMutateRow call guarded by a marker (`exactlyOnce/checkAndMutateProto.ts`): succeeds
 * with `predicate_matched` (true: the marker was there, nothing applied), fails with `RpcFailed`.
 * One attempt, no re-send: a call past its deadline (`request.timeout`, else the fiber's
 * `ResponseTimeout`; sent to the server, and kept locally as {@link runCall} says) fails `DEADLINE_EXCEEDED`,
 * which is ambiguous (it may have been applied). Unary on the wire, it is sent in the
 * server-streaming call shape: gRPC frames a unary and a server-streaming call alike, so the data
 * calls stay one call shape (ADR 0024, `dataCall.ts`).
 *
 * @internal
 */
export const checkAndMutateRow = (start: StartCall) => {
  const paramsOf = routingParams()
  const send = (request: CheckAndMutateRowRequest, limit: Duration.Duration): Effect.Effect<boolean, BigtableError> =>
    Effect.suspend(() => {
      const done = Deferred.makeUnsafe<Checked>()
      const started: Started = { cancel: undefined }
      const parts: CallParts = {
        method: checkAndMutate.checkAndMutateRowPath,
        encode: (reserve) => checkAndMutate.encodeRequest(request, reserve),
        routing: paramsOf(request.tableName, request.appProfileId),
        listener: checkListener(done, started)
      }
      const timedOut = (): Checked => ({
        failure: Object.assign(new Error(deadline.message("CheckAndMutateRow", request.tableName, limit)), {
          code: grpc.Code.DEADLINE_EXCEEDED
        })
      })
      return Effect.flatMap(
        runCall(start, parts, limit, done, timedOut, started),
        (outcome) =>
          "matched" in outcome
            ? Effect.succeed(outcome.matched)
            : checkAndMutateFailed(request.tableName, limit, outcome.failure)
      )
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
