/**
 * The load runner of file loads (reference 2.8): per destination, pre-load reconciliation shared with
 * the streaming paths (`schemaUpdate.reconcile`: create, union, new REQUIRED fields as NULLABLE),
 * then each load job by its deterministic id: looked up first and re-attached (done ⇒ not re-run,
 * running ⇒ awaited; failed ⇒ the next of `-r1`…`-r5`), completion polled on the `poll` schedule; a
 * `jobs.get` or `jobs.insert` answered 429, 5xx or 403 `rateLimitExceeded`, or not answered at all (a
 * reset), is retried on the `reconcile` budget (an insert whose answer was lost meets its own job as
 * 409 and attaches). Jobs run in the client's location, else the destination dataset's
 * (`datasets.get`); a job inserted and then answered 404 is looked up again on the `reconcile` budget
 * and then fails naming it, never counted as run. Only after every job of a destination was seen
 * `DONE` without error are its staged objects deleted, best effort (a transient failure retried on
 * `reconcile`); on failure everything is kept so that a retry runs the same jobs. Each REST call has
 * the `adminTimeout` deadline (1 minute): one unanswered past it is retried like a 5xx.
 *
 * A commit over one load job per destination takes the overflow path of the plan: leaf loads into temp
 * tables (`WRITE_TRUNCATE`, idempotent), copy levels of at most 1,200 sources, then the final copy (or,
 * for `WRITE_TRUNCATE_DATA`, a copy into an aggregate temp table and one `SELECT *` query).
 *
 * @internal
 */
import type { BigQuery, JobMetadata } from "@google-cloud/bigquery"
import type { Storage } from "@google-cloud/storage"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import { BigQueryError, FileLoadFailed } from "../../../BigQuery/BigQueryError.ts"
import type { SchemaUpdateOptions } from "../../../BigQuery/SchemaUpdateOptions.ts"
import * as TableDestination from "../../../BigQuery/TableDestination.ts"
import * as TableSchema from "../../../BigQuery/TableSchema.ts"
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import { hotSpan } from "../../core/hotSpan.ts"
import { type AnyPolicy, toSchedule, toScheduleOf } from "../../core/retrySchedule.ts"
import * as deadline from "../../wire/deadline.ts"
import { isTransientNetworkError } from "../../wire/networkError.ts"
import * as metrics from "../metrics.ts"
import * as tables from "../schema/tables.ts"
import * as schemaUpdate from "../schema/update.ts"
import { defaults, type FileLoadsSettings } from "./options.ts"
import * as Plan from "./plan.ts"

/** What the runner needs besides the plan. @internal */
export interface RunnerContext {
  readonly rest: BigQuery
  readonly storage: Storage
  readonly location: string | undefined
  readonly settings: FileLoadsSettings
  readonly createDisposition: CreateDisposition
  readonly schemaUpdate: SchemaUpdateOptions
  /** The serializer's schema of a destination (captured at its first record, else asked). */
  readonly schemaOf: (destination: TableDestination.TableDestination) => TableSchema.TableSchema
  /** The validated creation options of a destination (`destination.createResource`). */
  readonly createResource: (
    destination: TableDestination.TableDestination,
    schema: TableSchema.TableSchema
  ) => Effect.Effect<tables.CreateResource, BigQueryError>
  /** The per-job limits (reference 2.8's unless given: tests lower them to reach the overflow path). */
  readonly limits?: Plan.Limits | undefined
}

const loadError = (destination: string, detail: string, jobId?: string, cause?: unknown) =>
  new BigQueryError({
    reason: new FileLoadFailed({ step: "load", destination, detail, cause, ...(jobId === undefined ? {} : { jobId }) })
  })

const planError = (destination: string, detail: string, cause?: unknown) =>
  new BigQueryError({ reason: new FileLoadFailed({ step: "plan", destination, detail, cause }) })

/** A job's state as the runner reads it. @internal */
export type JobState =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Done" }
  | { readonly _tag: "Failed"; readonly message: string }

const statusOf = (metadata: JobMetadata | undefined): JobState => {
  const status = metadata?.status
  if (status?.state !== "DONE") return { _tag: "Running" }
  const error = status.errorResult
  return error === undefined || error === null
    ? { _tag: "Done" }
    : { _tag: "Failed", message: `${error.reason ?? "error"}: ${error.message ?? ""}` }
}

