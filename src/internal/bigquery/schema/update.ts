/**
 * Connector-driven schema updates: a fresh `tables.get`, `TableSchema.union` of
 * the live and the desired schema, and an etag-conditioned patch; a lost race (409/412, rate
 * limit) sleeps a uniform 0-500 ms and starts again from a fresh read, at most 5 times.
 *
 * @internal
 */
import type { BigQuery } from "@google-cloud/bigquery"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import { BigQueryError, SchemaMismatch, TableAdminFailed } from "../../../BigQuery/BigQueryError.ts"
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

/** A patch that lost a race (409/412, rate limit): the loop starts again from a fresh read. */
class LostRace extends Data.TaggedClass("LostRace")<{ readonly failure: tables.AdminFailure }> {}

/** At most {@link maxAttempts} attempts, each retry after a uniform 0-500 ms sleep. */
const raceSchedule = Schedule.recurs(maxAttempts - 1).pipe(
  Schedule.addDelay(() => Effect.map(Random.next, (u) => Duration.millis(Math.floor(u * maxRaceSleepMillis))))
)

const unreadableSchema = (destination: TableDestination, e: { readonly message: string }) =>
  new BigQueryError({
    reason: new TableAdminFailed({
      method: "tables.get",
      destination: destination.toString(),
      status: 0,
      detail: `unreadable table schema: ${e.message}`,
      cause: e
    })
  })

/** One read-union-patch round; a patch that lost a race fails with {@link LostRace}. */
const attempt = Effect.fnUntraced(function*(request: Request) {
  const { destination, rest } = request
  const live = yield* tables.getLive(rest, destination, request.recovery)
  if (live === undefined) {
    yield* tables.createMissing(rest, destination, {
      schema: request.desired,
      createDisposition: request.createDisposition,
      createResource: request.createResource,
      policy: request.recovery,
      detail: "the table disappeared during a schema update"
    })
    return "created" as const
  }
  const liveSchema = yield* TableSchema.fromRest(live.schema ?? { fields: [] }).pipe(
    Effect.mapError((e) => unreadableSchema(destination, e))
  )
  const united = TableSchema.union(liveSchema, request.desired, request.options)
  if (Result.isFailure(united)) {
    const e = united.failure
    return yield* mismatch(destination, `${e.reason} at ${e.path}: ${e.message}`, e)
  }
  if (!united.success.changed) return "unchanged" as const
  const patched = yield* Effect.result(
    tables.patchSchema(rest, destination, TableSchema.toRest(united.success.schema), live.etag)
  )
  if (Result.isFailure(patched)) {
    const failure = patched.failure
    return yield* tables.verdictOf(failure) === "retry"
      ? Effect.fail(new LostRace({ failure }))
      : Effect.fail(tables.toError(destination, failure))
  }
  yield* metrics.countRecords(metrics.schemaReconciliations, 1, undefined)
  return "updated" as const
})

/**
 * Brings the table's schema up to the union with `desired`, or creates the table when it is
 * missing and the disposition allows it.
 *
 * @internal
 */
export const reconcile = (request: Request): Effect.Effect<Outcome, BigQueryError> =>
  attempt(request).pipe(
    Effect.retry({ schedule: raceSchedule, while: (e) => e instanceof LostRace }),
    Effect.mapError((e) => e instanceof LostRace ? tables.toError(request.destination, e.failure) : e)
  )
