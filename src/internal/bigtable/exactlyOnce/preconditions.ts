/**
 * The preconditions of the exactly-once mode (reference 3.5), checked on the live instance before
 * the first CheckAndMutateRow to a table, and never changed by the sink:
 *
 * - the app profile (the configured one, else the instance's `default`) routes to a single cluster
 *   with transactional writes allowed, where the service reports it: the emulator has no instance
 *   admin API (pinned by an integration test), so there `getAppProfile` answers `undefined` and
 *   the check is skipped (logged once at debug level);
 * - the marker family exists, has no GC rule, and is raw (no aggregate type);
 * - every family the staged envelopes name exists, `AddToCell` / `MergeToCell` name aggregate
 *   families and the other mutations raw ones (the types the table declares match the mutations:
 *   under `CREATE_NEVER` the envelopes are the sink's only declaration of families).
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { BigtableClientService, TableFamilies } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, PreconditionFailed } from "../../../Bigtable/BigtableError.ts"
import type { Mutation } from "../../../Bigtable/Mutation.ts"
import { withDeadline } from "../admin/createTable.ts"
import type { Envelope } from "./envelope.ts"

const failed = (table: string, subject: PreconditionFailed["subject"], detail: string) =>
  new BigtableError({ reason: new PreconditionFailed({ table, subject, detail }) })

const instanceOf = (tableName: string): string => tableName.replace(/\/tables\/[^/]+$/, "")

/** The app-profile check: single-cluster routing, a cluster id, transactional writes. @internal */
export const checkAppProfile = Effect.fnUntraced(
  function*(
    client: Pick<BigtableClientService, "getAppProfile">,
    tableName: string,
    appProfileId: string | undefined,
    timeout: Duration.Duration
  ) {
    const name = `${instanceOf(tableName)}/appProfiles/${appProfileId ?? "default"}`
    const routing = yield* withDeadline("GetAppProfile", name, timeout, client.getAppProfile(name))
    if (routing === undefined) {
      return yield* Effect.logDebug(`the service does not report app profiles (an emulator): ${name} is not checked`)
    }
    if (routing._tag !== "SingleCluster" || routing.clusterId === "" || !routing.allowTransactionalWrites) {
      return yield* failed(
        tableName,
        "appProfile",
        `exactly-once requires single-cluster routing with transactional writes: app profile ${name} ` +
          (routing._tag !== "SingleCluster"
            ? "uses multi-cluster routing"
            : routing.clusterId === ""
            ? "names no cluster"
            : "does not allow transactional writes")
      )
    }
  }
)

/** The marker family's check on the live families. @internal */
export const checkMarkerFamily = (
  tableName: string,
  families: TableFamilies,
  markerFamily: string
): Effect.Effect<void, BigtableError> => {
  const type = families.columnFamilies.get(markerFamily)
  if (type === undefined) {
    return Effect.fail(failed(tableName, "markerFamily", `the marker family '${markerFamily}' does not exist`))
  }
  if (families.withGcRule?.has(markerFamily) === true) {
    return Effect.fail(
      failed(tableName, "markerFamily", `the marker family '${markerFamily}' has a GC rule: markers must never expire`)
    )
  }
  if (type !== "RAW") {
    return Effect.fail(
      failed(tableName, "markerFamily", `the marker family '${markerFamily}' must be raw (no value type), is ${type}`)
    )
  }
  return Effect.void
}

const aggregate = (m: Mutation): boolean | undefined =>
  m._tag === "AddToCell" || m._tag === "MergeToCell"
    ? true
    : m._tag === "SetCell" || m._tag === "DeleteFromColumn"
    ? false
    : undefined

/** The families the envelopes name, against the table's. @internal */
export const checkFamilies = (
  tableName: string,
  families: TableFamilies,
  envelopes: Iterable<Envelope>
): Effect.Effect<void, BigtableError> => {
  for (const envelope of envelopes) {
    for (const m of envelope.mutations) {
      if (m._tag === "DeleteFromRow") continue
      const type = families.columnFamilies.get(m.family)
      if (type === undefined) {
        return Effect.fail(failed(tableName, "family", `the column family '${m.family}' does not exist`))
      }
      const wantsAggregate = aggregate(m)
      if (wantsAggregate === true && type === "RAW") {
        return Effect.fail(failed(tableName, "family", `${m._tag} on '${m.family}', a raw family (not an aggregate)`))
      }
      if (wantsAggregate === false && type !== "RAW") {
        return Effect.fail(failed(tableName, "family", `${m._tag} on '${m.family}', an ${type} aggregate family`))
      }
    }
  }
  return Effect.void
}