const httpStatus = (cause: unknown): number | undefined =>
  Predicate.isObject(cause) && Predicate.isNumber(cause["code"]) ? cause["code"] : undefined

/** A REST call's rejection, before it is classified. */
class CallFailed extends Data.TaggedError("CallFailed")<{ readonly cause: unknown }> {}

/** The cause of a call that went unanswered past its deadline: transient, like a 504. */
class NoAnswer extends Error {}

/**
 * A REST call of the runner with the `adminTimeout` deadline, so that a server that accepts a call and
 * never answers cannot hang a commit: past it the call is abandoned, logged, and fails as
 * {@link NoAnswer}, which {@link isTransient} retries (an insert whose answer was lost meets its own
 * job as 409 and attaches).
 */
const call = <A>(
  limit: Duration.Duration,
  method: string,
  target: string,
  promise: () => Promise<A>
): Effect.Effect<A, CallFailed> =>
  deadline.within(Effect.tryPromise({ try: promise, catch: (cause) => new CallFailed({ cause }) }), {
    method,
    target,
    timeout: limit,
    onTimeout: () => new CallFailed({ cause: new NoAnswer(deadline.message(method, target, limit)) })
  })

/** `jobs.get` with an explicit location (a location-less lookup sees only the US multi-region). @internal */
export const lookup = (
  rest: BigQuery,
  jobId: string,
  location: string | undefined,
  destination: string,
  limit: Duration.Duration = defaults.adminTimeout
): Effect.Effect<JobState, BigQueryError> =>
  call(limit, "jobs.get", jobId, () => rest.job(jobId, location === undefined ? {} : { location }).getMetadata()).pipe(
    Effect.map(([metadata]) => statusOf(metadata)),
    Effect.catch(({ cause }) =>
      httpStatus(cause) === 404
        ? Effect.succeed<JobState>({ _tag: "Missing" })
        : Effect.fail(loadError(destination, `jobs.get failed: ${String(cause)}`, jobId, cause))
    )
  )

/**
 * Whether a call's rejection is one a retry may change: no answer before the deadline, no HTTP
 * answer at all (a connection reset: an insert whose answer was lost meets its own job as 409 and
 * attaches), or a status the tables calls retry (`classifyAdmin`: 429, 5xx, 403
 * `rateLimitExceeded`). An error with neither status nor network code is the job's own (the client
 * raises a job that failed at once as one) and is not retried here.
 */
const isTransientCause = (cause: unknown): boolean => {
  if (cause instanceof NoAnswer) return true
  const failure = tables.adminFailure("get", cause)
  return failure.status === undefined ? isTransientNetworkError(cause) : tables.verdictOf(failure) === "retry"
}

/** Whether a runner error came from an answer a retry may change (see {@link isTransientCause}). @internal */
export const isTransient = (e: BigQueryError): boolean =>
  e.reason._tag === "BigQueryFileLoadFailed" && isTransientCause(e.reason.cause)

/**
 * A best-effort cleanup call of `destination`'s commit: a transient failure retried on the `reconcile`
 * budget, as every runner call is; its failures are `FileLoadFailed` `cleanup`, which the callers log.
 */
const cleanupCall = <A>(
  ctx: Pick<RunnerContext, "settings">,
  destination: string,
  method: string,
  target: string,
  promise: () => Promise<A>
): Effect.Effect<A, BigQueryError> =>
  call(ctx.settings.adminTimeout, method, target, promise).pipe(
    Effect.mapError(({ cause }) =>
      new BigQueryError({
        reason: new FileLoadFailed({
          step: "cleanup",
          destination,
          detail: `${method} ${target} failed: ${String(cause)}`,
          cause
        })
      })
    ),
    Effect.retry({ schedule: toSchedule(ctx.settings.reconcile), while: isTransient })
  )

/** {@link lookup}, a transient failure retried on the `reconcile` budget. */
const lookupRetrying = (ctx: RunnerContext, jobId: string, destination: string) =>
  lookup(ctx.rest, jobId, ctx.location, destination, ctx.settings.adminTimeout).pipe(
    Effect.retry({ schedule: toSchedule(ctx.settings.reconcile), while: isTransient })
  )

