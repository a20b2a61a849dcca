/**
 * Datasets, which the sink never creates (as BigQuery's own connectors do not): whether one exists,
 * the message naming a missing one and how to create it, and `BigQueryClient.createDataset`.
 *
 * @internal
 */
import type { BigQuery } from "@google-cloud/bigquery"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { BigQueryError, TableAdminFailed } from "../../../BigQuery/BigQueryError.ts"
import { caught } from "../../wire/driverFailure.ts"

/** How to create a missing dataset `projectId:datasetId`. @internal */
export const missingMessage = (projectId: string, datasetId: string): string =>
  `dataset ${projectId}:${datasetId} does not exist, and the sink creates tables, never datasets: create it ` +
  `with BigQueryClient.createDataset("${datasetId}"), \`bq mk --dataset ${projectId}:${datasetId}\` or the console`

const statusOf = (cause: unknown): number | undefined =>
  Predicate.isObject(cause) && Predicate.isNumber(cause["code"]) ? cause["code"] : undefined

/**
 * Whether the dataset exists: `false` only on a 404 from `datasets.get`; anything else (it exists,
 * or the question could not be answered) is `true`, so the caller's own failure stands. A request
 * without an answer is sent again twice (an emulator may close the connection after its 500).
 *
 * @internal
 */
export const exists = (rest: BigQuery, projectId: string, datasetId: string): Effect.Effect<boolean> =>
  Effect.tryPromise({ try: () => rest.dataset(datasetId, { projectId }).get(), catch: caught }).pipe(
    Effect.retry({ times: 2, while: (f) => statusOf(f.cause) === undefined }),
    Effect.as(true),
    Effect.catch((f) => Effect.succeed(statusOf(f.cause) !== 404))
  )

/**
 * Creates the dataset unless it exists (a 409 from another creator is success), in `location`
 * (default: the client's).
 *
 * @internal
 */
export const create = (
  rest: BigQuery,
  projectId: string,
  datasetId: string,
  location: string | undefined
): Effect.Effect<void, BigQueryError> =>
  Effect.tryPromise({
    try: () => rest.dataset(datasetId, { projectId }).create(location === undefined ? {} : { location }),
    catch: caught
  }).pipe(
    Effect.asVoid,
    Effect.catch(({ cause }) => {
      const status = statusOf(cause)
      if (status === 409) return Effect.void
      const message = Predicate.isObject(cause) && Predicate.isString(cause["message"])
        ? cause["message"]
        : String(cause)
      return Effect.fail(
        new BigQueryError({
          reason: new TableAdminFailed({
            method: "datasets.insert",
            destination: `${projectId}.${datasetId}`,
            status: status ?? 0,
            detail: message,
            cause
          })
        })
      )
    })
  )
