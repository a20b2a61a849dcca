/**
 * An append on a BigQuery connection whose answer a test awaits as a `Deferred` (the library's
 * appends take theirs through a callback, `Connection.appendNow`).
 */
import { Deferred, Effect, Exit, Result } from "effect"
import type { Connection, StreamFailure } from "../../src/internal/bigquery/transport/connection.ts"
import type { AppendAnswer } from "../../src/internal/bigquery/transport/rowErrors.ts"

/** Sends `body` on `connection` now; the `Deferred` of its answer. */
export const append = (
  connection: Connection,
  body: Uint8Array,
  offset?: number
): Effect.Effect<Deferred.Deferred<AppendAnswer, StreamFailure>> =>
  Effect.sync(() => {
    const d = Deferred.makeUnsafe<AppendAnswer, StreamFailure>()
    connection.appendNow(
      body,
      offset,
      (answer) =>
        void Deferred.doneUnsafe(d, Result.isSuccess(answer) ? Exit.succeed(answer.success) : Exit.fail(answer.failure))
    )
    return d
  })