/** A job state to look up again, holding the error it ends in if the policy gives up. */
class Pending extends Data.TaggedError("Pending")<{ readonly error: BigQueryError }> {}

/**
 * Looks `jobId` up again on `policy` while its state is `pending`; past the policy, fails with
 * `exhausted`. Succeeds with the first state that is not pending. The policy's schedule sees, for
 * each pending state, that `BigQueryError` (the failure being retried, as `RetryPolicy.fromSchedule`
 * promises), never the internal marker.
 */
const lookupUntil = <S extends JobState, P extends S>(
  lookupOnce: Effect.Effect<S, BigQueryError>,
  pending: (state: S) => state is P,
  policy: AnyPolicy,
  exhausted: () => BigQueryError
): Effect.Effect<Exclude<S, P>, BigQueryError> =>
  lookupOnce.pipe(
    Effect.flatMap((state) =>
      pending(state) ? Effect.fail(new Pending({ error: exhausted() })) : Effect.succeed(state as Exclude<S, P>)
    ),
    Effect.retry({
      schedule: toScheduleOf(policy, (e: Pending | BigQueryError) => (e instanceof Pending ? e.error : e)),
      while: (e) => e instanceof Pending
    }),
    Effect.catchTag("Pending", (p) => Effect.fail(p.error))
  )

const where = (location: string | undefined) => (location === undefined ? "without a location" : `in ${location}`)

/**
 * Looks up a job this commit inserted (or met as 409): BigQuery answers 404 for a job looked up
 * outside its location, and a job we cannot see was not seen to finish, so a 404 is looked up again
 * on the `reconcile` budget, then fails naming the job; it is never taken as done.
 */
const lookupInserted = (ctx: RunnerContext, jobId: string, destination: string) =>
  lookupUntil(
    lookupRetrying(ctx, jobId, destination),
    (state) => state._tag === "Missing",
    ctx.settings.reconcile,
    () =>
      loadError(
        destination,
        `job ${jobId} was inserted but jobs.get ${where(ctx.location)} answers not found: not counted as run`,
        jobId
      )
  )

/** Polls `jobId` on the `poll` schedule until it is seen done (no attempt cap by default). */
const await_ = (ctx: RunnerContext, jobId: string, destination: string) =>
  lookupUntil(
    lookupInserted(ctx, jobId, destination),
    (state) => state._tag === "Running",
    ctx.settings.poll,
    () => loadError(destination, "the job did not finish within the poll budget", jobId)
  )

const insert = (ctx: RunnerContext, jobId: string, configuration: Record<string, unknown>, destination: string) =>
  call(ctx.settings.adminTimeout, "jobs.insert", jobId, () =>
    ctx.rest.createJob({
      jobId,
      ...(ctx.location === undefined ? {} : { location: ctx.location }),
      configuration
    })).pipe(
      Effect.asVoid,
      // another attempt inserted it first (or this one did and its answer was lost): attach to it
      Effect.catch(({ cause }) =>
        httpStatus(cause) === 409
          ? Effect.void
          : Effect.fail(loadError(destination, `jobs.insert failed: ${String(cause)}`, jobId, cause))
      ),
      Effect.retry({ schedule: toSchedule(ctx.settings.reconcile), while: isTransient })
    )

/** What {@link runJob} did: attached to a finished job, awaited a running one, or ran it. @internal */
export type JobOutcome = "attached" | "awaited" | "ran"

/**
 * Runs the job of deterministic id `jobId`: looked up first (done ⇒ not re-run, running ⇒ awaited);
 * when it failed before, the next of `-r1`…`-r5` is probed the same way; a job submitted now that
 * fails is a `FileLoadFailed` `load`.
 *
 * @internal
 */
