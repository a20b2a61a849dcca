/**
 * Decoding and validating `BigQuerySink` options into the writer's settings (cf. Go's
 * `options.go`), every failure a `SinkConfigError` naming the option as written, before any I/O.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as AdditionalFields from "../../BigQuery/AdditionalFields.ts"
import type { BigQueryFailure } from "../../BigQuery/BigQueryFailure.ts"
import type { BigQuerySinkOptions, Handler } from "../../BigQuery/BigQuerySink.ts"
import type { RowSerializer } from "../../BigQuery/RowSerializer.ts"
import * as SchemaUpdateOptions from "../../BigQuery/SchemaUpdateOptions.ts"
import * as TableCreateOptions from "../../BigQuery/TableCreateOptions.ts"
import * as TableDestination from "../../BigQuery/TableDestination.ts"
import type * as WriteMethod from "../../BigQuery/WriteMethod.ts"
import type { CreateDisposition } from "../../Sink/CreateDisposition.ts"
import type { FailureHandler } from "../../Sink/FailureHandler.ts"
import type { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { WithFailureHandler } from "../../Sink/SinkOptions.ts"
import * as retryPolicy from "../options/retryPolicy.ts"
import * as O from "../options/schema.ts"
import * as SinkOptionsSchema from "../options/sinkOptions.ts"
import * as Cdc from "./cdc/options.ts"
import * as CdcRow from "./cdc/rowFields.ts"
import { augment } from "./encoding/additionalFields.ts"
import { SchemaUpdateOptionsSchema } from "./schema/schemaUpdateOptions.ts"
import { TableCreateOptionsSchema } from "./schema/tableCreateOptions.ts"
import { maxRowBytes } from "./transport/appendRequest.ts"

/** The options of the sink, as `BigQuerySink` documents them (with either write method). @internal */
export type SinkOptions<A, E, R> = Omit<BigQuerySinkOptions<A, E, R>, "writeMethod"> & {
  readonly writeMethod?: WriteMethod.WriteMethod<A> | WriteMethod.ExactlyOnce | undefined
}

/** The decoded `WriteMethod.atLeastOnce` or `WriteMethod.exactlyOnce` options. @internal */
export interface StreamSettings {
  /** `AtLeastOnce` on `_default`, or `ExactlyOnce` on buffered streams (`exactlyOnce/`). */
  readonly method: "AtLeastOnce" | "ExactlyOnce"
  readonly maxAppendRequestBytes: number
  readonly recovery: RetryPolicy
  readonly retry: RetryPolicy
  readonly maxInFlightRequests: number
  readonly maxInFlightBytes: number
  readonly destinationIdleTimeout: Duration.Duration
  readonly flushInterval: Duration.Duration | undefined
  readonly responseTimeout: Duration.Duration
  readonly adminTimeout: Duration.Duration
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
  /** The `cdc` option of `WriteMethod.atLeastOnce`: `serializer` then writes the pseudocolumns. */
  readonly cdc: Cdc.CdcSettings<A> | undefined
}

const KiB = 1024
const MiB = 1024 * KiB

/** The defaults of `WriteMethod.atLeastOnce` (reference 2.5). @internal */
export const streamDefaults = {
  maxAppendRequestBytes: 512 * KiB,
  recovery: retryPolicy.backoff({
    initialBackoff: Duration.millis(500),
    maxBackoff: Duration.seconds(10),
    maxAttempts: 10
  }),
  retry: retryPolicy.backoff({
    initialBackoff: Duration.millis(500),
    maxBackoff: Duration.seconds(30),
    maxAttempts: 5,
    multiplier: 2,
    maxDuration: Duration.minutes(5)
  }),
  maxInFlightRequests: 100,
  maxInFlightBytes: 100 * MiB,
  destinationIdleTimeout: Duration.hours(1),
  responseTimeout: Duration.minutes(5),
  adminTimeout: Duration.minutes(1),
  perDestinationMetrics: false
} as const

/**
 * An admission budget must hold a whole append (both methods): a batch is sent once it is full, and a
 * budget below `maxAppendRequestBytes` (4 KiB against 1 MiB appends) left admission waiting forever.
 */
const budgetHoldsAnAppend = Schema.makeFilter(
  (o: { readonly maxInFlightBytes?: number | undefined; readonly maxAppendRequestBytes: number }) =>
    o.maxInFlightBytes === undefined || o.maxInFlightBytes >= o.maxAppendRequestBytes || {
      path: ["maxInFlightBytes"],
      issue: `must be at least maxAppendRequestBytes (${o.maxAppendRequestBytes}), was ${o.maxInFlightBytes}`
    }
)

