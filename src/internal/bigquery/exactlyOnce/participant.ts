/**
 * The BigQuery participant of the checkpoint protocol (`internal/checkpoint/protocol.ts`,
 * reference 2.6): a commit is `(destination, stream, offset)`, the last row to flush, for every
 * destination whose stream has rows; committing is `FlushRows` up to it; restoring adopts each
 * destination's stream at the offset after it.
 *
 * **Commit rules** (`FlushRows`): success needs the answered offset to equal the requested one;
 * `ALREADY_EXISTS` / `OFFSET_ALREADY_EXISTS` is success (flushed before: a re-commit); transient
 * codes, and a masked `PERMISSION_DENIED` under `CREATE_IF_NEEDED`, are retried on the recovery
 * budget; `NOT_FOUND` and the rest are terminal. A stream already flushed to the same offset by this
 * writer is not flushed again.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, RequestRejected, RetriesExhausted } from "../../../BigQuery/BigQueryError.ts"
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import type { Participant } from "../../checkpoint/protocol.ts"
import { hotSpan } from "../../core/hotSpan.ts"
import { toScheduleOf } from "../../core/retrySchedule.ts"
import { Code, name as codeName } from "../../wire/grpcStatus.ts"
import type { Settings } from "../options.ts"
import type { OwnerView } from "../storageWrite/backend.ts"
import type * as Destination from "../storageWrite/destination.ts"
import { isTransient, StorageCode } from "../transport/classify.ts"
import type { StreamFailure } from "../transport/connection.ts"
import * as WriteStreams from "../transport/writeStreams.ts"
import type { Restored, Streams } from "./stream.ts"

/**
 * One commit: flush `stream` (of `destination`, `p.d.t`) up to `offset`, inclusive.
 *
 * @internal
 */
export const Commit = Schema.Struct({
  destination: Schema.String,
  stream: Schema.String,
  offset: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
})

/** @internal */
export type Commit = typeof Commit.Type

/**
 * Runs `f` on the owner fiber with the open destinations, or fails with the core's failure: an owner
 * that failed after the drain drops the question, and the answer never comes.
 */
const onOwner = Effect.fnUntraced(
  function*<X, E>(owner: OwnerView<E>, f: (destinations: ReadonlyMap<string, Destination.Destination>) => X) {
    const done = yield* Deferred.make<X>()
    yield* owner.offer(Effect.suspend(() => Effect.asVoid(Deferred.succeed(done, f(owner.destinations)))))
    return yield* Effect.raceFirst(Deferred.await(done), owner.failure)
  }
)

/** The commits of every destination whose stream has rows; each marked prepared (evictable once equal). */
const prepared = (
  destinations: ReadonlyMap<string, Destination.Destination>,
  streams: Streams
): ReadonlyArray<Commit> => {
  const commits: Array<Commit> = []
  for (const d of destinations.values()) {
    const b = streams.get(d)
    if (b === undefined || b.nextOffset === 0) continue
    b.prepared = { name: b.name, offset: b.nextOffset }
    commits.push({ destination: d.key, stream: b.name, offset: b.nextOffset - 1 })
  }
  return commits
}

/**
 * The verdict on a failed `FlushRows` (the commit rules above):
 *
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

const flushError = (commit: Commit, detail: string, code: number | undefined, cause: unknown, attempts?: number) =>
  new BigQueryError({
    reason: attempts === undefined
      ? new RequestRejected({
        method: "FlushRows",
        destination: commit.destination,
        code: codeName(code),
        detail: `${commit.stream} at offset ${commit.offset}: ${detail}`,
        cause
      })
      : new RetriesExhausted({
        method: "FlushRows",
        destination: commit.destination,
        attempts,
        code: codeName(code),
        detail: `${commit.stream} at offset ${commit.offset}: ${detail}`,
        cause
      })
  })

/** A failed `FlushRows`, and whether the commit rules retry it. */
interface Failed {
  readonly failure: StreamFailure
  readonly retry: boolean
}

