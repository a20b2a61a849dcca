/**
 * The pure verdict on one MutateRows entry status (reference 3.2), first match wins:
 *
 * | verdict | rule |
 * |---|---|
 * | `applied` | every status in the chain is `OK` |
 * | `tableNotFound` | any `NOT_FOUND` in the chain, checked first, even beside a transient status |
 * | `retry` | any transient status (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`, `RESOURCE_EXHAUSTED`) anywhere |
 * | `rowLevel` | no transient status, and the first status with a code is `INVALID_ARGUMENT` |
 * | `fatal` | anything else: no status at all, `PERMISSION_DENIED`, `INTERNAL`, `FAILED_PRECONDITION`, ... |
 *
 * The reference connector has no `retry` row because its client retries transient statuses before
 * the writer sees them; here the writer retries them itself, and a transient status that outlives
 * the retry budget becomes `fatal` (see {@link afterBudget}).
 *
 * @internal
 */
import type { AnyPolicy, Policy } from "../../core/retrySchedule.ts"
import * as grpc from "../../wire/grpcStatus.ts"

/** @internal */
export type Verdict = "applied" | "tableNotFound" | "retry" | "rowLevel" | "fatal"

/** @internal */
export const classify = (chain: ReadonlyArray<number | undefined>): Verdict => {
  if (chain.length === 0) return "fatal"
  let allOk = true
  let transient = false
  let first: number | undefined
  for (const code of chain) {
    if (code === grpc.Code.NOT_FOUND) return "tableNotFound"
    if (code !== grpc.Code.OK) allOk = false
    if (grpc.isTransient(code)) transient = true
    if (first === undefined && code !== undefined) first = code
  }
  if (allOk) return "applied"
  if (transient) return "retry"
  return first === grpc.Code.INVALID_ARGUMENT ? "rowLevel" : "fatal"
}

/**
 * The attempts an entry may use under `policy`: `maxAttempts` of a backoff, unbounded for a
 * caller's schedule (whose end the core reports, stepping it with `core/budget.ts`).
 *
 * @internal
 */
export const maxAttemptsOf = (policy: AnyPolicy | Policy): number =>
  "_tag" in policy && policy._tag === "FromSchedule" ? Number.POSITIVE_INFINITY : policy.maxAttempts

/** A `retry` verdict on an entry that has used `attempts` of `maxAttempts`. @internal */
export const afterBudget = (verdict: Verdict, attempts: number, maxAttempts: number): Verdict =>
  verdict === "retry" && attempts >= maxAttempts ? "fatal" : verdict

/**
 * Whether a `NOT_FOUND` names a missing column family rather than a missing table (the service
 * says "Requested column family not found").
 *
 * @internal
 */
export const isMissingFamily = (message: string): boolean => /column family/i.test(message)

/** The table-admin calls of the repair (`admin.ts`). @internal */
export type AdminMethod = "GetTable" | "CreateTable" | "ModifyColumnFamilies" | "GetAppProfile"

/** @internal */
export type AdminVerdict = "retry" | "fatal"

/**
 * The pure verdict on a failed table-admin call (`ALREADY_EXISTS` is an answer, handled by
 * `admin.ensure` before this), classified like a data status ({@link classify}), first match wins:
 *
 * | verdict | rule |
 * |---|---|
 * | `fatal` | `NOT_FOUND` on `CreateTable`: the instance is missing, no repair creates it |
 * | `retry` | `NOT_FOUND` on `GetTable` / `ModifyColumnFamilies`: the table went away between calls, the next round creates it |
 * | `retry` | a transient status (`UNAVAILABLE`, `DEADLINE_EXCEEDED` (a call past `adminTimeout` too), `ABORTED`, `RESOURCE_EXHAUSTED`) |
 * | `fatal` | anything else: `PERMISSION_DENIED`, `UNAUTHENTICATED`, `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `INTERNAL`, no status |
 *
 * A `retry` runs again on the recovery budget; a `fatal` fails the sink at once with the call's
 * `RpcFailed`, whose `isRetryable` is false.
 *
 * @internal
 */
export const classifyAdmin = (method: AdminMethod, code: number | undefined): AdminVerdict => {
  if (code === grpc.Code.NOT_FOUND) return method === "CreateTable" ? "fatal" : "retry"
  return grpc.isTransient(code) ? "retry" : "fatal"
}