/** The schema of `WriteMethod.atLeastOnce` options. @internal */
export const AtLeastOnceOptions = Schema.Struct({
  maxAppendRequestBytes: O.Int({ min: 1, max: maxRowBytes }).pipe(O.withDefault(streamDefaults.maxAppendRequestBytes)),
  maxInFlightRequests: O.Int({ min: 1 }).pipe(O.withDefault(streamDefaults.maxInFlightRequests)),
  ...SinkOptionsSchema.tuningFields({
    maxInFlightBytes: streamDefaults.maxInFlightBytes,
    retry: streamDefaults.retry,
    recovery: streamDefaults.recovery,
    responseTimeout: streamDefaults.responseTimeout,
    adminTimeout: streamDefaults.adminTimeout,
    destinationIdleTimeout: streamDefaults.destinationIdleTimeout
  }),
  // checked here, decoded by `decode` (its providers are typed by the element)
  cdc: O.maybe(O.guard(O.isRecord, "an object (Cdc.CdcOptions)"))
}).check(budgetHoldsAnAppend)

// the settings carry the options' names; `cdc` is decoded by `decode`
const toStream = ({ cdc: _cdc, ...o }: typeof AtLeastOnceOptions.Type): StreamSettings => ({
  method: "AtLeastOnce",
  ...o
})

const isStream = (u: unknown): u is StreamSettings => O.isRecord(u) && "maxInFlightRequests" in u

const StreamSchema = AtLeastOnceOptions.pipe(
  Schema.decodeTo(
    Schema.declare(isStream),
    SchemaTransformation.transform({
      decode: toStream,
      encode: ({ method: _method, ...s }: StreamSettings): typeof AtLeastOnceOptions.Type => ({ ...s, cdc: undefined })
    })
  )
)

/**
 * The default admission budget of `WriteMethod.exactlyOnce`, in appends: `maxInFlightBytes` is this
 * many times `maxAppendRequestBytes` unless given (8 MiB with 512 KiB appends). A destination
 * pipelines its appends within it (ADR 0026), so the budget is what covers the round trip: 16
 * appends in flight keep a stream busy at 10 ms and 1 Gbit/s; a checkpoint drains all of it, in about
 * one round trip when the appends are pipelined.
 *
 * @internal
 */
export const exactlyOnceBudgetAppends = 16

/**
 * The schema of `WriteMethod.exactlyOnce` options (reference 2.7): `maxAppendRequestBytes` (512 KiB,
 * 1 to 9 MiB), `maxInFlightBytes` (at least `maxAppendRequestBytes`; {@link exactlyOnceBudgetAppends}
 * times `maxAppendRequestBytes` when absent), `destinationIdleTimeout` (1 h, positive), `recovery` and
 * `retry` (the at-least-once defaults and rules). No request-count or flush knobs: the rest is fixed.
 *
 * @internal
 */
export const ExactlyOnceOptions = Schema.Struct({
  maxAppendRequestBytes: O.Int({ min: 1, max: maxRowBytes }).pipe(O.withDefault(streamDefaults.maxAppendRequestBytes)),
  maxInFlightBytes: O.maybe(O.Int({ min: 1 })),
  destinationIdleTimeout: O.DurationSchema("positive").pipe(O.withDefault(streamDefaults.destinationIdleTimeout)),
  retry: retryPolicy.schema(streamDefaults.retry),
  recovery: retryPolicy.schema(streamDefaults.recovery)
}).check(budgetHoldsAnAppend)

const toBuffered = (o: typeof ExactlyOnceOptions.Type): StreamSettings => ({
  method: "ExactlyOnce",
  maxAppendRequestBytes: o.maxAppendRequestBytes,
  recovery: o.recovery,
  retry: o.retry,
  maxInFlightRequests: streamDefaults.maxInFlightRequests,
  maxInFlightBytes: o.maxInFlightBytes ?? exactlyOnceBudgetAppends * o.maxAppendRequestBytes,
  destinationIdleTimeout: o.destinationIdleTimeout,
  flushInterval: undefined,
  responseTimeout: streamDefaults.responseTimeout,
  adminTimeout: streamDefaults.adminTimeout,
  perDestinationMetrics: false
})

const BufferedSchema = ExactlyOnceOptions.pipe(
  Schema.decodeTo(
    Schema.declare(isStream),
    SchemaTransformation.transform({
      decode: toBuffered,
      encode: (s: StreamSettings): typeof ExactlyOnceOptions.Type => ({
        maxAppendRequestBytes: s.maxAppendRequestBytes,
        maxInFlightBytes: s.maxInFlightBytes,
        destinationIdleTimeout: s.destinationIdleTimeout,
        retry: s.retry,
        recovery: s.recovery
      })
    })
  )
)

