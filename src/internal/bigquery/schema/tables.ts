/**
 * REST table calls through `@google-cloud/bigquery` (the driver edge): get with its etag, insert
 * with 409 as success, etag-conditioned schema patch; and the retry of rate limits and 5xx on the
 * recovery budget.
 *
 * @internal
 */
import type { BigQuery, TableField, TableMetadata } from "@google-cloud/bigquery"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { BigQueryError, SchemaMismatch, TableAdminFailed, TableNotFound } from "../../../BigQuery/BigQueryError.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import { type AnyPolicy, toScheduleOf } from "../../core/retrySchedule.ts"
import * as advice from "../../wire/advice.ts"
import * as deadline from "../../wire/deadline.ts"
import * as metrics from "../metrics.ts"
import { type AdminVerdict, classifyAdmin } from "../transport/classify.ts"
import * as schemaCheck from "./check.ts"
import * as datasets from "./datasets.ts"

/** A REST failure: HTTP status (undefined for transport errors) and the first error reason. @internal */
export interface AdminFailure {
  readonly _tag: "AdminFailure"
  readonly method: "insert" | "get" | "patch" | "query"
  readonly status: number | undefined
  readonly reason: string | undefined
  readonly message: string
  readonly cause: unknown
}

/** A REST failure from a driver error. @internal */
export const adminFailure = (method: AdminFailure["method"], cause: unknown): AdminFailure => {
  const status = Predicate.isObject(cause) && Predicate.isNumber(cause["code"]) ? cause["code"] : undefined
  const errors = Predicate.isObject(cause) ? cause["errors"] : undefined
  const first: unknown = Array.isArray(errors) ? errors[0] : undefined
  const reason = Predicate.isObject(first) && Predicate.isString(first["reason"]) ? first["reason"] : undefined
  const message = Predicate.isObject(cause) && Predicate.isString(cause["message"]) ? cause["message"] : String(cause)
  return { _tag: "AdminFailure", method, status, reason, message, cause }
}

/** @internal */
export const verdictOf = (failure: AdminFailure): AdminVerdict =>
  classifyAdmin(failure.method, failure.status, failure.reason)

/** @internal */
export const toError = (destination: TableDestination, failure: AdminFailure): BigQueryError => {
  const detail = failure.reason === undefined ? failure.message : `${failure.reason}: ${failure.message}`
  return new BigQueryError({
    reason: new TableAdminFailed({
      method: `tables.${failure.method}`,
      destination: destination.toString(),
      status: failure.status ?? 0,
      // a refusal says what to grant (a 403 rate limit is retried before it gets here)
      detail: failure.status === 403 && failure.reason !== "rateLimitExceeded"
        ? advice.append(detail, advice.bigqueryPermission)
        : detail,
      cause: failure.cause
    })
  })
}

/** The live table: its schema as REST JSON and its etag (and the whole resource). @internal */
export interface LiveTable {
  readonly schema: unknown
  readonly etag: string | undefined
  readonly metadata: unknown
}

/**
 * A REST call with its deadline (`timeout`, else the fiber's `AdminTimeout`): past it the call is
 * abandoned, logged, and fails without an HTTP status, which `classifyAdmin` retries.
 *
 * @internal
 */
export const withDeadline = <A>(
  method: AdminFailure["method"],
  destination: TableDestination,
  timeout: Duration.Duration | undefined,
  call: Effect.Effect<A, AdminFailure>
): Effect.Effect<A, AdminFailure> =>
  Effect.flatMap(deadline.adminTimeout(timeout), (limit) =>
    deadline.within(call, {
      method: `tables.${method}`,
      target: destination.toString(),
      timeout: limit,
      onTimeout: () =>
        adminFailure(method, new Error(deadline.message(`tables.${method}`, destination.toString(), limit)))
    }))

const tableOf = (rest: BigQuery, destination: TableDestination) =>
  rest.dataset(destination.datasetId, { projectId: destination.projectId }).table(destination.tableId)