export const runJob = Effect.fnUntraced(
  function*(ctx: RunnerContext, jobId: string, configuration: Record<string, unknown>, destination: string) {
    const failures: Array<string> = []
    for (let n = 0; n <= Plan.maxRetryIds; n++) {
      const id = n === 0 ? jobId : Plan.retryId(jobId, n)
      const state = yield* lookupRetrying(ctx, id, destination)
      if (state._tag === "Done") return { jobId: id, outcome: "attached" as const }
      if (state._tag === "Failed") {
        failures.push(`${id}: ${state.message}`)
        continue
      }
      if (state._tag === "Missing") yield* insert(ctx, id, configuration, destination)
      const final = yield* await_(ctx, id, destination)
      if (final._tag === "Failed") return yield* loadError(destination, final.message, id)
      return { jobId: id, outcome: state._tag === "Running" ? "awaited" as const : "ran" as const }
    }
    return yield* loadError(destination, `every deterministic id failed: ${failures.join("; ")}`, jobId)
  },
  (effect, _ctx, jobId, _configuration, destination) =>
    effect.pipe(hotSpan("FileLoads.runJob", { "job.id": jobId, destination }))
)

const tableRefOf = (t: Plan.TableRef) => ({ projectId: t.projectId, datasetId: t.datasetId, tableId: t.tableId })

/** The `configuration` of a load job. @internal */
export const loadConfiguration = (
  job: Plan.LoadJob,
  schemaUpdates: SchemaUpdateOptions,
  schema: unknown
): Record<string, unknown> => {
  const appending = job.writeDisposition === "WRITE_APPEND" || job.writeDisposition === "WRITE_TRUNCATE_DATA"
  const updates = [
    ...(schemaUpdates.allowNewFields ? ["ALLOW_FIELD_ADDITION"] : []),
    ...(schemaUpdates.allowFieldRelaxation ? ["ALLOW_FIELD_RELAXATION"] : [])
  ]
  return {
    load: {
      sourceUris: job.uris,
      sourceFormat: job.format,
      useAvroLogicalTypes: true,
      destinationTable: tableRefOf(job.table),
      writeDisposition: job.writeDisposition,
      createDisposition: job.createDisposition,
      ...(schema === undefined ? {} : { schema }),
      ...(appending && updates.length > 0 ? { schemaUpdateOptions: updates } : {})
    }
  }
}

/** The live table's schema as REST JSON, read after reconciliation (`undefined` when it has none). */
const liveSchema = (ctx: RunnerContext, destination: TableDestination.TableDestination) =>
  tables.getLive(ctx.rest, destination, ctx.settings.reconcile).pipe(
    Effect.map((live) => (Predicate.isObject(live?.schema) ? live.schema : undefined))
  )

/**
 * Pre-load reconciliation (reference 2.8), once per destination per commit: a missing table is created
 * (the serializer's schema and `tableCreateOptions`; `CREATE_NEVER` fails); with schema updates on the
 * table is widened to the union (new REQUIRED fields as NULLABLE), shared with the streaming paths.
 * Returns the schema every load job carries: the serializer's for `WRITE_TRUNCATE` (it replaces the
 * table's), else the live one after reconciliation, so that with updates off staged fields the table
 * lacks are ignored by BigQuery, as the reference says, instead of failing the load.
 */
const reconcile = Effect.fnUntraced(function*(
  ctx: RunnerContext,
  destination: TableDestination.TableDestination
): Effect.fn.Return<unknown, BigQueryError> {
  const desired = ctx.schemaOf(destination)
  const createResourceOf = Effect.suspend(() => ctx.createResource(destination, desired))
  const updatesOn = ctx.schemaUpdate.allowNewFields || ctx.schemaUpdate.allowFieldRelaxation
  if (updatesOn) {
    yield* schemaUpdate.reconcile({
      rest: ctx.rest,
      destination,
      desired,
      options: ctx.schemaUpdate,
      createDisposition: ctx.createDisposition,
      createResource: createResourceOf,
      recovery: ctx.settings.reconcile
    })
  } else {
    const live = yield* tables.getLive(ctx.rest, destination, ctx.settings.reconcile)
    if (live === undefined) {
      yield* tables.createMissing(ctx.rest, destination, {
        schema: desired,
        createDisposition: ctx.createDisposition,
        createResource: createResourceOf,
        policy: ctx.settings.reconcile,
        detail: "the destination of staged files does not exist"
      })
    }
  }
  if (ctx.settings.writeDisposition === "WRITE_TRUNCATE") return TableSchema.toRest(desired)
  return yield* liveSchema(ctx, destination)
})

/**
 * The location of `destination`'s jobs: the client's, else the dataset's (`datasets.get`), so that
 * jobs are inserted and looked up where BigQuery runs them (a location-less `jobs.get` sees only the US
 * multi-region and answers 404 elsewhere).
 */
