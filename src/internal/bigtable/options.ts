/**
 * Validation of the Bigtable sink's options (reference 3.1, 3.3 and 3.4) into resolved settings;
 * every rule fails with a `SinkConfigError` naming the option as the user wrote it.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { FailedMutation } from "../../Bigtable/BigtableFailure.ts"
import type { BigtableSinkOptions, Handler, Serializer } from "../../Bigtable/BigtableSink.ts"
import { isTableDestination, type TableDestination, type Unroutable } from "../../Bigtable/TableDestination.ts"
import type { AtLeastOnceOptions as AtLeastOnceOptionsInput } from "../../Bigtable/WriteMethod.ts"
import type { CreateDisposition } from "../../Sink/CreateDisposition.ts"
import type { FailureHandler } from "../../Sink/FailureHandler.ts"
import type { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { WithFailureHandler } from "../../Sink/SinkOptions.ts"
import * as retryPolicy from "../options/retryPolicy.ts"
import * as O from "../options/schema.ts"
import * as SinkOptionsSchema from "../options/sinkOptions.ts"
import { type Declared, DeclaredSchema } from "./admin/tableCreateOptions.ts"

const MiB = 1024 * 1024

/** Defaults of `WriteMethod.atLeastOnce` (reference 3.4). @internal */
export const defaults = {
  batchElementCount: 100,
  batchByteSize: 20 * MiB,
  maxInFlightEntries: 1000,
  maxInFlightBytes: 64 * MiB,
  maxConsecutiveRejections: 100,
  recovery: retryPolicy.backoff({
    initialBackoff: Duration.millis(500),
    maxBackoff: Duration.seconds(10),
    maxAttempts: 10
  }),
  destinationIdleTimeout: Duration.hours(1),
  retry: retryPolicy.backoff({ initialBackoff: Duration.millis(10), maxBackoff: Duration.minutes(1), maxAttempts: 15 }),
  responseTimeout: Duration.minutes(1),
  adminTimeout: Duration.minutes(1)
} as const

/** The batch timer: a non-empty batch is sent at the latest this long after its first entry. @internal */
export const batchDelay = Duration.seconds(1)

/** Client-side entry limits: larger entries are routed before any request. @internal */
export const maxMutationsPerEntry = 100_000
/** @internal */
export const maxEntryBytes = 200 * MiB

/** @internal */
export interface WriterSettings {
  readonly batchElementCount: number
  readonly batchByteSize: number
  readonly maxInFlightEntries: number
  readonly maxInFlightBytes: number
  readonly maxConsecutiveRejections: number
  readonly recovery: RetryPolicy
  readonly retry: RetryPolicy
  readonly destinationIdleTimeout: Duration.Duration
  readonly perDestinationMetrics: boolean
  readonly responseTimeout: Duration.Duration
  readonly adminTimeout: Duration.Duration
}

export type { Declared, DeclaredFamily } from "./admin/tableCreateOptions.ts"

/** @internal */
export interface Settings<A, E, R> {
  readonly resolve: (record: A) => TableDestination | Unroutable
  readonly serializer: Serializer<A>
  readonly appProfileId: string | undefined
  readonly writer: WriterSettings
  readonly createDisposition: CreateDisposition
  readonly declared: Declared | undefined
  readonly handler: FailureHandler<FailedMutation, E, R>
  readonly flushInterval: Duration.Duration | undefined
}

/** The schema of `WriteMethod.atLeastOnce` options. @internal */
export const AtLeastOnceOptions = Schema.Struct({
  batchElementCount: O.Int({ min: 1, max: 19_999 }).pipe(O.withDefault(defaults.batchElementCount)),
  batchByteSize: O.Int({ min: 1, max: 100 * MiB - 1 }).pipe(O.withDefault(defaults.batchByteSize)),
  maxInFlightEntries: O.Int({ min: 1 }).pipe(O.withDefault(defaults.maxInFlightEntries)),
  maxConsecutiveRejections: O.Int({ min: 1, sentinel: -1 }).pipe(O.withDefault(defaults.maxConsecutiveRejections)),
  ...SinkOptionsSchema.tuningFields(defaults)
})

/** The decoded method: the writer's settings and the sink's timer. @internal */
export interface MethodSettings {
  readonly writer: WriterSettings
  readonly flushInterval: Duration.Duration | undefined
}

