/**
 * The option vocabulary both sinks share: one spelling and one shape for the destination, the
 * failure handler, and the writer tuning every write method carries. `BigQuerySinkOptions` and
 * `BigtableSinkOptions` extend these; what only one backend has stays in its own module.
 *
 * **Defaults side by side**
 *
 * | option | BigQuery | Bigtable |
 * |---|---|---|
 * | `createDisposition` | `"CREATE_IF_NEEDED"` (the serializer knows the schema) | `"CREATE_NEVER"` (the sink cannot guess column families; `CREATE_IF_NEEDED` needs `tableCreateOptions`) |
 * | `failureHandler` | `FailureHandler.failJob` | `FailureHandler.failJob` |
 * | `writeMethod` | `WriteMethod.atLeastOnce()` | `WriteMethod.atLeastOnce()` |
 * | `maxInFlightBytes` | 100 MiB | 64 MiB |
 * | in-flight count | `maxInFlightRequests` 100 | `maxInFlightEntries` 1000 |
 * | `retry` | 500 ms → 30 s, 5 attempts, ×2, at most 5 min | 10 ms → 1 min, 15 attempts, ×2 |
 * | `recovery` | 500 ms → 10 s, 10 attempts | 500 ms → 10 s, 10 attempts |
 * | `responseTimeout` | 5 min | 1 min |
 * | `adminTimeout` | 1 min | 1 min |
 * | `destinationIdleTimeout` | 1 h | 1 h |
 * | `flushInterval` | unset | unset |
 * | `perDestinationMetrics` | false | false |
 *
 * Every option is decoded with `Schema` when the sink is built, before any I/O: a wrong type, an
 * unknown key, `NaN` or an infinity is a `SinkConfigError` whose `path` names the option as written
 * (`writeMethod.retry.initialBackoff`).
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type { CheckpointOptions, WriterCheckpointOptions } from "./Checkpoint.ts"
import type { CreateDisposition } from "./CreateDisposition.ts"
import type { Connector } from "./FailedElement.ts"
import type { FailureHandler, RecordFailed } from "./FailureHandler.ts"
import type { RetryPolicyInput } from "./RetryPolicy.ts"

/**
 * The tuning every write method of both sinks carries (`WriteMethod.atLeastOnce({...})` on each
 * backend), with the backend's defaults (see the module's table).
 *
 * - `maxInFlightBytes`: writer-global bound on bytes sent and not yet answered; admission waits
 *   when it is reached. An integer of at least 1.
 * - `retry`: the budget of a transient failure of one request (`UNAVAILABLE` and the like) before
 *   the writer gives up on it: {@link RetryPolicyInput} (`{ initialBackoff, maxBackoff, maxAttempts,
 *   multiplier?, maxDuration? }` or `RetryPolicy.fromSchedule(schedule)`).
 * - `recovery`: the budget of repairs: reconnecting, creating a missing table or column family,
 *   then sending again. Same shape as `retry`.
 * - `responseTimeout`: a request unanswered this long is abandoned and counts as
 *   `DEADLINE_EXCEEDED` (retried on `retry`); at least 1 ms.
 * - `adminTimeout`: the deadline of each unary control or admin call (BigQuery `GetWriteStream`,
 *   tables get/insert/patch; Bigtable table admin), classified like `DEADLINE_EXCEEDED` (retried on
 *   `recovery`); at least 1 ms. Default 1 minute, as Google's generated clients' service configs.
 * - `destinationIdleTimeout`: a destination idle this long, with nothing in flight, is released at
 *   the next flush and reopened on demand; positive.
 * - `flushInterval`: `make` also runs a barrier on this timer (every earlier record sent and
 *   answered, then the failure handler flushed); at least 1 ms; default unset (barriers at the end
 *   of the input and on `writer.flush` only). Records never wait for it: a destination with nothing
 *   in flight sends at once and batches only while a request is out, so a record written at a low
 *   rate is sent within about one round trip (under a second), with or without a timer.
 * - `perDestinationMetrics`: add a `destination` attribute to the record counters (an unbounded
 *   resolver makes unbounded series).
 *
 * @category models
 * @since 0.1.0
 */
export interface WriterOptions {
  readonly maxInFlightBytes?: number | undefined
  readonly retry?: RetryPolicyInput | undefined
  readonly recovery?: RetryPolicyInput | undefined
  readonly responseTimeout?: Duration.Input | undefined
  readonly adminTimeout?: Duration.Input | undefined
  readonly destinationIdleTimeout?: Duration.Input | undefined
  readonly flushInterval?: Duration.Input | undefined
  readonly perDestinationMetrics?: boolean | undefined
}