/** `tables.get`; a missing table is `undefined`. @internal */
export const get = (
  rest: BigQuery,
  destination: TableDestination,
  timeout?: Duration.Duration
): Effect.Effect<LiveTable | undefined, AdminFailure> =>
  withDeadline(
    "get",
    destination,
    timeout,
    Effect.tryPromise({
      try: () => tableOf(rest, destination).getMetadata(),
      catch: (cause) => adminFailure("get", cause)
    })
  ).pipe(
    Effect.map(([metadata]): LiveTable => ({
      schema: Predicate.isObject(metadata) ? metadata["schema"] : undefined,
      etag: Predicate.isObject(metadata) && Predicate.isString(metadata["etag"]) ? metadata["etag"] : undefined,
      metadata
    })),
    Effect.catchIf((f) => f.status === 404, () => Effect.undefined)
  )

/** `tables.insert`; a 409 (another writer won) is success. @internal */
export const insert = (
  rest: BigQuery,
  destination: TableDestination,
  resource: Record<string, unknown>,
  timeout?: Duration.Duration
): Effect.Effect<"created" | "exists", AdminFailure> =>
  withDeadline(
    "insert",
    destination,
    timeout,
    Effect.tryPromise({
      try: () =>
        rest.dataset(destination.datasetId, { projectId: destination.projectId }).createTable(
          destination.tableId,
          resource
        ),
      catch: (cause) => adminFailure("insert", cause)
    })
  ).pipe(
    Effect.as("created" as const),
    Effect.catchIf((f) => verdictOf(f) === "exists", () => Effect.succeed("exists" as const))
  )

/** The client's typings want mutable arrays and no `undefined` values. */
const mutableFields = (fields: ReadonlyArray<TableSchema.RestField>): Array<TableField> =>
  fields.map((f) => {
    const out: TableField = { name: f.name, type: f.type }
    if (f.mode !== undefined) out.mode = f.mode
    if (f.description !== undefined) out.description = f.description
    if (f.defaultValueExpression !== undefined) out.defaultValueExpression = f.defaultValueExpression
    if (f.maxLength !== undefined) out.maxLength = f.maxLength
    if (f.precision !== undefined) out.precision = f.precision
    if (f.scale !== undefined) out.scale = f.scale
    if (f.rangeElementType !== undefined) out.rangeElementType = { type: f.rangeElementType.type }
    if (f.fields !== undefined) out.fields = mutableFields(f.fields)
    return out
  })

/** Patches the schema, conditioned on `etag` (`If-Match`). @internal */
export const patchSchema = (
  rest: BigQuery,
  destination: TableDestination,
  schema: TableSchema.RestTableSchema,
  etag: string | undefined,
  timeout?: Duration.Duration
): Effect.Effect<void, AdminFailure> =>
  patch(rest, destination, { schema: { fields: mutableFields(schema.fields) } }, etag, timeout)

/** Patches table fields (`schema`, `labels`), conditioned on `etag` (`If-Match`). @internal */
export const patch = (
  rest: BigQuery,
  destination: TableDestination,
  fields: TableMetadata,
  etag: string | undefined,
  timeout?: Duration.Duration
): Effect.Effect<void, AdminFailure> =>
  withDeadline(
    "patch",
    destination,
    timeout,
    Effect.tryPromise({
      try: () => tableOf(rest, destination).setMetadata({ ...fields, ...(etag === undefined ? {} : { etag }) }),
      catch: (cause) => adminFailure("patch", cause)
    })
  ).pipe(Effect.asVoid)

/**
 * Runs a REST call on `destination` again while its failure is retriable, on `policy`'s schedule
 * (at most `maxAttempts` calls, ±25 % jitter), whose input is each failure as the `BigQueryError` it
 * ends in ({@link toError}); anything else, or the last failure, is returned as is.
 *
 * @internal
 */
export const retrying = <A>(
  call: Effect.Effect<A, AdminFailure>,
  policy: AnyPolicy,
  destination: TableDestination
): Effect.Effect<A, AdminFailure> =>
  Effect.retry(call, {
    schedule: toScheduleOf(policy, (f: AdminFailure) => toError(destination, f)),
    while: (f) => verdictOf(f) === "retry"
  })

/** Creation options as REST fragments (`timePartitioning`, `clustering`). @internal */
export type CreateResource = Record<string, unknown>

/**
 * A failed `tables.insert` that may mean the dataset is missing (BigQuery answers 404, the emulator
 * 500): asks `datasets.get`, and when the dataset is missing fails with a 404 naming it and how to
 * create it, which is not retried.
 */
