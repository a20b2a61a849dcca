/**
 * Decoding the `cdc` option of `WriteMethod.atLeastOnce` (reference 2.1 rules 7-8, 2.12) into the
 * writer's CDC settings, every failure a `SinkConfigError` under `writeMethod.cdc`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
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

const isTableOptions = (u: unknown): u is Record<string, unknown> | ((...args: ReadonlyArray<never>) => unknown) =>
  O.isRecord(u) || Predicate.isFunction(u)

const Input = Schema.Struct({
  changeType: O.requiredValue(O.guard(SinkOptionsSchema.isFunction, "a function (or Cdc.upsertOnly())")),
  sequenceNumber: SinkOptionsSchema.functionOption,
  tableOptions: O.maybe(O.guard(isTableOptions, "CdcTableOptions or a function of the destination")),
  reconciliation: O.literals(policies).pipe(O.withDefault("VERIFY_ONLY"))
})

const unconfigured: CdcTableOptions = { primaryKey: [], maxStaleness: { _tag: "Unmanaged" } }

/**
 * Decodes `cdc` (typed values come from `cdc` itself once the decode checked them). Fixed table
 * options are validated now, and `RECONCILE` with fixed options that declare no primary key is
 * rejected; a provider's options are validated per destination.
 *
 * @internal
 */
export const decode = <A>(cdc: CdcOptions<A>, path: string): Effect.Effect<CdcSettings<A>, SinkConfigError> =>
  Effect.gen(function*() {
    const decoded = yield* O.decode(Input, path)(cdc)
    const given = cdc.tableOptions
    let tableOptions: CdcSettings<A>["tableOptions"]
    if (given === undefined) {
      if (decoded.reconciliation === "RECONCILE") {
        return yield* O.fail(`${path}.tableOptions`, "RECONCILE needs table options with a primary key")
      }
      tableOptions = () => Effect.succeed(unconfigured)
    } else if (Predicate.isFunction(given)) {
      const at = `${path}.tableOptions`
      tableOptions = (destination) =>
        Effect.try({
          try: () => given(destination),
          catch: (cause) =>
            new SinkConfigError({
              path: at,
              message: `the provider threw: ${cause instanceof Error ? cause.message : String(cause)}`
            })
        }).pipe(
          Effect.flatMap((result) =>
            TableOptions.isValidated(result) ? Effect.succeed(result) : TableOptions.make(result, at)
          )
        )
    } else {
      const fixed = yield* TableOptions.make(given, `${path}.tableOptions`)
      if (decoded.reconciliation === "RECONCILE" && fixed.primaryKey.length === 0) {
        return yield* O.fail(`${path}.tableOptions.primaryKey`, "RECONCILE needs a primary key")
      }
      tableOptions = () => Effect.succeed(fixed)
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
