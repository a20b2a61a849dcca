/**
 * The `Schema` of what both sinks' options share (`src/Sink/SinkOptions.ts`): the writer tuning
 * every write method carries, the write method envelope, the destination pair, the create
 * disposition and the failure handler. Each backend's `options.ts` adds its own fields and defaults.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { Connector } from "../../Sink/FailedElement.ts"
import { FailureHandler, type RecordFailed } from "../../Sink/FailureHandler.ts"
import type { RetryPolicy } from "../../Sink/RetryPolicy.ts"
import type { SinkConfigError } from "../../Sink/SinkConfigError.ts"
import type { HandlerContext, HandlerError } from "../../Sink/SinkOptions.ts"
import * as retryPolicy from "./retryPolicy.ts"
import * as O from "./schema.ts"

/** The defaults of the shared tuning, per backend. @internal */
export interface TuningDefaults {
  readonly maxInFlightBytes: number
  readonly retry: RetryPolicy
  readonly recovery: RetryPolicy
  readonly responseTimeout: Duration.Duration
  readonly adminTimeout: Duration.Duration
  readonly destinationIdleTimeout: Duration.Duration
}

/** The decoded shared tuning: the defaulted fields, and the two whose default is fixed. @internal */
export interface Tuning extends TuningDefaults {
  readonly flushInterval: Duration.Duration | undefined
  readonly perDestinationMetrics: boolean
}

/** The fields of `SinkOptions.WriterOptions`, with a backend's defaults. @internal */
export const tuningFields = (d: TuningDefaults) => ({
  maxInFlightBytes: O.Int({ min: 1 }).pipe(O.withDefault(d.maxInFlightBytes)),
  retry: retryPolicy.schema(d.retry),
  recovery: retryPolicy.schema(d.recovery),
  responseTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(d.responseTimeout)),
  adminTimeout: O.DurationSchema("atLeastOneMilli").pipe(O.withDefault(d.adminTimeout)),
  destinationIdleTimeout: O.DurationSchema("positive").pipe(O.withDefault(d.destinationIdleTimeout)),
  flushInterval: O.maybe(O.DurationSchema("atLeastOneMilli")),
  perDestinationMetrics: O.Bool.pipe(O.withDefault(false))
})

/**
 * The `writeMethod` option: `undefined` is the default method; otherwise a value of this backend's
 * `WriteMethod` constructors (`_tag` among `tags`, `connector` this backend's: a BigQuery method
 * given to Bigtable is rejected), whose `options` are decoded by `schema` with paths directly under
 * `writeMethod` (`writeMethod.maxInFlightBytes`). `misplaced` may say better than the generic
 * message why a method of this backend is not taken here (another sink form's, an option it lacks).
 *
 * @internal
 */
export const writeMethod = <A>(
  connector: Connector,
  module: string,
  tags: ReadonlyArray<string>,
  schema: Schema.Decoder<A>,
  is: (u: unknown) => u is A,
  misplaced: (given: Record<string, unknown>) => string | undefined = () => undefined
) => {
  const tag = tags[0] ?? "AtLeastOnce"
  const constructor = `${tag.charAt(0).toLowerCase()}${tag.slice(1)}`
  const expected = `a WriteMethod of ${module} (WriteMethod.${constructor}(...) from effect-gcp-sinks/${module})`
  const decode = (given: unknown): Effect.Effect<A, SchemaIssue.Issue> => {
    const hint = O.isRecord(given) && given.connector === connector ? misplaced(given) : undefined
    if (hint !== undefined) return Effect.fail(O.invalid(hint, given))
    if (
      !O.isRecord(given) || !Predicate.isString(given._tag) || !tags.includes(given._tag) ||
      given.connector !== connector
    ) {
      return Effect.fail(O.invalid(`must be ${expected}, was ${O.describe(given)}`, given))
    }
    // absent options are the defaults; `null` is not absent
    const methodOptions = given.options === undefined ? {} : given.options
    if (!O.isRecord(methodOptions)) {
      return Effect.fail(O.invalid(`its options must be an object, was ${O.describe(methodOptions)}`))
    }
    return O.decodeIssue(schema)(methodOptions)
  }
  return Schema.Unknown.pipe(
    Schema.decodeTo(
      Schema.declare(is),
      SchemaTransformation.transformEffect({ decode, encode: (a: A) => Effect.succeed<unknown>(a) })
    ),
    // an absent method is the default one, its options decoded like any
    Schema.withDecodingDefault(Effect.succeed<unknown>({ _tag: tag, connector, options: {} }))
  )
}

/** The `createDisposition` option with a backend's default. @internal */
export const createDisposition = (fallback: "CREATE_IF_NEEDED" | "CREATE_NEVER") =>
  O.literals(["CREATE_IF_NEEDED", "CREATE_NEVER"]).pipe(O.withDefault(fallback))

/** @internal */
export const isFailureHandler = (u: unknown): u is FailureHandler<never, unknown, unknown> =>
  O.isRecord(u) && Predicate.isFunction(u.handle) && Effect.isEffect(u.open) && Effect.isEffect(u.flush) &&
  Effect.isEffect(u.close)

/** The `failureHandler` option (checked only; the typed value is taken from the options). @internal */
export const failureHandler = O.maybe(
  O.guard(isFailureHandler, "a FailureHandler (open, handle, flush, close; see FailureHandler.make)")
)

/** @internal */
export const isFunction = (u: unknown): u is (...args: ReadonlyArray<never>) => unknown => Predicate.isFunction(u)

/** An optional function option (`destinationResolver`). @internal */
export const functionOption = O.maybe(O.guard(isFunction, "a function"))

/**
 * The failure handler of a write: the caller's, or `FailureHandler.failJob`.
 *
 * **Details**
 *
 * The public `make` and `writer` take `E = RecordFailed` as the default of their handler's error
 * type: TypeScript infers `E` from `failureHandler` when one is given and falls back to
 * `RecordFailed` exactly when none is, which is when `failJob` (whose error is `RecordFailed`) runs.
 * That invariant is what this signature states and the compiler cannot see.
 *
 * @internal
 */
export function withDefaultHandler<F, H extends FailureHandler<F, unknown, unknown> | undefined>(
  handler: H | undefined
): FailureHandler<F, HandlerError<H>, HandlerContext<H>>
export function withDefaultHandler(
  handler: FailureHandler<never, unknown, unknown> | undefined
): FailureHandler<never, unknown, unknown> {
  const fallback: FailureHandler<never, RecordFailed> = FailureHandler.failJob
  return handler ?? fallback
}

/**
 * The destination pair: exactly one of `table` (checked by the caller) and `destinationResolver`,
 * the one that is set.
 *
 * @internal
 */
export const exactlyOne = <T, R>(
  table: T | undefined,
  resolver: R | undefined,
  bothAt: "table" | "destinationResolver"
): Effect.Effect<
  { readonly _tag: "table"; readonly table: T } | { readonly _tag: "resolver"; readonly resolver: R },
  SinkConfigError
> => {
  if (table !== undefined && resolver !== undefined) {
    return O.fail(bothAt, "set either table or destinationResolver, not both")
  }
  if (table !== undefined) return Effect.succeed({ _tag: "table", table })
  if (resolver !== undefined) return Effect.succeed({ _tag: "resolver", resolver })
  return O.fail("table", "a destination is required: set table or destinationResolver")
}
