/**
 * Decoding and validating `BigQuerySink` options into the writer's settings (cf. Go's
 * `options.go`), every failure a `SinkConfigError` naming the option as written, before any I/O.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as AdditionalFields from "../../BigQuery/AdditionalFields.ts"
import type { BigQueryFailure } from "../../BigQuery/BigQueryFailure.ts"
import type { RowSerializer } from "../../BigQuery/RowSerializer.ts"
import * as SchemaUpdateOptions from "../../BigQuery/SchemaUpdateOptions.ts"
import * as TableCreateOptions from "../../BigQuery/TableCreateOptions.ts"
import * as TableDestination from "../../BigQuery/TableDestination.ts"
import * as WriteMethod from "../../BigQuery/WriteMethod.ts"
import type { CreateDisposition } from "../../Sink/CreateDisposition.ts"
import { FailureHandler, type RecordFailed } from "../../Sink/FailureHandler.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as check from "../optionChecks.ts"
import type { Policy } from "../retrySchedule.ts"
import { maxRowBytes } from "./appendRequest.ts"

/** The options of the sink, as `BigQuerySink` documents them. @internal */
export interface SinkOptions<A, E, R> {
  readonly table?: TableDestination.TableDestination | undefined
  readonly destinationResolver?: TableDestination.DestinationResolver<A> | undefined
  readonly serializer: RowSerializer<A>
  readonly writeMethod?: WriteMethod.WriteMethod | undefined
  readonly createDisposition?: CreateDisposition | undefined
  readonly tableCreateOptions?:
    | TableCreateOptions.TableCreateOptionsInput
    | ((destination: TableDestination.TableDestination) => TableCreateOptions.TableCreateOptions)
    | undefined
  readonly schemaUpdate?:
    | { readonly allowNewFields?: boolean | undefined; readonly allowFieldRelaxation?: boolean | undefined }
    | undefined
  readonly additionalFields?: AdditionalFields.AdditionalFields<A> | undefined
  readonly failureHandler?: FailureHandler<BigQueryFailure, E, R> | undefined
}

/** The decoded `DefaultStreamOptions`. @internal */
export interface StreamSettings {
  readonly maxAppendRequestBytes: number
  /** Reconnects, table creation and what `retry` gave up on (reference 2.5). */
  readonly recovery: Policy
  /** Re-sends of an in-band transient error on the same connection (the SDK's retry settings). */
  readonly retry: Policy
  readonly maxInflightRequests: number
  readonly maxInflightBytes: number
  readonly destinationIdleTimeout: Duration.Duration
  readonly flushInterval: Duration.Duration | undefined
  readonly responseTimeout: Duration.Duration
  readonly perDestinationMetrics: boolean
}

/** Everything the writer needs. @internal */
export interface Settings<A, E, R> {
  readonly resolve: TableDestination.DestinationResolver<A>
  /** The serializer rows are written with: `baseSerializer` augmented with `additionalFields`. */
  readonly serializer: RowSerializer<A>
  /** The user's serializer, whose schema `additionalFields` extend per destination. */
  readonly baseSerializer: RowSerializer<A>
  readonly additionalFields: AdditionalFields.AdditionalFields<A> | undefined
  readonly createDisposition: CreateDisposition
  readonly createOptions: (destination: TableDestination.TableDestination) => TableCreateOptions.TableCreateOptions
  readonly schemaUpdate: SchemaUpdateOptions.SchemaUpdateOptions
  readonly failureHandler: FailureHandler<BigQueryFailure, E, R>
  readonly stream: StreamSettings
}

const KiB = 1024
const MiB = 1024 * KiB

/** The defaults of `DefaultStreamOptions` (reference 2.5). @internal */
export const streamDefaults = {
  maxAppendRequestBytes: 512 * KiB,
  recoveryInitialBackoff: Duration.millis(500),
  recoveryMaxBackoff: Duration.seconds(10),
  recoveryMaxAttempts: 10,
  retryInitialDelay: Duration.millis(500),
  retryDelayMultiplier: 2,
  retryMaxDelay: Duration.seconds(30),
  retryMaxAttempts: 5,
  maxRetryDuration: Duration.minutes(5),
  maxInflightRequests: 100,
  maxInflightBytes: 100 * MiB,
  minConnectionsPerRegion: 2,
  maxConnectionsPerRegion: 20,
  destinationIdleTimeout: Duration.hours(1),
  responseTimeout: Duration.minutes(5),
  perDestinationMetrics: false
} as const

