/**
 * Table creation for the exactly-once mode under `CREATE_IF_NEEDED`: before its preconditions are
 * checked, a table is created with the declared families and the marker family (raw, no GC rule),
 * or given the ones it lacks, as the at-least-once sink provisions its tables (`admin/createTable.ts`).
 * An existing family is never changed: one declared with another type is a
 * `ColumnFamilyTypeMismatch`, and the preconditions check the marker family as before.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { BigtableClientService } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, RpcFailed } from "../../../Bigtable/BigtableError.ts"
import * as TableDestination from "../../../Bigtable/TableDestination.ts"
import { ensure } from "../admin/createTable.ts"
import * as metrics from "../metrics.ts"
import type { Declared } from "../options.ts"

/** Creates the table `tableName` (a resource name) with `declared`, or adds the families it lacks. @internal */
export const ensureTable: (
  client: BigtableClientService,
  tableName: string,
  declared: Declared,
  timeout: Duration.Duration
) => Effect.Effect<void, BigtableError> = Effect.fn("BigtableSink.ensureTables")(function*(
  client: BigtableClientService,
  tableName: string,
  declared: Declared,
  timeout: Duration.Duration
) {
  yield* Effect.annotateCurrentSpan("bigtable.tables", [tableName])
  const table = yield* TableDestination.parse(tableName).pipe(
    Effect.mapError((e) =>
      new BigtableError({
        reason: new RpcFailed({
          method: "CreateTable",
          table: tableName,
          code: undefined,
          description: e.message,
          attempts: 0,
          cause: e
        })
      })
    )
  )
  const result = yield* ensure(client, table, declared, timeout)
  if (result.created) yield* Metric.update(metrics.tablesCreated, 1)
  if (result.familiesAdded > 0) yield* Metric.update(metrics.columnFamiliesAdded, result.familiesAdded)
})
