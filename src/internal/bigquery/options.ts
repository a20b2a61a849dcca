/**
 * Decoding and validating `BigQuerySink` options into the writer's settings (cf. Go's
 * `options.go`), every failure a `SinkConfigError` naming the option as written, before any I/O.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as AdditionalFields from "../../BigQuery/AdditionalFields.ts"
import type { BigQueryFailure } from "../../BigQuery/BigQueryFailure.ts"
import type { RowSerializer } from "../../BigQuery/RowSerializer.ts"
import * as SchemaUpdateOptions from "../../BigQuery/SchemaUpdateOptions.ts"
import * as TableCreateOptions from "../../BigQuery/TableCreateOptions.ts"
import * as TableDestination from "../../BigQuery/TableDestination.ts"
import type { DefaultStreamOptions, WriteMethod } from "../../BigQuery/WriteMethod.ts"
import type { CreateDisposition } from "../../Sink/CreateDisposition.ts"
import { FailureHandler } from "../../Sink/FailureHandler.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import * as check from "../optionChecks.ts"
import type { Policy } from "../retrySchedule.ts"
import { maxRowBytes } from "./appendRequest.ts"

/** The options of the sink, as `BigQuerySink` documents them. @internal */
export interface SinkOptions<A, E, R> {
  readonly table?: TableDestination.TableDestination | undefined
  readonly destinationResolver?: TableDestination.DestinationResolver<A> | undefined
  readonly serializer: RowSerializer<A>
  readonly writeMethod?: WriteMethod | undefined
  readonly createDisposition?: CreateDisposition | undefined
  readonly tableCreateOptions?:
    | TableCreateOptions.TableCreateOptions
    | ((destination: TableDestination.TableDestination) => TableCreateOptions.TableCreateOptions)
    | undefined
  readonly schemaUpdate?: SchemaUpdateOptions.SchemaUpdateOptions | undefined
  readonly additionalFields?: AdditionalFields.AdditionalFields<A> | undefined
  readonly failureHandler?: FailureHandler<BigQueryFailure, E, R> | undefined
}

/** The decoded `DefaultStreamOptions`. @internal */
export interface StreamSettings {
  readonly maxAppendRequestBytes: number
  readonly recovery: Policy
  readonly retryInitialDelay: Duration.Duration
  readonly retryDelayMultiplier: number
  readonly retryMaxDelay: Duration.Duration
  readonly retryMaxAttempts: number
  readonly maxRetryDuration: Duration.Duration
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
  readonly serializer: RowSerializer<A>
  readonly createDisposition: CreateDisposition
  readonly createOptions: (destination: TableDestination.TableDestination) => TableCreateOptions.TableCreateOptions
  readonly schemaUpdate: SchemaUpdateOptions.SchemaUpdateOptions
  readonly failureHandler: FailureHandler<BigQueryFailure, E, R>
  readonly stream: StreamSettings
}

const KiB = 1024
const MiB = 1024 * KiB

/** @internal */
export const decodeStreamOptions = (
  o: DefaultStreamOptions,
  path = "writeMethod"
): Effect.Effect<StreamSettings, SinkConfigError> =>
  Effect.gen(function*() {
    const maxAppendRequestBytes = yield* check.integer(
      `${path}.maxAppendRequestBytes`,
      o.maxAppendRequestBytes ?? 512 * KiB,
      { min: 1, max: maxRowBytes }
    )
    const recoveryInitialBackoff = yield* check.duration(
      `${path}.recoveryInitialBackoff`,
      o.recoveryInitialBackoff ?? "500 millis",
      "atLeastOneMilli"
    )
    const recoveryMaxBackoff = yield* check.duration(
      `${path}.recoveryMaxBackoff`,
      o.recoveryMaxBackoff ?? "10 seconds",
      "atLeastOneMilli"
    )
    if (recoveryMaxBackoff.value < recoveryInitialBackoff.value) {
      return yield* check.fail(`${path}.recoveryMaxBackoff`, "must be at least recoveryInitialBackoff")
    }
    const recoveryMaxAttempts = yield* check.integer(`${path}.recoveryMaxAttempts`, o.recoveryMaxAttempts ?? 10, {
      min: 1
    })
    const retryInitialDelay = yield* check.duration(
      `${path}.retryInitialDelay`,
      o.retryInitialDelay ?? "500 millis",
      "atLeastOneMilliOrZero"
    )
    const retryDelayMultiplier = o.retryDelayMultiplier ?? 2
    if (!Predicate.isNumber(retryDelayMultiplier) || !(retryDelayMultiplier >= 1) || !isFinite(retryDelayMultiplier)) {
      return yield* check.fail(
        `${path}.retryDelayMultiplier`,
        `must be a finite number of at least 1.0, was ${check.describe(retryDelayMultiplier)}`
      )
    }
    const retryMaxDelay = yield* check.duration(
      `${path}.retryMaxDelay`,
      o.retryMaxDelay ?? "30 seconds",
      "atLeastOneMilliOrZero"
    )
    if (retryMaxDelay.value < retryInitialDelay.value) {
      return yield* check.fail(`${path}.retryMaxDelay`, "must be at least retryInitialDelay")
    }
    const retryMaxAttempts = yield* check.integer(`${path}.retryMaxAttempts`, o.retryMaxAttempts ?? 5, { min: 1 })
    const maxRetryDuration = yield* check.duration(
      `${path}.maxRetryDuration`,
      o.maxRetryDuration ?? "5 minutes",
      "atLeastOneMilliOrZero"
    )
    const maxInflightRequests = yield* check.integer(`${path}.maxInflightRequests`, o.maxInflightRequests ?? 100, {
      min: 1
    })
    const maxInflightBytes = yield* check.integer(`${path}.maxInflightBytes`, o.maxInflightBytes ?? 100 * MiB, {
      min: 1
    })
    const minConnections = yield* check.integer(
      `${path}.minConnectionsPerRegion`,
      o.minConnectionsPerRegion ?? 2,
      { min: 1 }
    )
    yield* check.integer(`${path}.maxConnectionsPerRegion`, o.maxConnectionsPerRegion ?? 20, { min: minConnections })
    const destinationIdleTimeout = yield* check.duration(
      `${path}.destinationIdleTimeout`,
      o.destinationIdleTimeout ?? "1 hour",
      "positive"
    )
    const flushInterval = o.flushInterval === undefined
      ? undefined
      : yield* check.duration(`${path}.flushInterval`, o.flushInterval, "atLeastOneMilli")
    const responseTimeout = yield* check.duration(
      `${path}.responseTimeout`,
      o.responseTimeout ?? "5 minutes",
      "atLeastOneMilli"
    )
    const perDestinationMetrics = yield* check.boolean(
      `${path}.perDestinationMetrics`,
      o.perDestinationMetrics ?? false
    )
    return {
      maxAppendRequestBytes,
      recovery: {
        initialBackoff: recoveryInitialBackoff,
        maxBackoff: recoveryMaxBackoff,
        maxAttempts: recoveryMaxAttempts
      },
      retryInitialDelay,
      retryDelayMultiplier,
      retryMaxDelay,
      retryMaxAttempts,
      maxRetryDuration,
      maxInflightRequests,
      maxInflightBytes,
      destinationIdleTimeout,
      flushInterval,
      responseTimeout,
      perDestinationMetrics
    }
  })

