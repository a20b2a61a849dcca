/**
 * How the BigQuery sink writes: `AtLeastOnce` on each table's Storage Write `_default` stream,
 * `ExactlyOnce` on buffered streams flushed at checkpoints, or `FileLoads` (Avro files staged in Cloud
 * Storage, loaded by load jobs), each with its own options, so options of one method cannot be given
 * to another.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import * as method from "../internal/options/writeMethod.ts"
import type { RetryPolicyInput } from "../Sink/RetryPolicy.ts"
import type { WriteMethodOf, WriterOptions } from "../Sink/SinkOptions.ts"
import type { CdcOptions } from "./Cdc.ts"

/**
 * The options of {@link atLeastOnce}, each with its default: the shared
 * {@link WriterOptions} plus what only BigQuery has.
 *
 * **Details**
 *
 * - `maxAppendRequestBytes` (512 KiB): the most a batch holds; at most 9 MiB, so a request stays
 *   under the service's 10 MB limit. Rows never wait for a batch to fill: a table with no append in
 *   flight sends what it has at once, and rows are batched only while one of its appends is out (its
 *   answer sends them), so at a low rate each row is sent within about one round trip. A row larger
 *   than this (but at most 9 MiB) is sent alone.
 * - `maxInFlightRequests` (100), `maxInFlightBytes` (100 MiB, at least `maxAppendRequestBytes`, or
 *   a batch could never fill): writer-global bounds on appends awaiting their response; admission
 *   waits when either is reached.
 * - `retry` (`{ initialBackoff: "500 millis", maxBackoff: "30 seconds", maxAttempts: 5, multiplier: 2,
 *   maxDuration: "5 minutes" }`): the retries of an in-band transient error on the same connection
 *   (what the Java SDK does before the writer sees the failure), ±25 % jitter. A
 *   `RetryPolicy.fromSchedule(schedule)` replaces it with your own `Schedule`.
 * - `recovery` (`{ initialBackoff: "500 millis", maxBackoff: "10 seconds", maxAttempts: 10 }`): the
 *   writer-level budget for re-appending a batch after a transient or stale-connection failure, or
 *   a missing table that was created, ±25 % jitter.
 * - `responseTimeout` (5 min, at least 1 ms): an append without a response for this long counts as
 *   `DEADLINE_EXCEEDED` on a stale connection (rebuilt, batch re-appended on `recovery`).
 * - `adminTimeout` (1 min, at least 1 ms): the deadline of each `GetWriteStream` and REST tables
 *   get / insert / patch call, retried on `recovery`.
 * - `destinationIdleTimeout` (1 h, positive): a destination idle for longer and with nothing in
 *   flight is closed at the next flush and reopened on demand.
 * - `flushInterval` (unset): a timer barrier in `BigQuerySink.make` (the failure handler's flush,
 *   e.g. a dead-letter sink's); at least 1 ms, on a fixed rate (a barrier that outlasts the interval
 *   is followed at once by the next). Rows do not wait for it: they are sent as above, so with or
 *   without it a row is sent within the interval plus one round trip, for as long as the stream runs.
 * - `perDestinationMetrics` (false): adds a `destination` attribute to the record counters.
 * - `cdc` (unset): change data capture (`Cdc.CdcOptions`): each row carries `_CHANGE_TYPE` (and
 *   `_CHANGE_SEQUENCE_NUMBER`) and BigQuery applies it by the table's primary key; the tables are
 *   provisioned and verified first (`CdcTableOptions`). `A` is the sink's element type.
 *
 * Connections: destinations' AppendRows streams are spread over HTTP/2 connections by the
 * client's `appendStreamsPerChannel` (each connection carries at most that many), so there is no
 * per-region connection count.
 *
 * @category models
 * @since 0.1.0
 */
export interface AtLeastOnceOptions<A = unknown> extends WriterOptions {
  readonly maxAppendRequestBytes?: number | undefined
  readonly maxInFlightRequests?: number | undefined
  readonly cdc?: CdcOptions<A> | undefined
}

/**
 * At-least-once appends to each table's `_default` stream: rows are committed when acknowledged;
 * a batch whose outcome was lost is appended again, so duplicates are possible, losses are not.
 *
 * @category models
 * @since 0.1.0
 */
export interface AtLeastOnce<A = unknown> extends WriteMethodOf<"AtLeastOnce", "bigquery", AtLeastOnceOptions<A>> {}