const intOr = (path: string, value: unknown, fallback: number, bounds: Parameters<typeof check.integer>[2]) =>
  value === undefined ? Effect.succeed(fallback) : check.integer(path, value, bounds)

const durationOr = (path: string, value: unknown, fallback: Duration.Duration, rule: check.DurationRule) =>
  value === undefined ? Effect.succeed(fallback) : check.duration(path, value, rule)

const atLeast = (
  path: string,
  value: Duration.Duration,
  lowerName: string,
  lower: Duration.Duration
): Effect.Effect<void, SinkConfigError> =>
  Duration.isLessThan(value, lower)
    ? check.fail(path, `must be at least ${lowerName} (${Duration.format(lower)}), was ${Duration.format(value)}`)
    : Effect.void

/** @internal */
export const decodeStreamOptions = (
  options: WriteMethod.DefaultStreamOptions,
  path = "writeMethod"
): Effect.Effect<StreamSettings, SinkConfigError> =>
  Effect.gen(function*() {
    if (!isRecord(options)) {
      return yield* check.fail(path, `its options must be an object, was ${check.describe(options)}`)
    }
    const o: WriteMethod.DefaultStreamOptions = options
    const d = streamDefaults
    const maxAppendRequestBytes = yield* intOr(
      `${path}.maxAppendRequestBytes`,
      o.maxAppendRequestBytes,
      d.maxAppendRequestBytes,
      { min: 1, max: maxRowBytes }
    )
    const recoveryInitialBackoff = yield* durationOr(
      `${path}.recoveryInitialBackoff`,
      o.recoveryInitialBackoff,
      d.recoveryInitialBackoff,
      "atLeastOneMilli"
    )
    const recoveryMaxBackoff = yield* durationOr(
      `${path}.recoveryMaxBackoff`,
      o.recoveryMaxBackoff,
      d.recoveryMaxBackoff,
      "atLeastOneMilli"
    )
    yield* atLeast(`${path}.recoveryMaxBackoff`, recoveryMaxBackoff, "recoveryInitialBackoff", recoveryInitialBackoff)
    const recoveryMaxAttempts = yield* intOr(
      `${path}.recoveryMaxAttempts`,
      o.recoveryMaxAttempts,
      d.recoveryMaxAttempts,
      { min: 1 }
    )
    const retryInitialDelay = yield* durationOr(
      `${path}.retryInitialDelay`,
      o.retryInitialDelay,
      d.retryInitialDelay,
      "atLeastOneMilliOrZero"
    )
    const retryDelayMultiplier: unknown = o.retryDelayMultiplier ?? d.retryDelayMultiplier
    if (!Predicate.isNumber(retryDelayMultiplier) || !(retryDelayMultiplier >= 1) || !isFinite(retryDelayMultiplier)) {
      return yield* check.fail(
        `${path}.retryDelayMultiplier`,
        `must be a finite number of at least 1.0, was ${check.describe(retryDelayMultiplier)}`
      )
    }
    const retryMaxDelay = yield* durationOr(
      `${path}.retryMaxDelay`,
      o.retryMaxDelay,
      d.retryMaxDelay,
      "atLeastOneMilliOrZero"
    )
    yield* atLeast(`${path}.retryMaxDelay`, retryMaxDelay, "retryInitialDelay", retryInitialDelay)
    const retryMaxAttempts = yield* intOr(`${path}.retryMaxAttempts`, o.retryMaxAttempts, d.retryMaxAttempts, {
      min: 1
    })
    const maxRetryDuration = yield* durationOr(
      `${path}.maxRetryDuration`,
      o.maxRetryDuration,
      d.maxRetryDuration,
      "atLeastOneMilliOrZero"
    )
    const maxInflightRequests = yield* intOr(
      `${path}.maxInflightRequests`,
      o.maxInflightRequests,
      d.maxInflightRequests,
      { min: 1 }
    )
    const maxInflightBytes = yield* intOr(`${path}.maxInflightBytes`, o.maxInflightBytes, d.maxInflightBytes, {
      min: 1
    })
    const minConnections = yield* intOr(
      `${path}.minConnectionsPerRegion`,
      o.minConnectionsPerRegion,
      d.minConnectionsPerRegion,
      { min: 1 }
    )
    const maxConnections = yield* intOr(
      `${path}.maxConnectionsPerRegion`,
      o.maxConnectionsPerRegion,
      d.maxConnectionsPerRegion,
      { min: 1 }
    )
    if (maxConnections < minConnections) {
      return yield* check.fail(
        `${path}.maxConnectionsPerRegion`,
        `must be at least minConnectionsPerRegion (${minConnections}), was ${maxConnections}`
      )
    }
    const destinationIdleTimeout = yield* durationOr(
      `${path}.destinationIdleTimeout`,
      o.destinationIdleTimeout,
      d.destinationIdleTimeout,
      "positive"
    )
    const flushInterval = o.flushInterval === undefined
      ? undefined
      : yield* check.duration(`${path}.flushInterval`, o.flushInterval, "atLeastOneMilli")
    const responseTimeout = yield* durationOr(
      `${path}.responseTimeout`,
      o.responseTimeout,
      d.responseTimeout,
      "atLeastOneMilli"
    )
    const perDestinationMetrics = o.perDestinationMetrics === undefined
      ? d.perDestinationMetrics
      : yield* check.boolean(`${path}.perDestinationMetrics`, o.perDestinationMetrics)
    return {
      maxAppendRequestBytes,
      recovery: {
        initialBackoff: recoveryInitialBackoff,
        maxBackoff: recoveryMaxBackoff,
        maxAttempts: recoveryMaxAttempts
      },
      retry: {
        initialBackoff: retryInitialDelay,
        // 0 = no cap, 0 = no limit
        maxBackoff: Duration.isZero(retryMaxDelay) ? Duration.infinity : retryMaxDelay,
        maxAttempts: retryMaxAttempts,
        multiplier: retryDelayMultiplier,
        maxDuration: Duration.isZero(maxRetryDuration) ? undefined : maxRetryDuration
      },
      maxInflightRequests,
      maxInflightBytes,
      destinationIdleTimeout,
      flushInterval,
      responseTimeout,
      perDestinationMetrics
    }
  })