const jobLocation = (
  ctx: RunnerContext,
  destination: TableDestination.TableDestination
): Effect.Effect<string | undefined, BigQueryError> =>
  ctx.location !== undefined ? Effect.succeed(ctx.location) : call(
    ctx.settings.adminTimeout,
    "datasets.get",
    destination.toString(),
    () => ctx.rest.dataset(destination.datasetId, { projectId: destination.projectId }).getMetadata()
  ).pipe(
    Effect.map(([metadata]) =>
      Predicate.isObject(metadata) && Predicate.isString(metadata["location"]) ? metadata["location"] : undefined
    ),
    Effect.mapError(({ cause }) =>
      loadError(destination.toString(), `datasets.get failed: ${String(cause)}`, undefined, cause)
    ),
    Effect.retry({ schedule: toSchedule(ctx.settings.reconcile), while: isTransient })
  )

/** Deletes one staged object, retried as every cleanup call is: whether it is gone; a failure is logged. */
const deleteObject = (
  ctx: Pick<RunnerContext, "storage" | "settings">,
  destination: string,
  uri: string
): Effect.Effect<boolean> => {
  const match = /^gs:\/\/([^/]+)\/(.+)$/.exec(uri)
  if (match === null) return Effect.succeed(false)
  const [, bucket = "", name = ""] = match
  const remove = () => ctx.storage.bucket(bucket).file(name).delete({ ignoreNotFound: true })
  return cleanupCall(ctx, destination, "objects.delete", uri, remove).pipe(
    Effect.as(true),
    Effect.catch((e) => Effect.as(Effect.logWarning(`file loads: could not delete ${uri}: ${e.reason.detail}`), false))
  )
}

/**
 * Deletes staged objects after their loads succeeded; a transient failure ({@link isTransientCause})
 * is retried on the `reconcile` budget (no later commit names these files again: a delete given up
 * leaks the object), then failures are logged, never raised.
 */
const cleanup = (ctx: RunnerContext, destination: string, uris: ReadonlyArray<string>) =>
  Effect.forEach(uris, (uri) => deleteObject(ctx, destination, uri), { concurrency: 8, discard: true })

/**
 * Deletes the staged objects of committables that no saved record names: those of a fenced writer's
 * refused checkpoint, which no writer will ever load. Best effort: each delete retried as a cleanup
 * call, all of them within `adminTimeout`; each deleted object is counted
 * (`bigquery.fileLoads.stagedFilesDiscarded`), and what is left is logged, never raised.
 *
 * @internal
 */
export const discard = Effect.fnUntraced(
  function*(ctx: Pick<RunnerContext, "storage" | "settings">, committables: ReadonlyArray<Plan.Committable>) {
    const deleted = yield* Effect.forEach(
      committables,
      (c) => deleteObject(ctx, c.destination, c.uri),
      { concurrency: 8 }
    )
    const count = deleted.filter(Boolean).length
    yield* metrics.countRecords(metrics.stagedFilesDiscarded, count, undefined)
    if (count < committables.length) {
      yield* Effect.logWarning(
        `file loads: ${
          committables.length - count
        } of ${committables.length} staged files of a refused checkpoint are left`
      )
    }
  },
  (effect, ctx, committables) =>
    effect.pipe(
      Effect.timeoutOrElse({
        duration: ctx.settings.adminTimeout,
        orElse: () =>
          Effect.logWarning(
            `file loads: the staged files of a refused checkpoint were not all deleted within ${
              Duration.format(ctx.settings.adminTimeout)
            }`
          )
      }),
      hotSpan("FileLoads.discard", { "files": committables.length })
    )
)

/** The `configuration` of a copy job of the overflow path. @internal */
export const copyConfiguration = (job: Plan.CopyJob): Record<string, unknown> => ({
  copy: {
    sourceTables: job.sources.map(tableRefOf),
    destinationTable: tableRefOf(job.table),
    writeDisposition: job.writeDisposition,
    createDisposition: job.createDisposition
  }
})