/**
 * The options of {@link exactlyOnce}, each with its default.
 *
 * **Details**
 *
 * - `maxAppendRequestBytes` (512 KiB, at most 9 MiB): batches are cut by bytes and appended at
 *   explicit offsets.
 * - `maxInFlightBytes` (16 × `maxAppendRequestBytes`: 8 MiB by default; at least
 *   `maxAppendRequestBytes`): writer-global bound on rows admitted and not yet acknowledged
 *   (batched, held behind a restored stream's probe, or in flight); admission waits when it is
 *   reached. A destination pipelines its appends within it, so it is what covers the round trip to
 *   BigQuery; a checkpoint first drains all of it. Raise it when many destinations are written at
 *   once (each needs room for its own batches) or the round trip is long.
 * - `destinationIdleTimeout` (1 h, positive): a destination idle for longer, with nothing in flight
 *   and nothing written since the last checkpoint, is closed (its stream is not finalized); a later
 *   record opens a new stream.
 * - `recovery` (`{ initialBackoff: "500 millis", maxBackoff: "10 seconds", maxAttempts: 10 }`): stream
 *   creation, re-appends at the same offset, the restore probe and `FlushRows` retries.
 * - `retry` (as `atLeastOnce`): in-band transient errors re-sent on the same connection.
 *
 * No request-count, flush-interval or metric knobs: each append is stamped with its offset when it is
 * sent (pipelined, and restamped after a rejection before it); rows become visible at checkpoints.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnceOptions {
  readonly maxAppendRequestBytes?: number | undefined
  readonly maxInFlightBytes?: number | undefined
  readonly destinationIdleTimeout?: Duration.Input | undefined
  readonly retry?: RetryPolicyInput | undefined
  readonly recovery?: RetryPolicyInput | undefined
}

/**
 * Exactly-once appends to one BUFFERED stream per destination, flushed (`FlushRows`) by each
 * checkpoint after the checkpoint's record is saved: `BigQuerySink.make` and `writer` take it with
 * a `checkpoint` option.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExactlyOnce extends WriteMethodOf<"ExactlyOnce", "bigquery", ExactlyOnceOptions> {}

/**
 * The options of {@link fileLoads}, each with its default.
 *
 * **Details**
 *
 * - `stagingPath` (required): `gs://bucket[/prefix]` (lowercase scheme; a trailing `/` is dropped)
 *   where files are staged, as `<prefix>/<writerId>/<project.dataset.table>/<run>-<seq>.avro`.
 * - `writeDisposition` (`WRITE_APPEND`): or `WRITE_TRUNCATE` (data and schema replaced),
 *   `WRITE_TRUNCATE_DATA` (data replaced, schema kept), `WRITE_EMPTY` (fails unless empty). These
 *   three only in a sink without `checkpoint.every`, which loads once, at the end of input (each
 *   checkpoint loads, so a second would replace the first one's rows).
 * - `tempDataset` (the destination's dataset): where temp tables of large commits go.
 * - `maxStagingFileBytes` (16 MiB): a staged file is closed once its rows' serialized sizes reach
 *   this (uncompressed: the deflated file is smaller).
 * - `stagingFormat` (`AVRO`): the only format for now: Avro's logical types load every BigQuery
 *   type exactly (`PARQUET` is refused).
 * - `poll` (`{ initialBackoff: "1 second", maxBackoff: "30 seconds" }`, no attempt cap): the waits
 *   between load-job status reads; `RetryPolicy.fromSchedule(schedule)` gives your own `Schedule`,
 *   whose input for each read that finds the job still running is the `BigQueryError`
 *   (`FileLoadFailed` `load`, naming the job) the commit fails with if the schedule ends there.
 * - `reconcile` (`{ initialBackoff: "500 millis", maxBackoff: "10 seconds", maxAttempts: 10 }`):
 *   the budget of table creation and schema reconciliation before a load, of transient `jobs.get` /
 *   `jobs.insert` / `datasets.get` failures and of the deletes of staged objects after a load, and of
 *   looking up again a job this sink inserted that
 *   `jobs.get` answers 404 for (then `FileLoadFailed` naming the job; it is never counted as run).
 *   A schedule's input is each failure as the `BigQueryError` it would end as (`FileLoadFailed`,
 *   `TableAdminFailed`; `FileLoadFailed` `cleanup` for a failed delete, which is only logged).
 *   Jobs run in the client's `location`, else the destination dataset's.
 * - `adminTimeout` (1 min, at least 1 ms): the deadline of each REST call of a load (`jobs.get` /
 *   `insert`, `datasets.get`, `tables.*`, object deletes; one unanswered is retried on `reconcile`),
 *   and how long a staging upload may take no bytes or leave its final request unanswered (then
 *   `FileLoadFailed` `stage`).
 * - `perDestinationMetrics` (false): adds a `destination` attribute to the record counters.
 * - Backpressure: a write waits while staged rows of `4 × maxStagingFileBytes` are not yet uploaded;
 *   then every open file is closed (as at each `flush`), and the write goes on once they are.
 *
 * @category models
 * @since 0.1.0
 */
