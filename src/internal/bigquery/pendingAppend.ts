/**
 * One in-flight append and its repair loop (cf. Go's `appendresult.go` and the Java writer's
 * repair): send, await the response (with a watchdog), classify a failure (`retry.ts`) and act on
 * the verdict until the rows are committed, routed, or the budget is spent.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { BigQueryClientService } from "../../BigQuery/BigQueryClient.ts"
import { BigQueryError, RequestRejected, RetriesExhausted, SchemaMismatch } from "../../BigQuery/BigQueryError.ts"
import type { FailedRow } from "../../BigQuery/BigQueryFailure.ts"
import type * as TableSchema from "../../BigQuery/TableSchema.ts"
import { name as codeName } from "../grpcStatus.ts"
import { attemptBudget, delayAfter } from "../retrySchedule.ts"
import * as AppendRequest from "./appendRequest.ts"
import type { Connection } from "./connection.ts"
import { createIfMissing, createResource, type Destination, tableNotFound } from "./destination.ts"
import * as metrics from "./metrics.ts"
import type { Settings } from "./options.ts"
import { type AppendFailure, classify, sleepBackoff } from "./retry.ts"
import { splitByRowErrors } from "./rowErrors.ts"
import * as schemaUpdate from "./schemaUpdate.ts"

/** The schema-wait budget: flat 30 s, 30 attempts, ±25 % (not configurable, reference 2.4). @internal */
export const schemaWait = {
  initialBackoff: Duration.seconds(30),
  maxBackoff: Duration.seconds(30),
  maxAttempts: 30
}

/**
 * A batch handed to an append fiber: its rows as one `ProtoRows` body, framed in place in a batch
 * buffer (`Split.seal`; survivors of row errors are re-framed with `AppendRequest.encodeRows`), with
 * `AppendRequest.headroom` free bytes before it; their count and their own bytes.
 *
 * @internal
 */
export interface Batch {
  readonly body: Uint8Array
  readonly count: number
  readonly bytes: number
  readonly descriptor: Uint8Array
  readonly schema: TableSchema.TableSchema
}

/** What an append achieved. @internal */
export interface Outcome {
  readonly key: string
  readonly written: number
  readonly bytes: number
  readonly retries: number
  readonly failed: ReadonlyArray<FailedRow>
  readonly schemaPushed: boolean
}

const sumBytes = (rows: ReadonlyArray<Uint8Array>): number => {
  let n = 0
  for (let i = 0; i < rows.length; i++) n += rows[i]!.length
  return n
}

/**
 * Appends `batch` to `destination` until it is committed (survivors of row errors included) or a
 * terminal error. Budgets: first-level retries of in-band transient errors on the same connection
 * (`retry*` options), then the recovery budget for reconnects, table creation and what the first
 * level gave up on, and the schema-wait budget for schema updates.
 *
 * @internal
 */