const isRecord = (u: unknown): u is Record<string, unknown> => Predicate.isObject(u) && !Array.isArray(u)

/**
 * Validates the sink options, in the reference's order: serializer, destination, write method,
 * then the rest.
 *
 * @internal
 */
export const decode = <A, E, R>(options: SinkOptions<A, E, R>): Effect.Effect<Settings<A, E, R>, SinkConfigError> =>
  Effect.gen(function*() {
    if (!isRecord(options)) return yield* check.fail("options", "must be an object")
    const serializer = options.serializer
    if (
      !isRecord(serializer) || !Predicate.isFunction(serializer.serialize) ||
      !Predicate.isFunction(serializer.tableSchema)
    ) {
      return yield* check.fail("serializer", "a serializer is required")
    }
    if (options.table !== undefined && options.destinationResolver !== undefined) {
      return yield* check.fail("destinationResolver", "set either table or destinationResolver, not both")
    }
    let resolve: TableDestination.DestinationResolver<A>
    if (options.table !== undefined) {
      if (!(options.table instanceof TableDestination.TableDestination)) {
        return yield* check.fail("table", "must be a TableDestination (TableDestination.make)")
      }
      resolve = TableDestination.fixed(options.table)
    } else if (options.destinationResolver !== undefined) {
      if (!Predicate.isFunction(options.destinationResolver)) {
        return yield* check.fail("destinationResolver", "must be a function")
      }
      resolve = options.destinationResolver
    } else {
      return yield* check.fail("table", "a destination is required: set table or destinationResolver")
    }
    const method = options.writeMethod ?? { _tag: "AtLeastOnce", options: {} }
    if (!isRecord(method) || method._tag !== "AtLeastOnce" || !isRecord(method.options)) {
      return yield* check.fail("writeMethod", "must be a WriteMethod (WriteMethod.atLeastOnce(...))")
    }
    const stream = yield* decodeStreamOptions(method.options)
    const createDisposition = options.createDisposition ?? "CREATE_IF_NEEDED"
    if (createDisposition !== "CREATE_IF_NEEDED" && createDisposition !== "CREATE_NEVER") {
      return yield* check.fail(
        "createDisposition",
        `must be CREATE_IF_NEEDED or CREATE_NEVER, was ${check.describe(createDisposition)}`
      )
    }
    const tableCreate = options.tableCreateOptions
    let createOptions: Settings<A, E, R>["createOptions"]
    if (tableCreate === undefined) createOptions = () => TableCreateOptions.defaults
    else if (Predicate.isFunction(tableCreate)) createOptions = tableCreate
    else {
      const fixed = yield* TableCreateOptions.make(tableCreate, "tableCreateOptions")
      createOptions = () => fixed
    }
    const schemaUpdate = options.schemaUpdate === undefined
      ? SchemaUpdateOptions.defaults
      : yield* SchemaUpdateOptions.make(options.schemaUpdate, "schemaUpdate")
    const withFields = options.additionalFields === undefined
      ? serializer
      : AdditionalFields.augment(serializer, options.additionalFields)
    const failureHandler = options.failureHandler ??
      (FailureHandler.failJob as unknown as FailureHandler<BigQueryFailure, E, R>)
    return {
      resolve,
      serializer: withFields,
      createDisposition,
      createOptions,
      schemaUpdate,
      failureHandler,
      stream
    }
  })