const isMethodSettings = (u: unknown): u is MethodSettings => O.isRecord(u) && "writer" in u

const MethodSchema = AtLeastOnceOptions.pipe(
  Schema.decodeTo(
    Schema.declare(isMethodSettings),
    SchemaTransformation.transform({
      decode: ({ flushInterval, ...writer }): MethodSettings => ({ writer, flushInterval }),
      encode: (m: MethodSettings): typeof AtLeastOnceOptions.Type => ({ ...m.writer, flushInterval: m.flushInterval })
    })
  )
)

/** Decodes `WriteMethod.atLeastOnce` options alone, errors under `path`. @internal */
export const writerSettings = (
  options: AtLeastOnceOptionsInput | undefined,
  path = "writeMethod"
): Effect.Effect<WriterSettings, SinkConfigError> =>
  Effect.map(O.decode(MethodSchema, path)(options ?? {}), (m) => m.writer)

const isTable = (u: unknown): u is TableDestination => isTableDestination(u)

const isSerializer = (u: unknown): u is Serializer<unknown> => Predicate.isFunction(u)

/** `tableCreateOptions` is given exactly when the sink may create tables: it names their families. */
const createOptionsAgree = (
  o: { readonly createDisposition: CreateDisposition; readonly tableCreateOptions: Declared | undefined }
): Schema.FilterOutput => {
  if (o.createDisposition === "CREATE_NEVER" && o.tableCreateOptions !== undefined) {
    return { path: ["tableCreateOptions"], issue: "is only used with createDisposition CREATE_IF_NEEDED" }
  }
  return o.createDisposition === "CREATE_NEVER" || o.tableCreateOptions !== undefined || {
    path: ["tableCreateOptions"],
    issue: "is required with createDisposition CREATE_IF_NEEDED: the sink cannot guess the column families"
  }
}

/** The top-level options, field by field; cross-field rules follow. */
const Options = Schema.Struct({
  // a table's ids checked again: `new` skips `TableDestination.make`'s checks
  table: O.maybe(
    O.guard(isTable, "a TableDestination (TableDestination.make)").check(
      O.hasComponents(["projectId", "instanceId", "tableId"])
    )
  ),
  destinationResolver: SinkOptionsSchema.functionOption,
  serializer: O.requiredValue(Schema.declare(isSerializer, { rule: "is required and must be a function" })),
  appProfileId: O.maybe(O.NotBlank),
  writeMethod: SinkOptionsSchema.writeMethod("bigtable", "Bigtable", ["AtLeastOnce"], MethodSchema, isMethodSettings),
  createDisposition: SinkOptionsSchema.createDisposition("CREATE_NEVER"),
  tableCreateOptions: O.maybe(DeclaredSchema),
  failureHandler: SinkOptionsSchema.failureHandler
}).check(Schema.makeFilter(createOptionsAgree))

/** The id components of a table, each named under `path` (`table.projectId`, ...). @internal */
export const checkTable = Effect.fnUntraced(function*(path: string, table: TableDestination) {
  yield* O.decodeAt(`${path}.projectId`, O.Component, table.projectId)
  yield* O.decodeAt(`${path}.instanceId`, O.Component, table.instanceId)
  yield* O.decodeAt(`${path}.tableId`, O.Component, table.tableId)
})

/** @internal */
export const settings = Effect.fnUntraced(
  function*<A, H extends Handler | undefined>(options: WithFailureHandler<BigtableSinkOptions<A>, H>) {
    const decoded = yield* O.decode(Options)(options)
    // the typed values come from `options`: the decode above checked them
    const destination = yield* SinkOptionsSchema.exactlyOne(decoded.table, options.destinationResolver, "table")
    const resolve: (record: A) => TableDestination | Unroutable = destination._tag === "table"
      ? () => destination.table
      : destination.resolver
    return {
      resolve,
      serializer: options.serializer,
      appProfileId: decoded.appProfileId,
      writer: decoded.writeMethod.writer,
      createDisposition: decoded.createDisposition,
      declared: decoded.tableCreateOptions,
      handler: SinkOptionsSchema.withDefaultHandler<FailedMutation, H>(options.failureHandler),
      flushInterval: decoded.writeMethod.flushInterval
    }
  }
)