/**
 * The shape of every write method of both sinks: its `_tag`, the backend it belongs to
 * (`connector`: a BigQuery method given to the Bigtable sink is rejected, and the other way round)
 * and the method's own `options`. Build one with a backend's constructors
 * (`WriteMethod.atLeastOnce(...)`).
 *
 * **Example** (A BigQuery method's shape)
 * ```ts
 * import type { SinkOptions } from "effect-gcp-sinks/Sink"
 * import { WriteMethod } from "effect-gcp-sinks/BigQuery"
 * const method: SinkOptions.WriteMethodOf<"AtLeastOnce", "bigquery", WriteMethod.AtLeastOnceOptions> =
 *   WriteMethod.atLeastOnce({ maxInFlightRequests: 20 })
 * method.connector
 * // => "bigquery"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface WriteMethodOf<Tag extends string, C extends Connector, Options> {
  readonly _tag: Tag
  readonly connector: C
  readonly options: Options
}

/**
 * Where records go and what happens to a missing table, in each backend's types.
 *
 * - `table` or `destinationResolver`, exactly one: a fixed table, or a function of the record (which
 *   may declare it unroutable: routed to the failure handler).
 * - `createDisposition`: see the module's table for each backend's default.
 * - `tableCreateOptions`: how a missing table is created under `"CREATE_IF_NEEDED"`.
 *
 * @category models
 * @since 0.1.0
 */
export interface DestinationOptions<Table, Resolver, CreateOptions> {
  readonly table?: Table | undefined
  readonly destinationResolver?: Resolver | undefined
  readonly createDisposition?: CreateDisposition | undefined
  readonly tableCreateOptions?: CreateOptions | undefined
}

/**
 * Where per-record failures go: `failureHandler`, default `FailureHandler.failJob`. Its error type
 * `E` is the write's: `RecordFailed` without a handler, the handler's own otherwise (`never` for
 * `FailureHandler.logAndDrop`).
 *
 * @category models
 * @since 0.1.0
 */
export interface FailureOptions<F, E = RecordFailed, R = never> {
  readonly failureHandler?: FailureHandler<F, E, R> | undefined
}

/**
 * What both sinks' options have in common: destination, failure handler and write method.
 *
 * @category models
 * @since 0.1.0
 */
export interface SinkOptions<F, E, R, Table, Resolver, CreateOptions, Method>
  extends DestinationOptions<Table, Resolver, CreateOptions>, FailureOptions<F, E, R>
{
  readonly writeMethod?: Method | undefined
}

/**
 * The error type a failure handler adds to a write: its `E`, or `RecordFailed` when no handler is
 * given (the default `FailureHandler.failJob`). A handler that may be absent (`H | undefined`)
 * adds both.
 *
 * **Example** (The three cases)
 * ```ts
 * import type { FailureHandler, RecordFailed, SinkOptions } from "effect-gcp-sinks/Sink"
 * type None = SinkOptions.HandlerError<undefined> // RecordFailed
 * type Drop = SinkOptions.HandlerError<FailureHandler<unknown>> // never
 * type Maybe = SinkOptions.HandlerError<FailureHandler<unknown, Error> | undefined> // Error | RecordFailed
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type HandlerError<H> = H extends FailureHandler<never, infer E, unknown> ? E : RecordFailed

/**
 * The services a failure handler needs (`never` without one).
 *
 * @category models
 * @since 0.1.0
 */
export type HandlerContext<H> = H extends FailureHandler<never, unknown, infer R> ? R : never

/**
 * A sink's options with the failure handler's type captured as `H`, so that one generic
 * signature of `make` and `writer` gives the write's error exactly: `RecordFailed` without a
 * handler, `never` with `FailureHandler.logAndDrop`, a custom handler's own error, and both for
 * a handler that may be `undefined`.
 *
 * @category models
 * @since 0.1.0
 */
export type WithFailureHandler<O, H> = Omit<O, "failureHandler"> & { readonly failureHandler?: H }

/**
 * A write method's options in the form a backend's `writer` takes: `checkpoint` without `every`,
 * since the caller checkpoints with `writer.checkpoint(position)`. Options without a `checkpoint`
 * are unchanged.
 *
 * **Example** (The writer form of Bigtable's exactly-once options)
 * ```ts
 * import type { BigtableSink } from "effect-gcp-sinks/Bigtable"
 * import type { SinkOptions } from "effect-gcp-sinks/Sink"
 * type Options = SinkOptions.WriterForm<BigtableSink.ExactlyOnceSinkOptions<{ readonly n: number }, number>>
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type WriterForm<O> = O extends { readonly checkpoint: CheckpointOptions<infer A, infer P> }
  ? Omit<O, "checkpoint"> & { readonly checkpoint: WriterCheckpointOptions<A, P> }
  : O