const orMissingDataset = (rest: BigQuery, destination: TableDestination) => (failure: AdminFailure) =>
  failure.status !== 404 && (failure.status ?? 0) < 500 ? Effect.fail(failure) : Effect.flatMap(
    datasets.exists(rest, destination.projectId, destination.datasetId),
    (exists): Effect.Effect<never, AdminFailure> =>
      Effect.fail(
        exists ? failure : {
          ...failure,
          status: 404,
          reason: "notFound",
          message: datasets.missingMessage(destination.projectId, destination.datasetId)
        }
      )
  )

/**
 * Creates the table with `schema` and the creation options; 409 counts as created by another
 * writer. Rate limits and 5xx are retried on `policy`; a missing dataset fails at once, saying how
 * to create it.
 *
 * @internal
 */
export const create = (
  rest: BigQuery,
  destination: TableDestination,
  schema: TableSchema.TableSchema,
  options: CreateResource,
  policy: AnyPolicy
): Effect.Effect<"created" | "exists", BigQueryError> =>
  retrying(
    insert(rest, destination, { ...options, schema: TableSchema.toRest(schema) }).pipe(
      Effect.catch(orMissingDataset(rest, destination)),
      Effect.tap(() => metrics.countRecords(metrics.tablesCreated, 1, undefined))
    ),
    policy,
    destination
  ).pipe(Effect.mapError((f) => toError(destination, f)))

/**
 * The live table (`undefined` when it is missing), its read's rate limits and 5xx retried on
 * `policy`.
 *
 * @internal
 */
export const getLive = (
  rest: BigQuery,
  destination: TableDestination,
  policy: AnyPolicy
): Effect.Effect<LiveTable | undefined, BigQueryError> =>
  retrying(get(rest, destination), policy, destination).pipe(Effect.mapError((f) => toError(destination, f)))

/**
 * With `schemaUpdate` off, checks an existing table against the serializer's schema before the
 * first append (`check.ts`): a column the table lacks, a changed type, a REQUIRED column the
 * serializer never writes is a `SchemaMismatch` naming the column. The live table is read once
 * (`tables.get`, rate limits and 5xx retried on `recovery`); a table that cannot be read, or that
 * vanished, is left to the appends.
 *
 * @internal
 */
export const verify = (
  rest: BigQuery,
  destination: TableDestination,
  desired: TableSchema.TableSchema,
  settings: {
    readonly schemaUpdate: { readonly allowNewFields: boolean; readonly allowFieldRelaxation: boolean }
    readonly stream: { readonly recovery: AnyPolicy }
  }
): Effect.Effect<void, BigQueryError> =>
  settings.schemaUpdate.allowNewFields || settings.schemaUpdate.allowFieldRelaxation
    ? Effect.void
    : Effect.gen(function*() {
      const live = yield* retrying(get(rest, destination), settings.stream.recovery, destination).pipe(
        Effect.orElseSucceed(() => undefined)
      )
      if (live === undefined) return
      const liveSchema = yield* Effect.option(TableSchema.fromRest(live.schema ?? { fields: [] }))
      if (liveSchema._tag === "None") return
      const issues = schemaCheck.check(liveSchema.value, desired)
      const [first] = issues
      if (first === undefined) return
      return yield* new BigQueryError({
        reason: new SchemaMismatch({
          destination: destination.toString(),
          detail: issues.length === 1 ? first.message : `${first.message} (and ${issues.length - 1} more)`,
          cause: issues
        })
      })
    })

/**
 * Creates a table found missing with `schema` and the creation options (computed only then), or
 * under `CREATE_NEVER` fails with `TableNotFound` saying `detail`.
 *
 * @internal
 */
export const createMissing = (
  rest: BigQuery,
  destination: TableDestination,
  request: {
    readonly schema: TableSchema.TableSchema
    readonly createDisposition: CreateDisposition
    readonly createResource: Effect.Effect<CreateResource, BigQueryError>
    readonly policy: AnyPolicy
    readonly detail: string
  }
): Effect.Effect<void, BigQueryError> =>
  request.createDisposition === "CREATE_NEVER"
    ? Effect.fail(
      new BigQueryError({
        reason: new TableNotFound({
          destination: destination.toString(),
          createDisposition: request.createDisposition,
          detail: request.detail,
          cause: undefined
        })
      })
    )
    : Effect.flatMap(request.createResource, (resource) =>
      Effect.asVoid(create(rest, destination, request.schema, resource, request.policy)))