const isRecord = (u: unknown): u is Record<string, unknown> => Predicate.isObject(u) && !Array.isArray(u)

const isFailureHandler = (u: unknown): boolean =>
  isRecord(u) && Predicate.isFunction(u.handle) && Effect.isEffect(u.open) && Effect.isEffect(u.flush) &&
  Effect.isEffect(u.close)

const decodeDestination = <A>(
  table: unknown,
  destinationResolver: TableDestination.DestinationResolver<A> | undefined
): Effect.Effect<
  {
    readonly resolve: TableDestination.DestinationResolver<A>
    readonly fixed: TableDestination.TableDestination | undefined
  },
  SinkConfigError
> =>
  Effect.gen(function*() {
    if (table !== undefined && destinationResolver !== undefined) {
      return yield* check.fail("destinationResolver", "set either table or destinationResolver, not both")
    }
    if (table !== undefined) {
      if (!(table instanceof TableDestination.TableDestination)) {
        return yield* check.fail(
          "table",
          `must be a TableDestination (TableDestination.make), was ${check.describe(table)}`
        )
      }
      // a TableDestination built with `new` skipped TableDestination.make's checks
      yield* check.component("table.projectId", table.projectId)
      yield* check.component("table.datasetId", table.datasetId)
      yield* check.component("table.tableId", table.tableId)
      return { resolve: TableDestination.fixed(table), fixed: table }
    }
    if (destinationResolver !== undefined) {
      if (!Predicate.isFunction(destinationResolver)) {
        return yield* check.fail(
          "destinationResolver",
          `must be a function, was ${check.describe(destinationResolver)}`
        )
      }
      return { resolve: destinationResolver, fixed: undefined }
    }
    return yield* check.fail("table", "a destination is required: set table or destinationResolver")
  })

const decodeCreateOptions = (
  input: SinkOptions<unknown, unknown, unknown>["tableCreateOptions"]
): Effect.Effect<
  (destination: TableDestination.TableDestination) => TableCreateOptions.TableCreateOptions,
  SinkConfigError
