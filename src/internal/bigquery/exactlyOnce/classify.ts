/**
 * The verdicts of the exactly-once mode (reference 2.6), pure functions of the gRPC code, the
 * storage error code and the phase of the append: what a failed append at an explicit offset
 * means before the at-least-once table (`retry.ts`) applies, and what a failed `FlushRows` means.
 *
 * @internal
 */
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import { Code } from "../../wire/grpcStatus.ts"
import { type AppendFailure, isTransient, StorageCode } from "../transport/classify.ts"

/**
 * Where an append stands:
 *
 * - `probe`: the first append on a restored stream, at the restored offset;
 * - `append`: a batch at its offset, mid-run;
 * - `replay`: the survivors of a row-level rejection, re-appended at the rejected offset.
 *
 * @internal
 */
export type Phase = "probe" | "append" | "replay"

/**
 * - `landed`: `OFFSET_ALREADY_EXISTS` mid-run after an earlier attempt of the batch went unanswered:
 *   that attempt landed: success. On an attempt with no unanswered one before it, the rows there are
 *   someone else's (the successor that adopted the stream; this writer is the zombie): `fenced`.
 * - `fenced`: another writer owns the stream now: the writer fails with `CheckpointConflict`, the one
 *   error for "another writer owns this now" whichever layer notices it.
 * - `abandon`: the restored stream cannot be adopted: leave it (never finalized), create a fresh
 *   stream and append from offset 0.
 * - `reappend`: `OFFSET_OUT_OF_RANGE` mid-run (a cascade from an earlier repaired failure): reconnect
 *   and re-append at the original offset, on the recovery budget.
 * - `terminal`: the writer fails (a restart and restore is the repair), `detail` says why.
 * - `shared`: the at-least-once verdict applies (transient, watchdog, row errors, schema mismatch).
 *
 * @internal
 */
export type Verdict =
  | { readonly _tag: "landed" }
  | { readonly _tag: "abandon" }
  | { readonly _tag: "reappend" }
  | { readonly _tag: "terminal"; readonly detail: string }
  | { readonly _tag: "fenced"; readonly detail: string }
  | { readonly _tag: "shared" }

const is = (failure: AppendFailure, code: number, storageCode: number): boolean =>
  failure.storageCode === storageCode || (failure.storageCode === undefined && failure.code === code)

/** `OFFSET_ALREADY_EXISTS` (BigQuery) or a bare `ALREADY_EXISTS` (bqemulator 1.4.0 sends no StorageError). @internal */
export const offsetExists = (failure: AppendFailure): boolean =>
  is(failure, Code.ALREADY_EXISTS, StorageCode.OFFSET_ALREADY_EXISTS)

/** `OFFSET_OUT_OF_RANGE` or a bare `OUT_OF_RANGE`. @internal */
export const offsetOutOfRange = (failure: AppendFailure): boolean =>
  is(failure, Code.OUT_OF_RANGE, StorageCode.OFFSET_OUT_OF_RANGE)

/**
 * A stream that is gone or unusable: finalized, not found, invalid state, or the bare codes that
 * stand for them (`NOT_FOUND`: a buffered stream's table is proven at creation, so a missing entity
 * at append is the stream; `FAILED_PRECONDITION`: bqemulator's finalized stream).
 *
 * @internal
 */
export const staleStream = (failure: AppendFailure): boolean =>
  failure.storageCode === StorageCode.STREAM_FINALIZED || failure.storageCode === StorageCode.STREAM_NOT_FOUND ||
  failure.storageCode === StorageCode.INVALID_STREAM_STATE ||
  (failure.storageCode === undefined &&
    (failure.code === Code.NOT_FOUND || failure.code === Code.FAILED_PRECONDITION))

/**
 * The verdict on a failed append at an explicit offset, in the order of reference 2.6.
 * `unanswered`: an earlier attempt of the same batch at the same offset ended without an answer
 * (the watchdog, a broken or reset connection), so it may have landed.
 *
 * @internal
 */
export const classifyAppend = (failure: AppendFailure, phase: Phase, unanswered: boolean): Verdict => {
  if (failure.origin !== "watchdog") {
    if (offsetExists(failure)) {
      if (phase === "probe") return { _tag: "abandon" }
      if (phase === "replay") {
        return { _tag: "terminal", detail: "OFFSET_ALREADY_EXISTS while replaying after a row-level rejection" }
      }
      // only a retry of an attempt that may have landed can find its own rows there
      return unanswered ? { _tag: "landed" } : {
        _tag: "fenced",
        detail: "OFFSET_ALREADY_EXISTS on an attempt with no unanswered one before it: the rows there are " +
          "another writer's, which took the stream over"
      }
    }
    if (offsetOutOfRange(failure)) {
      if (phase === "probe") return { _tag: "abandon" }
      if (phase === "replay") {
        return { _tag: "terminal", detail: "OFFSET_OUT_OF_RANGE while replaying after a row-level rejection" }
      }
      return { _tag: "reappend" }
    }
    if (staleStream(failure)) {
      return phase === "probe"
        ? { _tag: "abandon" }
        : { _tag: "terminal", detail: "the buffered stream is finalized, gone or in an invalid state" }
    }
    // a masked denial at append is never a table's propagation window (measured: it does not happen)
    if (failure.code === Code.PERMISSION_DENIED || failure.storageCode === StorageCode.TABLE_NOT_FOUND) {
      return { _tag: "terminal", detail: "the table is missing or access is denied" }
    }
  }
  return { _tag: "shared" }
}

/**
 * - `flushed`: already flushed up to there (`ALREADY_EXISTS` / `OFFSET_ALREADY_EXISTS`): success.
 * - `retry`: transient, or a masked denial under `CREATE_IF_NEEDED` (a table just created): retried
 *   in place on the recovery budget.
 * - `terminal`: `NOT_FOUND` (the stream may have expired), a denial under `CREATE_NEVER`, the rest.
 *
 * @internal
 */
export type FlushVerdict = "flushed" | "retry" | "terminal"

/** The verdict on a failed `FlushRows` (reference 2.6, commit rules). @internal */
export const classifyFlush = (
  code: number | undefined,
  storageCode: number | undefined,
  createDisposition: CreateDisposition
): FlushVerdict => {
  if (code === Code.ALREADY_EXISTS || storageCode === StorageCode.OFFSET_ALREADY_EXISTS) return "flushed"
  if (isTransient(code)) return "retry"
  if (code === Code.PERMISSION_DENIED && createDisposition === "CREATE_IF_NEEDED") return "retry"
  return "terminal"
}