/**
 * `FlushRows` of one commit under the commit rules. bqemulator 1.4.0 takes the offset as exclusive
 * (rows below it become visible) and answers a flush at or below the flushed offset `OUT_OF_RANGE`
 * "already flushed": with `client.emulator` the request is `offset + 1` and that answer is success
 * (pinned by test/integration/bigquery/bufferedStreams.test.ts).
 *
 * @internal
 */
export const flush = Effect.fnUntraced(
  function*<A, E, R>(client: BigQueryClientService, settings: Settings<A, E, R>, commit: Commit) {
    const requested = client.emulator === true ? commit.offset + 1 : commit.offset
    let attempts = 0
    const attempt = WriteStreams.flushRows(client.write, commit.stream, requested, settings.stream.adminTimeout).pipe(
      Effect.matchEffect({
        onSuccess: (answered): Effect.Effect<void, BigQueryError | Failed> =>
          answered === requested
            ? Effect.void
            : Effect.fail(flushError(commit, `FlushRows answered offset ${answered}`, Code.OK, undefined)),
        onFailure: (f) => {
          attempts++
          if (client.emulator === true && f.code === Code.OUT_OF_RANGE && f.message.includes("already flushed")) {
            return Effect.void
          }
          const verdict = classifyFlush(f.code, f.storageCode, settings.createDisposition)
          return verdict === "flushed" ? Effect.void : Effect.fail({ failure: f, retry: verdict === "retry" })
        }
      })
    )
    // the schedule's input is each failure as the error the commit ends with if it stops there
    const typed = (e: BigQueryError | Failed) =>
      e instanceof BigQueryError
        ? e
        : flushError(commit, e.failure.message, e.failure.code, e.failure.cause, e.retry ? attempts : undefined)
    return yield* attempt.pipe(
      Effect.retry({
        schedule: toScheduleOf(settings.stream.recovery, typed),
        while: (e) => !(e instanceof BigQueryError) && e.retry
      }),
      Effect.mapError(typed)
    )
  },
  (effect, _client, _settings, commit) =>
    effect.pipe(hotSpan("BigQuerySink.flushRows", {
      "bigquery.destination": commit.destination,
      "bigquery.offset": commit.offset
    }))
)

/** The sizes of a participant's per-stream state. @internal */
export interface Sizes {
  readonly flushed: number
  readonly restored: number
}

/**
 * The participant of one writer. `restored` is filled by `restore` before any write, and read when
 * a destination opens.
 *
 * @internal
 */
export const make = <A, E, R, EC>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  owner: () => OwnerView<EC>,
  restored: Map<string, Restored>,
  streams: Streams
): Participant<Commit, BigQueryError | EC> & { readonly sizes: () => Sizes } => {
  // what this writer flushed, by stream: a checkpoint with nothing new there does not flush it again
  const flushed = new Map<string, number>()
  return {
    sizes: () => ({ flushed: flushed.size, restored: restored.size }),
    commitSchema: Commit,
    prepare: Effect.suspend(() => onOwner(owner(), (destinations) => prepared(destinations, streams))),
    commit: (commits) =>
      Effect.forEach(commits, (commit) =>
        flushed.get(commit.stream) === commit.offset
          ? Effect.void
          : Effect.tap(
            flush(client, settings, commit),
            () => Effect.sync(() => void flushed.set(commit.stream, commit.offset))
          ), { discard: true }).pipe(
          // a stream no longer named (its destination evicted) is never flushed again: forget it
          Effect.tap(() =>
            Effect.sync(() => {
              const named = new Set(commits.map((c) => c.stream))
              for (const stream of flushed.keys()) if (!named.has(stream)) flushed.delete(stream)
            })
          )
        ),
    restore: (commits) =>
      Effect.sync(() => {
        for (const c of commits) restored.set(c.destination, { stream: c.stream, nextOffset: c.offset + 1 })
      })
  }
}
