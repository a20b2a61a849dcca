/**
 * Connector-driven schema updates (reference 2.10): a fresh `tables.get`, `TableSchema.union` of
 * the live and the desired schema, and an etag-conditioned patch; a lost race (409/412, rate
 * limit) sleeps a uniform 0-500 ms and starts again from a fresh read, at most 5 times.
 *
 * @internal
 */
import type { BigQuery } from "@google-cloud/bigquery"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Result from "effect/Result"
import { BigQueryError, SchemaMismatch, TableAdminFailed, TableNotFound } from "../../../BigQuery/BigQueryError.ts"
import type { SchemaUpdateOptions } from "../../../BigQuery/SchemaUpdateOptions.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import type { AnyPolicy } from "../../core/retrySchedule.ts"
import * as metrics from "../metrics.ts"
import * as tables from "./tables.ts"

/** Attempts of the read-union-patch loop. @internal */
export const maxAttempts = 5

/** The upper bound of the uniform sleep after a lost race. @internal */
export const maxRaceSleepMillis = 500

/** What reconciling did. @internal */
export type Outcome = "updated" | "unchanged" | "created"

/** @internal */
export interface Request {
  readonly rest: BigQuery
  readonly destination: TableDestination
  readonly desired: TableSchema.TableSchema
  readonly options: SchemaUpdateOptions
  readonly createDisposition: CreateDisposition
  /** The validated creation options, computed only when the table has to be created. */
  readonly createResource: Effect.Effect<tables.CreateResource, BigQueryError>
  /** The budget of table creation when the table turns out to be missing. */
  readonly recovery: AnyPolicy
}

const mismatch = (destination: TableDestination, detail: string, cause: unknown) =>
  new BigQueryError({ reason: new SchemaMismatch({ destination: destination.toString(), detail, cause }) })

/**
 * Brings the table's schema up to the union with `desired`, or creates the table when it is
 * missing and the disposition allows it.
 *
 * @internal
 */
export const reconcile = (request: Request): Effect.Effect<Outcome, BigQueryError> => {
  const { destination, rest } = request
  const attempt = (n: number): Effect.Effect<Outcome, BigQueryError> =>
    Effect.gen(function*() {
      const live = yield* tables.retrying(tables.get(rest, destination), request.recovery).pipe(
        Effect.mapError((f) => tables.toError(destination, f))
      )
      if (live === undefined) {
        if (request.createDisposition === "CREATE_NEVER") {
          return yield* new BigQueryError({
            reason: new TableNotFound({
              destination: destination.toString(),
              createDisposition: request.createDisposition,
              detail: "the table disappeared during a schema update",
              cause: undefined
            })
          })
        }
        yield* tables.create(rest, destination, request.desired, yield* request.createResource, request.recovery)
        return "created"
      }
      const liveSchema = yield* TableSchema.fromRest(live.schema ?? { fields: [] }).pipe(
        Effect.mapError((e) =>
          new BigQueryError({
            reason: new TableAdminFailed({
              method: "tables.get",
              destination: destination.toString(),
              status: 0,
              detail: `unreadable table schema: ${e.message}`,
              cause: e
            })
          })
        )
      )
      const united = TableSchema.union(liveSchema, request.desired, request.options)
      if (Result.isFailure(united)) {
        const e = united.failure
        return yield* mismatch(destination, `${e.reason} at ${e.path}: ${e.message}`, e)
      }
      if (!united.success.changed) return "unchanged"
      const patched = yield* Effect.result(
        tables.patchSchema(rest, destination, TableSchema.toRest(united.success.schema), live.etag)
      )
      if (Result.isSuccess(patched)) {
        yield* metrics.countRecords(metrics.schemaReconciliations, 1, undefined)
        return "updated"
      }
      const failure = patched.failure
      if (tables.verdictOf(failure) !== "retry" || n >= maxAttempts) {
        return yield* tables.toError(destination, failure)
      }
      const u = yield* Random.next
      yield* Effect.sleep(Duration.millis(Math.floor(u * maxRaceSleepMillis)))
      return yield* attempt(n + 1)
    })
  return attempt(1)
}
