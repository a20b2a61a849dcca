/**
 * Validation of the exactly-once sink's options into settings: the shared Bigtable options
 * (destination, serializer, app profile, failure handler, `createDisposition` and
 * `tableCreateOptions`, to which the marker family is added) through `../options.ts`, the
 * `WriteMethod.exactlyOnce` options, and the `checkpoint` option (the sink form's through
 * `checkpoint/sink.ts`). Every rule fails with a `SinkConfigError` naming the option as written.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { isTableDestination, type TableDestination } from "../../../Bigtable/TableDestination.ts"
import type { ExactlyOnceOptions as ExactlyOnceOptionsInput } from "../../../Bigtable/WriteMethod.ts"
import type { Resume } from "../../../Sink/Checkpoint.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as checkpointSink from "../../checkpoint/sink.ts"
import * as O from "../../options/schema.ts"
import type * as options from "../options.ts"

const MiB = 1024 * 1024

/** Defaults of `WriteMethod.exactlyOnce` (reference 3.5). @internal */
export const defaults = {
  maxStagedEntries: 100_000,
  maxStagedBytes: 64 * MiB,
  maxInFlightRequests: 100,
  responseTimeout: Duration.seconds(20),
  adminTimeout: Duration.minutes(1)
} as const

/** A column family name as Bigtable allows it: `[-_.a-zA-Z0-9]+`. @internal */
export const FamilyName = Schema.declare(
  (u: unknown): u is string => Predicate.isString(u) && /^[-_.a-zA-Z0-9]+$/.test(u),
  { rule: "is required: a column family name ([-_.a-zA-Z0-9]+)" }
)

/** The schema of `WriteMethod.exactlyOnce` options. @internal */
export const ExactlyOnceOptions = Schema.Struct({
  markerFamily: O.requiredValue(FamilyName),
  maxStagedEntries: O.Int({ min: 1 }).pipe(O.withDefault(defaults.maxStagedEntries)),
  maxStagedBytes: O.Int({ min: 1 }).pipe(O.withDefault(defaults.maxStagedBytes)),
  maxInFlightRequests: O.Int({ min: 1 }).pipe(O.withDefault(defaults.maxInFlightRequests)),
  responseTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(defaults.responseTimeout)),
  adminTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(defaults.adminTimeout)),
  perDestinationMetrics: O.Bool.pipe(O.withDefault(false))
})

/** The decoded method options. @internal */
export type MethodSettings = typeof ExactlyOnceOptions.Type

/** @internal */
export interface Settings<A, E, R, P> {
  readonly base: options.Settings<A, E, R>
  /** The `table` option: checked before the first write; absent with a `destinationResolver`. */
  readonly fixedTable: TableDestination | undefined
  readonly method: MethodSettings
  readonly resume: Resume<P>
  readonly position: (a: A) => P
  readonly every: checkpointSink.Every
}

/** Decodes `WriteMethod.exactlyOnce` options alone, errors under `path`. @internal */
export const methodSettings = (
  input: ExactlyOnceOptionsInput | unknown,
  path = "writeMethod"
): Effect.Effect<MethodSettings, SinkConfigError> => O.decode(ExactlyOnceOptions, path)(input)

const decodeMethod = (input: unknown): Effect.Effect<MethodSettings, SinkConfigError> => {
  const expected = "WriteMethod.exactlyOnce({ markerFamily, ... }) from effect-gcp-sinks/Bigtable"
  if (!O.isRecord(input) || input._tag !== "ExactlyOnce" || input.connector !== "bigtable") {
    return O.fail("writeMethod", `is required here: ${expected}, was ${O.describe(input)}`)
  }
  const given = input.options
  if (!O.isRecord(given)) return O.fail("writeMethod", `its options must be an object, was ${O.describe(given)}`)
  return methodSettings(given)
}

/**
 * With `CREATE_IF_NEEDED`, the declared families plus the marker family, which the sink creates
 * with the table: raw, without a GC rule (markers must never expire). A marker family declared
 * otherwise is a `SinkConfigError`.
 *
 * @internal
 */
export const withMarkerFamily = <A, E, R>(
  base: options.Settings<A, E, R>,
  markerFamily: string
): Effect.Effect<options.Settings<A, E, R>, SinkConfigError> => {
  const declared = base.declared
  if (declared === undefined) return Effect.succeed(base)
  const marker = declared.families.get(markerFamily)
  if (marker !== undefined) {
    return marker.type === "RAW" && marker.gcRule === undefined
      ? Effect.succeed(base)
      : O.fail(
        `tableCreateOptions.columnFamilies.${markerFamily}`,
        "is the marker family: it must be RAW and have no GC rule (markers must never expire)"
      )
  }
  const families = new Map(declared.families).set(markerFamily, { type: "RAW", gcRule: undefined })
  return Effect.succeed({ ...base, declared: { families, hasAggregate: declared.hasAggregate } })
}

/**
 * Decodes the exactly-once options; `form` says which `checkpoint` option is expected (the sink's
 * `{ resume, every, position }` or the writer's `{ resume, position }`).
 *
 * @internal
 */
export const settings = Effect.fnUntraced(function*<A, E, R, P>(
  input: {
    readonly writeMethod?: unknown
    readonly checkpoint?: unknown
    readonly createDisposition?: unknown
    readonly tableCreateOptions?: unknown
    readonly table?: TableDestination | undefined
  },
  form: "sink" | "writer",
  base: (rest: Record<string, unknown>) => Effect.Effect<options.Settings<A, E, R>, SinkConfigError>
) {
  const method = yield* decodeMethod(input.writeMethod)
  const { checkpoint, writeMethod: _, ...rest } = input
  const decodedBase = yield* withMarkerFamily(yield* base(rest), method.markerFamily)
  const fixedTable = isTableDestination(input.table) ? input.table : undefined
  const c = yield* checkpointSink.decode<A, P>(checkpoint, form, "WriteMethod.exactlyOnce(...)")
  return { base: decodedBase, fixedTable, method, resume: c.resume, position: c.position, every: c.every }
})
