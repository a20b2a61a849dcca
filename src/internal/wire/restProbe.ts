/**
 * First-contact probe attempts over REST (`firstContact.ts`): one small read whose HTTP answer,
 * whatever its status, proves the endpoint reachable; only 401 says the credentials were refused.
 * BigQuery's is a one-dataset page of `datasets.list` in the client's project (a 403 from a caller
 * allowed to write a table but not to list datasets is an answer too).
 *
 * @internal
 */
import type { BigQuery } from "@google-cloud/bigquery"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { caught } from "./driverFailure.ts"
import { answered, type Attempt, credentialProblem, credentialsAdvice } from "./firstContact.ts"

/**
 * What a REST call's failure says: an HTTP status is an answer (401: refused credentials); no
 * status is a transport failure, unless google-auth-library found no credentials or had them refused.
 *
 * @internal
 */
export const attemptOf = (service: string, cause: unknown): Attempt => {
  const status = Predicate.isObject(cause) && Predicate.isNumber(cause["code"]) ? cause["code"] : undefined
  const message = Predicate.isObject(cause) && Predicate.isString(cause["message"]) ? cause["message"] : String(cause)
  if (status === 401) return { _tag: "Credentials", detail: credentialsAdvice(service, "refused"), cause }
  if (status !== undefined) return answered
  const problem = credentialProblem(cause)
  if (problem !== undefined) return { _tag: "Credentials", detail: credentialsAdvice(service, problem), cause }
  return { _tag: "Unreachable", detail: message, cause }
}

/** BigQuery's REST probe, within `timeLeft` (at most 5 s). @internal */
export const bigQuery = (rest: BigQuery) => (timeLeft: Duration.Duration): Effect.Effect<Attempt> => {
  const limit = Duration.millis(Math.min(Duration.toMillis(timeLeft), 5_000))
  return Effect.tryPromise({
    try: () => rest.getDatasets({ maxResults: 1, autoPaginate: false }),
    catch: caught
  }).pipe(
    Effect.as(answered),
    Effect.catch(({ cause }) => Effect.succeed(attemptOf("BigQuery", cause))),
    Effect.timeoutOrElse({
      duration: limit,
      orElse: () =>
        Effect.succeed<Attempt>({
          _tag: "Unreachable",
          detail: `no answer within ${Duration.format(limit)}`,
          cause: undefined
        })
    })
  )
}