/** Decodes `WriteMethod.exactlyOnce` options alone, errors under `path`. @internal */
export const decodeBufferedOptions = (
  options: WriteMethod.ExactlyOnceOptions,
  path = "writeMethod"
): Effect.Effect<StreamSettings, SinkConfigError> => O.decode(BufferedSchema, path)(options)

/** Decodes `WriteMethod.atLeastOnce` options alone, errors under `path`. @internal */
export const decodeStreamOptions = (
  options: WriteMethod.AtLeastOnceOptions,
  path = "writeMethod"
): Effect.Effect<StreamSettings, SinkConfigError> => O.decode(StreamSchema, path)(options)

const isSerializer = (u: unknown): u is RowSerializer<unknown> =>
  O.isRecord(u) && Predicate.isFunction(u.serialize) && Predicate.isFunction(u.tableSchema)

const isTable = (u: unknown): u is TableDestination.TableDestination => u instanceof TableDestination.TableDestination

/** A fixed table, its ids checked again: `new` skips `TableDestination.make`'s checks. */
const Table = O.guard(isTable, "a TableDestination (TableDestination.make)").check(
  O.hasComponents(["projectId", "datasetId", "tableId"])
)

type CreateOptionsOf = (destination: TableDestination.TableDestination) => TableCreateOptions.TableCreateOptions

const isCreateOptionsOf = (u: unknown): u is CreateOptionsOf => Predicate.isFunction(u)

/** `tableCreateOptions`: fixed options (decoded now) or a function of the destination, as a function. */
const CreateOptions = Schema.Unknown.pipe(
  Schema.decodeTo(
    Schema.declare(isCreateOptionsOf),
    SchemaTransformation.transformEffect({
      decode: (input): Effect.Effect<CreateOptionsOf, SchemaIssue.Issue> => {
        if (isCreateOptionsOf(input)) return Effect.succeed(input)
        if (!O.isRecord(input)) {
          return Effect.fail(
            O.invalid(`must be TableCreateOptions or a function of the destination, was ${O.describe(input)}`)
          )
        }
        return Effect.map(O.decodeIssue(TableCreateOptionsSchema)(input), (fixed) => () => fixed)
      },
      encode: (f: CreateOptionsOf) => Effect.succeed<unknown>(f)
    })
  ),
  O.withDefault((): TableCreateOptions.TableCreateOptions => TableCreateOptions.defaults)
)

/**
 * Why a BigQuery write method is not taken by this decoder, where the generic "must be a WriteMethod"
 * would not say: CDC is at-least-once only. `make` and `writer` choose the decoder by the method's
 * tag, so another tag is only a caller of this module passing the wrong `method`.
 */
const misplacedMethod = (method: StreamSettings["method"], given: Record<string, unknown>): string | undefined => {
  const cdc = O.isRecord(given.options) && given.options.cdc !== undefined
  if (cdc && (given._tag !== "AtLeastOnce" || method !== "AtLeastOnce")) {
    return "CDC is at-least-once only: give WriteMethod.atLeastOnce({ cdc }) to BigQuerySink.make or writer"
  }
  const expected = method === "AtLeastOnce" ? "atLeastOnce" : "exactlyOnce"
  return given._tag === method ? undefined : `must be WriteMethod.${expected}(...)`
}

/**
 * The top-level options, field by field in the reference's order; cross-field rules follow. The
 * write method is `method`'s only (`make` and `writer` choose this decoder by its tag).
 */
const optionsOf = (method: StreamSettings["method"]) =>
  Schema.Struct({
    serializer: O.requiredValue(
      Schema.declare(isSerializer, { message: "a serializer is required (serialize and tableSchema functions)" })
    ),
    table: O.maybe(Table),
    destinationResolver: SinkOptionsSchema.functionOption,
    writeMethod: SinkOptionsSchema.writeMethod(
      "bigquery",
      "BigQuery",
      [method],
      method === "AtLeastOnce" ? StreamSchema : BufferedSchema,
      isStream,
      (given) => misplacedMethod(method, given)
    ),
    createDisposition: SinkOptionsSchema.createDisposition("CREATE_IF_NEEDED"),
    tableCreateOptions: CreateOptions,
    schemaUpdate: SchemaUpdateOptionsSchema.pipe(O.withDefault(SchemaUpdateOptions.defaults)),
    additionalFields: O.maybe(
      O.guard(
        (u): u is Record<string, unknown> => O.isRecord(u) && Array.isArray(u.fields),
        "AdditionalFields (AdditionalFields.make)"
      )
    ),
    failureHandler: SinkOptionsSchema.failureHandler
  })

