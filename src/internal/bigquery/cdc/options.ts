/**
 * Decoding the `cdc` option of `WriteMethod.atLeastOnce` (reference 2.1 rules 7-8, 2.12) into the
 * writer's CDC settings, every failure a `SinkConfigError` under `writeMethod.cdc`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { CdcOptions, ReconciliationPolicy } from "../../../BigQuery/Cdc.ts"
import type { CdcTableOptions } from "../../../BigQuery/CdcTableOptions.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import type { TableSchema } from "../../../BigQuery/TableSchema.ts"
import { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import * as O from "../../options/schema.ts"
import * as SinkOptionsSchema from "../../options/sinkOptions.ts"
import { collision, collisionMessage } from "./rowFields.ts"
import * as TableOptions from "./tableOptions.ts"

/** The decoded `cdc` option. @internal */
export interface CdcSettings<A> {
  readonly options: CdcOptions<A>
  /** The table options of a destination (a provider's result validated on each call). */
  readonly tableOptions: (destination: TableDestination) => Effect.Effect<CdcTableOptions, SinkConfigError>
  readonly reconciliation: ReconciliationPolicy
}

const policies: ReadonlyArray<ReconciliationPolicy> = ["VERIFY_ONLY", "RECONCILE"]

type Provider = (...args: ReadonlyArray<never>) => unknown

const isProvider = (u: unknown): u is Provider => Predicate.isFunction(u)

/** `tableOptions`: fixed options, decoded now, or a provider (its results are decoded per destination). */
const TableOptionsField = Schema.Unknown.pipe(Schema.decodeTo(
  Schema.declare((u: unknown): u is CdcTableOptions | Provider => TableOptions.isValidated(u) || isProvider(u)),
  SchemaTransformation.transformEffect({
    decode: (input): Effect.Effect<CdcTableOptions | Provider, SchemaIssue.Issue> => {
      if (isProvider(input)) return Effect.succeed(input)
      return O.isRecord(input)
        ? O.decodeIssue(TableOptions.CdcTableOptionsSchema)(input)
        : Effect.fail(O.invalid(`must be CdcTableOptions or a function of the destination, was ${O.describe(input)}`))
    },
    encode: (o: CdcTableOptions | Provider) => Effect.succeed<unknown>(o)
  })
))

/** `RECONCILE` needs a primary key: fixed options without one are rejected now, a provider's per destination. */
const reconcileHasPrimaryKey = Schema.makeFilter(
  (
    o: { readonly reconciliation: ReconciliationPolicy; readonly tableOptions: CdcTableOptions | Provider | undefined }
  ) => {
    if (o.reconciliation !== "RECONCILE") return undefined
    if (o.tableOptions === undefined) {
      return { path: ["tableOptions"], issue: "RECONCILE needs table options with a primary key" }
    }
    return Predicate.isFunction(o.tableOptions) || o.tableOptions.primaryKey.length > 0 ||
      { path: ["tableOptions", "primaryKey"], issue: "RECONCILE needs a primary key" }
  }
)

const Input = Schema.Struct({
  changeType: O.requiredValue(O.guard(SinkOptionsSchema.isFunction, "a function (or Cdc.upsertOnly())")),
  sequenceNumber: SinkOptionsSchema.functionOption,
  tableOptions: O.maybe(TableOptionsField),
  reconciliation: O.literals(policies).pipe(O.withDefault("VERIFY_ONLY"))
}).check(reconcileHasPrimaryKey)

const unconfigured: CdcTableOptions = { primaryKey: [], maxStaleness: { _tag: "Unmanaged" } }

/**
 * Decodes `cdc` (typed values come from `cdc` itself once the decode checked them). Fixed table
 * options are validated now, and `RECONCILE` with fixed options that declare no primary key is
 * rejected; a provider's options are validated per destination.
 *
 * @internal
 */
export const decode = Effect.fnUntraced(function*<A>(cdc: CdcOptions<A>, path: string) {
  const decoded = yield* O.decode(Input, path)(cdc)
  const fixed = decoded.tableOptions
  const given = cdc.tableOptions
  let tableOptions: CdcSettings<A>["tableOptions"]
  if (Predicate.isFunction(given)) {
    const at = `${path}.tableOptions`
    tableOptions = (destination) =>
      Effect.try({
        try: () => given(destination),
        catch: (cause) =>
          new SinkConfigError({
            path: at,
            detail: `the provider threw: ${cause instanceof Error ? cause.message : String(cause)}`
          })
      }).pipe(
        Effect.flatMap((result) =>
          TableOptions.isValidated(result) ? Effect.succeed(result) : TableOptions.make(result, at)
        )
      )
  } else {
    const options = fixed === undefined || Predicate.isFunction(fixed) ? unconfigured : fixed
    tableOptions = () => Effect.succeed(options)
  }
  return { options: cdc, tableOptions, reconciliation: decoded.reconciliation }
})

/** A physical column named like a pseudocolumn: a `SinkConfigError` at `path`. @internal */
export const checkSchema = (schema: TableSchema, path: string): Effect.Effect<void, SinkConfigError> => {
  const clash = collision(schema)
  return clash === undefined ? Effect.void : O.fail(path, collisionMessage(clash))
}

/**
 * Each primary-key column is a column of the destination's schema (case-insensitive, as BigQuery
 * names are): caught when the destination opens, not by `tables.insert` or a later append.
 *
 * @internal
 */
export const checkPrimaryKey = (
  options: CdcTableOptions,
  schema: TableSchema,
  path: string
): Effect.Effect<void, SinkConfigError> => {
  const columns = new Set(schema.fields.map((f) => f.name.toLowerCase()))
  const missing = options.primaryKey.findIndex((name) => !columns.has(name.toLowerCase()))
  return missing === -1
    ? Effect.void
    : O.fail(`${path}[${missing}]`, `'${options.primaryKey[missing]}' is not a column of the serializer's schema`)
}