export const run = <A, E, R>(
  client: BigQueryClientService,
  settings: Settings<A, E, R>,
  destination: Destination,
  batch: Batch
): Effect.Effect<Outcome, BigQueryError> =>
  Effect.gen(function*() {
    const s = settings.stream
    const key = destination.key
    const context = {
      schemaUpdatesEnabled: settings.schemaUpdate.allowNewFields || settings.schemaUpdate.allowFieldRelaxation,
      createDisposition: settings.createDisposition
    }
    let body = batch.body
    let count = batch.count
    let bytes = batch.bytes
    let recovery = 0
    let schemaWaits = 0
    let firstLevel = 0
    let firstLevelStart = 0
    let retries = 0
    let schemaPushed = false
    const failed: Array<FailedRow> = []
    const exhausted = (failure: AppendFailure, detail: string, cause: unknown, attempts: number) =>
      new BigQueryError({
        reason: new RetriesExhausted({
          method: "AppendRows",
          destination: key,
          attempts,
          code: codeName(failure.code),
          detail,
          cause
        })
      })
    /** Retires `connection` and sleeps before the next attempt on the recovery budget, or fails when it is spent. */
    const reconnect = (connection: Connection, failure: AppendFailure, detail: string, cause: unknown) =>
      Effect.gen(function*() {
        yield* destination.slot.retire(connection)
        // spent after maxAttempts, or when a caller's schedule ends
        const delay = yield* delayAfter(s.recovery, recovery + 1)
        if (recovery >= attemptBudget(s.recovery) || delay._tag === "None") {
          return yield* exhausted(failure, detail, cause, recovery + 1)
        }
        recovery++
        retries++
        yield* Effect.sleep(delay.value)
      })
    for (;;) {
      // never sent while the destination's table is being repaired: wait, then append after it
      yield* destination.guard.settled
      const epoch = destination.guard.epoch()
      const connection = yield* destination.slot.acquire(batch.descriptor)
      const pending = yield* connection.append(body)
      const answer = yield* Deferred.await(pending).pipe(Effect.result, Effect.timeoutOption(s.responseTimeout))
      let failure: AppendFailure
      let detail: string
      let cause: unknown
      let rowErrors: Parameters<typeof splitByRowErrors>[2] = []
      if (Option.isNone(answer)) {
        yield* destination.slot.abort(connection, "no response within responseTimeout")
        failure = { origin: "watchdog", code: undefined, storageCode: undefined, rowErrors: 0 }
        detail = `no response within ${Duration.format(s.responseTimeout)}`
        cause = undefined
      } else if (answer.value._tag === "Failure") {
        const f = answer.value.failure
        yield* destination.slot.retire(connection)
        failure = { origin: "stream", code: f.code, storageCode: f.storageCode, rowErrors: 0 }
        detail = f.message
        cause = f.cause
      } else {
        const response = answer.value.success
        if (response.updatedSchema !== undefined) schemaPushed = true
        if (response.ok) {
          return { key, written: count, bytes, retries, failed, schemaPushed }
        }
        failure = {
          origin: "response",
          code: response.code,
          storageCode: response.storageCode,
          rowErrors: response.rowErrors.length
        }
        detail = response.message
        cause = response
        rowErrors = response.rowErrors
      }
      yield* metrics.countError(codeName(failure.code))
      const verdict = classify(failure, context)
      switch (verdict._tag) {
        case "retry": {
          const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
          if (firstLevel === 0) firstLevelStart = now
          const limit = s.retry._tag === "Backoff" && s.retry.maxDuration !== undefined
            ? Duration.toMillis(s.retry.maxDuration)
            : Number.POSITIVE_INFINITY
          const delay = yield* delayAfter(s.retry, firstLevel + 1)
          if (
            firstLevel + 1 < attemptBudget(s.retry) && now - firstLevelStart < limit && Option.isSome(delay)
          ) {
            firstLevel++
            retries++
            yield* Effect.sleep(delay.value)
            continue
          }
          // the first level gave up: rebuild the connection and re-append on the recovery budget
          firstLevel = 0
          yield* reconnect(connection, failure, detail, cause)
          continue
        }
        case "reconnect": {
          yield* reconnect(connection, failure, detail, cause)
          continue
        }
        case "createTable": {
          const delay = recovery > 0 ? yield* delayAfter(s.recovery, recovery) : Option.some(Duration.zero)
          if (recovery >= attemptBudget(s.recovery) || Option.isNone(delay)) {
            return yield* exhausted(failure, detail, cause, recovery + 1)
          }
          // one repair per destination at a time: the batches that met the same missing table
          // skip theirs (their epoch is past) and re-append after it
          yield* destination.guard.repair(
            epoch,
            Effect.andThen(
              createIfMissing(client, settings, destination.destination, batch.schema),
              destination.slot.retire(connection)
            )
          )
          yield* destination.slot.retire(connection)
          if (recovery > 0) yield* Effect.sleep(delay.value)
          recovery++
          retries++
          continue
        }
        case "updateSchema": {
          if (schemaWaits >= schemaWait.maxAttempts) {
            return yield* new BigQueryError({
              reason: new SchemaMismatch({
                destination: key,
                detail: `the table still refuses the rows after ${schemaWaits} schema waits: ${detail}`,
                cause
              })
            })
          }
          yield* destination.guard.repair(
            epoch,
            Effect.tap(
              schemaUpdate.reconcile({
                rest: client.rest,
                destination: destination.destination,
                desired: batch.schema,
                options: settings.schemaUpdate,
                createDisposition: settings.createDisposition,
                createResource: createResource(settings, destination.destination, batch.schema),
                recovery: s.recovery
              }),
              () => destination.slot.retire(connection)
            )
          )
          yield* destination.slot.retire(connection)
          if (schemaWaits > 0) yield* sleepBackoff(schemaWait, schemaWaits)
          schemaWaits++
          retries++
          continue
        }
        case "routeRows": {
          const rows = AppendRequest.rowsOf(body)
          const split = splitByRowErrors(key, rows, rowErrors, cause)
          if (split === undefined) {
            return yield* new BigQueryError({
              reason: new RequestRejected({
                method: "AppendRows",
                destination: key,
                code: codeName(failure.code),
                detail: `row errors name no row of the batch of ${rows.length} rows: ${detail}`,
                cause
              })
            })
          }
          // a routed row keeps a copy of its bytes, not a view into the whole batch
          for (const f of split.failed) failed.push(f.payload === undefined ? f : { ...f, payload: f.payload.slice() })
          count = split.survivors.length
          bytes = sumBytes(split.survivors)
          body = AppendRequest.encodeRows(split.survivors)
          if (count === 0) return { key, written: 0, bytes: 0, retries, failed, schemaPushed }
          retries++
          continue
        }
        case "fail": {
          switch (verdict.kind) {
            case "tableNotFound":
              return yield* tableNotFound(key, settings.createDisposition, detail, cause)
            case "schemaMismatch":
              return yield* new BigQueryError({
                reason: new SchemaMismatch({
                  destination: key,
                  detail: `rows have fields the table lacks (${detail}); enable schemaUpdate: ` +
                    "{ allowNewFields: true } or add the columns to the table",
                  cause
                })
              })
            case "rejected":
              return yield* new BigQueryError({
                reason: new RequestRejected({
                  method: "AppendRows",
                  destination: key,
                  code: codeName(failure.code),
                  detail,
                  cause
                })
              })
          }
        }
      }
    }
  }).pipe(
    // one span per batch, without capturing a stack trace per append
    Effect.withSpan(
      "BigQuerySink.append",
      { attributes: { "bigquery.destination": destination.key, "bigquery.rows": batch.count } },
      { captureStackTrace: false }
    )
  )