export interface FileLoadsOptions {
  readonly stagingPath: string
  readonly writeDisposition?: "WRITE_APPEND" | "WRITE_TRUNCATE" | "WRITE_TRUNCATE_DATA" | "WRITE_EMPTY" | undefined
  readonly tempDataset?: string | undefined
  readonly maxStagingFileBytes?: number | undefined
  readonly stagingFormat?: "AVRO" | undefined
  readonly poll?: RetryPolicyInput | undefined
  readonly reconcile?: RetryPolicyInput | undefined
  readonly adminTimeout?: Duration.Input | undefined
  readonly perDestinationMetrics?: boolean | undefined
}

/**
 * File loads: records are staged as Avro files in Cloud Storage and loaded by load
 * jobs with deterministic ids, at each checkpoint and at the end of input: no streaming charges, and
 * a re-run re-attaches to the jobs of the same files instead of loading them twice. `BigQuerySink.make`
 * and `writer` take it with a `checkpoint` option.
 *
 * @category models
 * @since 0.1.0
 */
export interface FileLoads extends WriteMethodOf<"FileLoads", "bigquery", FileLoadsOptions> {}

/**
 * How `BigQuerySink.make` and `writer` write: {@link AtLeastOnce} (the default), {@link ExactlyOnce}
 * or {@link FileLoads}; the last two need the sink's `checkpoint` option.
 *
 * @category models
 * @since 0.1.0
 */
export type WriteMethod<A = unknown> = AtLeastOnce<A> | ExactlyOnce | FileLoads

/**
 * The default write method, with optional {@link AtLeastOnceOptions} (validated when the sink is
 * built, errors naming `writeMethod.<option>`).
 *
 * **Example** (Smaller requests, fewer in flight)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * const method = WriteMethod.atLeastOnce({
 *   maxAppendRequestBytes: 256 * 1024,
 *   maxInFlightRequests: 20,
 *   retry: { initialBackoff: "100 millis", maxBackoff: "5 seconds", maxAttempts: 8 }
 * })
 * method._tag
 * // => "AtLeastOnce"
 * ```
 *
 * **Example** (Change data capture)
 * ```ts
 * import { Cdc, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * const upserts = WriteMethod.atLeastOnce<{ readonly id: number }>({
 *   cdc: { changeType: Cdc.upsertOnly(), tableOptions: { primaryKey: ["id"] } }
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const atLeastOnce = <A = unknown>(options?: AtLeastOnceOptions<A>): AtLeastOnce<A> =>
  method.make("AtLeastOnce", "bigquery", options ?? {})

/**
 * The exactly-once write method, with optional {@link ExactlyOnceOptions} (validated when the sink
 * is built, errors naming `writeMethod.<option>`; an option of another method is rejected).
 *
 * **Example** (Larger requests)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * const method = WriteMethod.exactlyOnce({ maxAppendRequestBytes: 1024 * 1024 })
 * method._tag
 * // => "ExactlyOnce"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const exactlyOnce = (options?: ExactlyOnceOptions): ExactlyOnce =>
  method.make("ExactlyOnce", "bigquery", options ?? {})

/**
 * The file-loads write method with its {@link FileLoadsOptions} (validated when the sink is built,
 * errors naming `writeMethod.<option>`; an option of another method is rejected).
 *
 * **Example** (Staging under a prefix, replacing the table's data)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * const method = WriteMethod.fileLoads({
 *   stagingPath: "gs://my-staging/loads",
 *   writeDisposition: "WRITE_TRUNCATE_DATA"
 * })
 * method._tag
 * // => "FileLoads"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fileLoads = (options: FileLoadsOptions): FileLoads => method.make("FileLoads", "bigquery", options)

/**
 * Tells whether a value is a {@link WriteMethod}.
 *
 * **Example** (Checking an untyped value)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * WriteMethod.isWriteMethod(WriteMethod.atLeastOnce())
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isWriteMethod: (u: unknown) => u is WriteMethod = method.guard<WriteMethod>("bigquery", [
  "AtLeastOnce",
  "ExactlyOnce",
  "FileLoads"
])

/**
 * Tells whether a value is an {@link ExactlyOnce} method.
 *
 * **Example** (Checking an untyped value)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * WriteMethod.isExactlyOnce(WriteMethod.exactlyOnce())
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isExactlyOnce: (u: unknown) => u is ExactlyOnce = method.guard<ExactlyOnce>("bigquery", ["ExactlyOnce"])

/**
 * Tells whether a value is a {@link FileLoads} method.
 *
 * **Example** (Checking an untyped value)
 * ```ts
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * WriteMethod.isFileLoads(WriteMethod.fileLoads({ stagingPath: "gs://b" }))
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isFileLoads: (u: unknown) => u is FileLoads = method.guard<FileLoads>("bigquery", ["FileLoads"])