> =>
  Effect.gen(function*() {
    if (input === undefined) return () => TableCreateOptions.defaults
    if (Predicate.isFunction(input)) return input
    if (!isRecord(input)) {
      return yield* check.fail(
        "tableCreateOptions",
        `must be TableCreateOptions or a function of the destination, was ${check.describe(input)}`
      )
    }
    if (input.timePartitioning !== undefined && !isRecord(input.timePartitioning)) {
      return yield* check.fail(
        "tableCreateOptions.timePartitioning",
        `must be an object, was ${check.describe(input.timePartitioning)}`
      )
    }
    const fixed = yield* TableCreateOptions.make(input, "tableCreateOptions")
    return () => fixed
  })

/**
 * Validates the sink options, in the reference's order: serializer, destination, write method,
 * then the rest. Without a failure handler the default is `FailureHandler.failJob`, whose error
 * `RecordFailed` joins the handler's error type; `BigQuerySink`'s overloads narrow it away when a
 * handler is given.
 *
 * @internal
 */
export const decode = <A, E, R>(
  options: SinkOptions<A, E, R>
): Effect.Effect<Settings<A, E | RecordFailed, R>, SinkConfigError> =>
  Effect.gen(function*() {
    if (!isRecord(options)) return yield* check.fail("options", `must be an object, was ${check.describe(options)}`)
    const serializer = options.serializer
    if (
      !isRecord(serializer) || !Predicate.isFunction(serializer.serialize) ||
      !Predicate.isFunction(serializer.tableSchema)
    ) {
      return yield* check.fail("serializer", "a serializer is required (serialize and tableSchema functions)")
    }
    const { fixed, resolve } = yield* decodeDestination(options.table, options.destinationResolver)
    const method: unknown = options.writeMethod ?? WriteMethod.atLeastOnce()
    if (!WriteMethod.isWriteMethod(method)) {
      return yield* check.fail(
        "writeMethod",
        `must be a WriteMethod (WriteMethod.atLeastOnce(...)), was ${check.describe(method)}`
      )
    }
    const stream = yield* decodeStreamOptions(method.options)
    const createDisposition: unknown = options.createDisposition ?? "CREATE_IF_NEEDED"
    if (createDisposition !== "CREATE_IF_NEEDED" && createDisposition !== "CREATE_NEVER") {
      return yield* check.fail(
        "createDisposition",
        `must be CREATE_IF_NEEDED or CREATE_NEVER, was ${check.describe(createDisposition)}`
      )
    }
    const createOptions = yield* decodeCreateOptions(options.tableCreateOptions)
    if (options.schemaUpdate !== undefined && !isRecord(options.schemaUpdate)) {
      return yield* check.fail("schemaUpdate", `must be an object, was ${check.describe(options.schemaUpdate)}`)
    }
    const schemaUpdate = options.schemaUpdate === undefined
      ? SchemaUpdateOptions.defaults
      : yield* SchemaUpdateOptions.make(options.schemaUpdate, "schemaUpdate")
    let withFields: RowSerializer<A> = serializer
    let additionalFields: AdditionalFields.AdditionalFields<A> | undefined
    if (options.additionalFields !== undefined) {
      const given: unknown = options.additionalFields
      if (!isRecord(given) || !Array.isArray(given.fields)) {
        return yield* check.fail(
          "additionalFields",
          `must be AdditionalFields (AdditionalFields.make), was ${check.describe(given)}`
        )
      }
      // hand-built values skipped AdditionalFields.make's checks
      const additional = yield* AdditionalFields.make(options.additionalFields.fields, "additionalFields.fields")
      // with a fixed table the serializer's schema is known now: a colliding column fails before any I/O
      if (fixed !== undefined) yield* AdditionalFields.extendSchema(additional, serializer.tableSchema(fixed))
      withFields = AdditionalFields.augment(serializer, additional)
      additionalFields = additional
    }
    if (options.failureHandler !== undefined && !isFailureHandler(options.failureHandler)) {
      return yield* check.fail(
        "failureHandler",
        `must be a FailureHandler (open, handle, flush, close; see FailureHandler.make), was ${
          check.describe(options.failureHandler)
        }`
      )
    }
    const failureHandler: FailureHandler<BigQueryFailure, E | RecordFailed, R> = options.failureHandler ??
      FailureHandler.failJob
    return {
      resolve,
      serializer: withFields,
      baseSerializer: serializer,
      additionalFields,
      createDisposition,
      createOptions,
      schemaUpdate,
      failureHandler,
      stream
    }
  })