const AtLeastOnceSinkOptions = optionsOf("AtLeastOnce")
const ExactlyOnceSinkOptions = optionsOf("ExactlyOnce")

/** The serializer's schema of `table`: a serializer that throws is a `SinkConfigError`, not a defect. */
const tableSchemaOf = <A>(serializer: RowSerializer<A>, table: TableDestination.TableDestination) =>
  Effect.try({
    try: () => serializer.tableSchema(table),
    catch: (cause) =>
      new SinkConfigError({
        path: "serializer",
        detail: `tableSchema threw: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

const withoutCheckpoint = (options: Record<string, unknown>): Record<string, unknown> => {
  const { checkpoint: _checkpoint, ...rest } = options
  return rest
}

/** The one destination option: a fixed table (its ids checked by the decode) or a resolver. */
const destinationOf = <A>(
  table: TableDestination.TableDestination | undefined,
  resolver: TableDestination.DestinationResolver<A> | undefined
): Effect.Effect<
  {
    readonly fixed: TableDestination.TableDestination | undefined
    readonly resolve: TableDestination.DestinationResolver<A>
  },
  SinkConfigError
> =>
  Effect.map(
    SinkOptionsSchema.exactlyOne(table, resolver, "destinationResolver"),
    (d) =>
      d._tag === "resolver"
        ? { fixed: undefined, resolve: d.resolver }
        : { fixed: d.table, resolve: TableDestination.fixed(d.table) }
  )

/**
 * Validates the sink options with `Schema`, in the reference's order: serializer, destination,
 * write method, then the rest; then the rules across options (one destination; with a fixed table,
 * additional fields that collide with the serializer's columns). Without a failure handler the
 * default is `FailureHandler.failJob` (see `withDefaultHandler` for the type of its error).
 *
 * @internal
 */
export const decode = Effect.fnUntraced(
  function*<A, H extends Handler | undefined>(
    options: WithFailureHandler<SinkOptions<A, unknown, unknown>, H>,
    method: StreamSettings["method"] = "AtLeastOnce"
  ) {
    // the exactly-once constructors decode their `checkpoint` option themselves
    const input: unknown = method === "ExactlyOnce" && O.isRecord(options) ? withoutCheckpoint(options) : options
    const decoded = yield* O.decode(method === "AtLeastOnce" ? AtLeastOnceSinkOptions : ExactlyOnceSinkOptions)(input)
    // the values typed by the element (serializer, resolver, fields) come from `options`: the decode checked them
    const { fixed, resolve } = yield* destinationOf(decoded.table, options.destinationResolver)
    const serializer = options.serializer
    let withFields: RowSerializer<A> = serializer
    let additionalFields: AdditionalFields.AdditionalFields<A> | undefined
    if (options.additionalFields !== undefined) {
      // hand-built values skipped AdditionalFields.make's checks
      const additional = yield* AdditionalFields.make(options.additionalFields.fields, "additionalFields.fields")
      // with a fixed table the serializer's schema is known now: a colliding column fails before any I/O
      if (fixed !== undefined) yield* AdditionalFields.extendSchema(additional, yield* tableSchemaOf(serializer, fixed))
      withFields = augment(serializer, additional)
      additionalFields = additional
    }
    let cdc: Cdc.CdcSettings<A> | undefined
    const writeMethod = options.writeMethod
    const cdcOptions = writeMethod?._tag === "AtLeastOnce" ? writeMethod.options.cdc : undefined
    if (cdcOptions !== undefined) {
      cdc = yield* Cdc.decode(cdcOptions, "writeMethod.cdc")
      // with a fixed table the physical schema is known now: a pseudocolumn's name fails before any I/O
      if (fixed !== undefined) yield* Cdc.checkSchema(yield* tableSchemaOf(withFields, fixed), "serializer")
      withFields = CdcRow.augment(withFields, cdcOptions)
    }
    return {
      resolve,
      serializer: withFields,
      baseSerializer: serializer,
      additionalFields,
      createDisposition: decoded.createDisposition,
      createOptions: decoded.tableCreateOptions,
      schemaUpdate: decoded.schemaUpdate,
      failureHandler: SinkOptionsSchema.withDefaultHandler<BigQueryFailure, H>(options.failureHandler),
      stream: decoded.writeMethod,
      cdc
    }
  }
)