/** The `configuration` of the terminal query of `WRITE_TRUNCATE_DATA` (an atomic data replace). @internal */
export const queryConfiguration = (job: Plan.QueryJob): Record<string, unknown> => ({
  query: {
    query: `SELECT * FROM \`${Plan.tablePath(job.source)}\``,
    useLegacySql: false,
    destinationTable: tableRefOf(job.table),
    writeDisposition: job.writeDisposition,
    createDisposition: "CREATE_NEVER"
  }
})

/** Deletes temp tables after their destination's jobs succeeded, retried as {@link cleanup}; failures are logged, never raised. */
const dropTemporaries = (ctx: RunnerContext, destination: string, temporaries: ReadonlyArray<Plan.TableRef>) =>
  Effect.forEach(
    temporaries,
    (t) =>
      cleanupCall(
        ctx,
        destination,
        "tables.delete",
        Plan.tablePath(t),
        () => ctx.rest.dataset(t.datasetId, { projectId: t.projectId }).table(t.tableId).delete()
      ).pipe(
        Effect.catch((e) =>
          e.reason._tag === "BigQueryFileLoadFailed" && httpStatus(e.reason.cause) === 404
            ? Effect.void
            : Effect.logWarning(`file loads: could not delete temp table ${Plan.tablePath(t)}: ${e.reason.detail}`)
        )
      ),
    { concurrency: 8, discard: true }
  )

/** The jobs of one destination in plan order: loads, then each copy level, then the query. */
const runDestination = Effect.fnUntraced(function*(ctx: RunnerContext, d: Plan.DestinationPlan, schema: unknown) {
  const path = Plan.tablePath(d.destination)
  const outcomes: Array<{ readonly jobId: string; readonly outcome: JobOutcome }> = []
  for (const job of d.loads) {
    outcomes.push(yield* runJob(ctx, job.jobId, loadConfiguration(job, ctx.schemaUpdate, schema), path))
  }
  // each copy level completes before the next (reference 2.8)
  for (const level of d.copies) {
    for (const job of level) outcomes.push(yield* runJob(ctx, job.jobId, copyConfiguration(job), path))
  }
  if (d.query !== undefined) outcomes.push(yield* runJob(ctx, d.query.jobId, queryConfiguration(d.query), path))
  return outcomes
})

/**
 * Plans `committables` (a refused plan fails with `FileLoadFailed` `plan` before any table change or
 * job), then for each destination in order reconciles the table, runs its jobs (direct: the load
 * jobs; overflow: leaf loads into temp tables, copy levels, the terminal query of
 * `WRITE_TRUNCATE_DATA`) and deletes its staged files and temp tables, best effort. Every call has
 * the `adminTimeout` deadline.
 *
 * @internal
 */
export const commit = Effect.fnUntraced(function*(
  ctx: RunnerContext,
  committables: ReadonlyArray<Plan.Committable>
): Effect.fn.Return<ReadonlyArray<{ readonly jobId: string; readonly outcome: JobOutcome }>, BigQueryError> {
  if (committables.length === 0) return []
  const planned = Plan.plan(committables, {
    writeDisposition: ctx.settings.writeDisposition,
    tempDataset: ctx.settings.tempDataset,
    limits: ctx.limits
  })
  if (Result.isFailure(planned)) {
    const e = planned.failure
    return yield* planError(committables[0]?.destination ?? "", e.message, e)
  }
  const outcomes: Array<{ readonly jobId: string; readonly outcome: JobOutcome }> = []
  for (const d of planned.success.destinations) {
    const destination = TableDestination.makeUnsafe(d.destination)
    const schema = yield* reconcile(ctx, destination)
    const located: RunnerContext = { ...ctx, location: yield* jobLocation(ctx, destination) }
    // every job of the destination was seen DONE without error: only now are its files deleted
    outcomes.push(...(yield* runDestination(located, d, schema)))
    yield* dropTemporaries(ctx, Plan.tablePath(d.destination), d.temporaries)
    yield* cleanup(ctx, Plan.tablePath(d.destination), d.uris)
  }
  return outcomes
}, (effect, ctx, committables) =>
  effect.pipe(
    // the table calls of reconciliation (tables.get / insert / patch) take the same deadline
    Effect.provideService(deadline.AdminTimeout, ctx.settings.adminTimeout),
    hotSpan("FileLoads.commit", { "files": committables.length })
  ))
