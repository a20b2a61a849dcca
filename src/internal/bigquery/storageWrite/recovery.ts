/**
 * What the BigQuery backend asks of the writer core when a call of an append ends short of done
 * (`pendingAppend.ts` `Step`): a `reconnect` is a `retry` verdict on the core's `recovery` budget
 * (counted by the request), a `repair` a `Trouble` for the core's repair engine (`core/repairs.ts`):
 * the table created (`createTable`, on `recovery`) or its schema reconciled (`updateSchema`, on the
 * `propagation` budget, the fixed schema wait), with the errors they end in once spent.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, RetriesExhausted, SchemaMismatch } from "../../../BigQuery/BigQueryError.ts"
import type { BigQueryFailure } from "../../../BigQuery/BigQueryFailure.ts"
import type { Accounted, Verdict } from "../../core/backend.ts"
import type { SummaryCounters } from "../../core/summaryCounters.ts"
import { name as codeName } from "../../wire/grpcStatus.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import * as schemaUpdate from "../schema/update.ts"
import type { Request } from "./backend.ts"
import * as Destination from "./destination.ts"
import type * as PendingAppend from "./pendingAppend.ts"

/** What a repair needs of the backend. @internal */
export interface Env<A, E, R> {
  readonly client: BigQueryClientService
  readonly settings: Settings<A, E, R>
  readonly core: { readonly counters: SummaryCounters }
}

export const noVerdict: Verdict<Accounted, BigQueryFailure, never> = {
  written: [],
  routed: [],
  resend: [],
  repair: [],
  retry: undefined,
  terminal: undefined
}

export type BigQueryVerdict<E> = Verdict<Accounted, BigQueryFailure, BigQueryError | E>

export const progressOf = (request: Request): PendingAppend.Progress => {
  if (request.progress === undefined) throw new Error(`BigQuerySink: a step of ${request.key} came before its call`)
  return request.progress
}

/** The call reconnects: the request goes again after the `recovery` budget's next wait (counted as a retry by the core). */
export const reconnect = (
  request: Request,
  step: Extract<PendingAppend.Step, { readonly _tag: "reconnect" }>
): BigQueryVerdict<never> => {
  const progress = progressOf(request)
  const attempt = ++progress.reconnects
  return {
    ...noVerdict,
    // the request's successors on a buffered stream may wait in their calls for its end
    reserve: true,
    retry: {
      items: [request],
      attempt,
      budget: "recovery",
      exhausted: () => exhausted(request.key, attempt, step.problem),
      failure: step.problem.cause
    }
  }
}

/** The table needs a repair: the request waits for the core's repair engine (counted as a retry). */
export const repair = <A, E, R>(
  st: Env<A, E, R>,
  request: Request,
  step: Extract<PendingAppend.Step, { readonly _tag: "repair" }>
): Effect.Effect<BigQueryVerdict<E>> => {
  const progress = progressOf(request)
  const { problem } = step
  const create = step.kind === "createTable"
  const attempt = create ? ++progress.creations : ++progress.schemaWaits
  const trouble = {
    key: request.key,
    item: request,
    observed: request.epoch,
    repair: create ? createTable(st, request) : updateSchema(st, request),
    attempt,
    budget: create ? "recovery" as const : "propagation" as const,
    exhausted: () =>
      create ? exhausted(request.key, attempt, problem) : schemaStillRefused(request.key, attempt, problem),
    failure: problem.cause
  }
  st.core.counters.add(request.key, "retries", 1)
  return Effect.as(metrics.countRecords(metrics.appendRetries, 1, undefined), {
    ...noVerdict,
    reserve: true,
    repair: [trouble]
  })
}

/** A missing table under `CREATE_IF_NEEDED`: created, unless `tables.get` finds it. */
const createTable = <A, E, R>(st: Env<A, E, R>, request: Request): Effect.Effect<void, BigQueryError> =>
  Destination.createIfMissing(st.client, st.settings, request.d.destination, request.schema)

/** Extra fields with schema updates enabled: the table's schema reconciled with the rows'. */
const updateSchema = <A, E, R>(st: Env<A, E, R>, request: Request): Effect.Effect<void, BigQueryError> => {
  const { client, settings } = st
  const destination = request.d.destination
  return Effect.asVoid(schemaUpdate.reconcile({
    rest: client.rest,
    destination,
    desired: request.schema,
    options: settings.schemaUpdate,
    createDisposition: settings.createDisposition,
    createResource: Destination.createResource(settings, destination, request.schema),
    recovery: settings.stream.recovery
  }))
}

const exhausted = (key: string, attempts: number, problem: PendingAppend.Problem): BigQueryError =>
  new BigQueryError({
    reason: new RetriesExhausted({
      method: "AppendRows",
      destination: key,
      attempts,
      code: codeName(problem.failure.code),
      detail: problem.detail,
      cause: problem.cause
    })
  })

const schemaStillRefused = (key: string, attempt: number, problem: PendingAppend.Problem): BigQueryError =>
  new BigQueryError({
    reason: new SchemaMismatch({
      destination: key,
      detail: `the table still refuses the rows after ${attempt - 1} schema waits: ${problem.detail}`,
      cause: problem.cause
    })
  })
