/**
 * Table and column-family creation: create the table with every declared family;
 * on `ALREADY_EXISTS` add the missing declared families in one atomic modification, never touching
 * existing families; with aggregate families declared, check the existing declared types.
 *
 * @internal
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { ColumnFamilyProto, GcRuleProto, ValueTypeProto } from "../../../Bigtable/BigtableClient.ts"
import { BigtableError, ColumnFamilyTypeMismatch, RpcFailed } from "../../../Bigtable/BigtableError.ts"
import type { GcRule } from "../../../Bigtable/GcRule.ts"
import type { ColumnFamilyType } from "../../../Bigtable/TableCreateOptions.ts"
import type { TableDestination } from "../../../Bigtable/TableDestination.ts"
import * as deadline from "../../wire/deadline.ts"
import * as grpc from "../../wire/grpcStatus.ts"
import type { Declared, DeclaredFamily } from "../options.ts"
import { type AdminMethod, classifyAdmin } from "../transport/classify.ts"
import type { Service } from "../transport/connect.ts"

/** @internal */
export const gcRuleProto = (rule: GcRule): GcRuleProto => {
  switch (rule._tag) {
    case "MaxVersions":
      return { maxNumVersions: rule.versions }
    case "MaxAge": {
      const millis = Duration.toMillis(rule.age)
      return { maxAge: { seconds: Math.floor(millis / 1000), nanos: Math.round((millis % 1000) * 1_000_000) } }
    }
    case "Union":
      return { union: { rules: rule.rules.map(gcRuleProto) } }
    case "Intersection":
      return { intersection: { rules: rule.rules.map(gcRuleProto) } }
  }
}

const int64 = { int64Type: { encoding: { bigEndianBytes: {} } } }

/** @internal */
export const valueTypeProto = (type: ColumnFamilyType): ValueTypeProto | undefined => {
  switch (type) {
    case "RAW":
      return undefined
    case "INT64_SUM":
      return { aggregateType: { inputType: int64, sum: {} } }
    case "INT64_MIN":
      return { aggregateType: { inputType: int64, min: {} } }
    case "INT64_MAX":
      return { aggregateType: { inputType: int64, max: {} } }
    case "INT64_HLL":
      return { aggregateType: { inputType: int64, hllppUniqueCount: {} } }
  }
}

/** @internal */
export const familyProto = (family: DeclaredFamily): ColumnFamilyProto => {
  const valueType = valueTypeProto(family.type)
  return {
    ...(family.gcRule === undefined ? {} : { gcRule: gcRuleProto(family.gcRule) }),
    ...(valueType === undefined ? {} : { valueType })
  }
}

const familiesProto = (
  families: Iterable<readonly [string, DeclaredFamily]>
): { [family: string]: ColumnFamilyProto } => {
  const out: { [family: string]: ColumnFamilyProto } = {}
  for (const [name, family] of families) out[name] = familyProto(family)
  return out
}

/** What an ensure did, for the `tablesCreated` and `columnFamiliesAdded` metrics. @internal */
export interface EnsureResult {
  readonly created: boolean
  readonly familiesAdded: number
}

const hasCode = (error: BigtableError, code: number): boolean =>
  error.reason._tag === "BigtableRpcFailed" && error.reason.code === code

/**
 * The families to add to a table whose live families are `live`, or the first type mismatch.
 * Pure; checks types only when an aggregate family is declared.
 *
 * @internal
 */
export const reconcile = (
  declared: Declared,
  live: ReadonlyMap<string, ColumnFamilyType | "UNKNOWN">
):
  | { readonly _tag: "Missing"; readonly families: ReadonlyArray<readonly [string, DeclaredFamily]> }
  | { readonly _tag: "Mismatch"; readonly family: string; readonly declared: string; readonly actual: string } =>
{
  const missing: Array<readonly [string, DeclaredFamily]> = []
  for (const [name, family] of declared.families) {
    const actual = live.get(name)
    if (actual === undefined) missing.push([name, family])
    else if (declared.hasAggregate && actual !== family.type) {
      return { _tag: "Mismatch", family: name, declared: family.type, actual }
    }
  }
  return { _tag: "Missing", families: missing }
}

const isAdminMethod = (method: string): method is AdminMethod =>
  method === "GetTable" || method === "CreateTable" || method === "ModifyColumnFamilies"

/**
 * Whether a failed {@link ensure} must fail the sink at once instead of another repair round: a
 * type mismatch, or an admin status {@link classifyAdmin} calls fatal (`PERMISSION_DENIED`, ...).
 *
 * @internal
 */
export const isTerminal = (error: BigtableError): boolean => {
  const reason = error.reason
  if (reason._tag === "BigtableRpcFailed") {
    return isAdminMethod(reason.method) ? classifyAdmin(reason.method, reason.code) === "fatal" : !reason.isRetryable
  }
  return !reason.isRetryable
}

const maxRaces = 5

/**
 * An admin call with its deadline: past `timeout` it is interrupted, logged, and fails
 * `DEADLINE_EXCEEDED` (retried by the repair on the recovery budget, see `classifyAdmin`).
 *
 * @internal
 */
export const withDeadline = <A>(
  method: AdminMethod,
  table: string,
  timeout: Duration.Duration,
  call: Effect.Effect<A, BigtableError>
): Effect.Effect<A, BigtableError> =>
  deadline.within(call, {
    method,
    target: table,
    timeout,
    onTimeout: () =>
      new BigtableError({
        reason: new RpcFailed({
          method,
          table,
          code: grpc.Code.DEADLINE_EXCEEDED,
          description: deadline.message(method, table, timeout),
          attempts: 1,
          cause: undefined
        })
      })
  })

/** A modification that lost a race with a concurrent one (ALREADY_EXISTS): read the families again. */
class LostRace extends Data.TaggedError("LostRace") {}

/** `ALREADY_EXISTS` as `false` (another writer got there first), success as `true`. */
const unlessExists = (call: Effect.Effect<unknown, BigtableError>): Effect.Effect<boolean, BigtableError> =>
  call.pipe(Effect.as(true), Effect.catchIf((e) => hasCode(e, grpc.Code.ALREADY_EXISTS), () => Effect.succeed(false)))

/**
 * One round of adding the declared families the table lacks: read its families, then one atomic
 * modification; a family created concurrently fails it with {@link LostRace}. The families added.
 */
const addMissingFamilies = Effect.fnUntraced(function*(
  client: Service,
  table: TableDestination,
  declared: Declared,
  limit: Duration.Duration
) {
  const name = String(table)
  const schema = yield* withDeadline("GetTable", name, limit, client.getTable(table.tableName))
  const verdict = reconcile(declared, schema.columnFamilies)
  if (verdict._tag === "Mismatch") {
    return yield* new BigtableError({
      reason: new ColumnFamilyTypeMismatch({
        table: name,
        family: verdict.family,
        declared: verdict.declared,
        actual: verdict.actual
      })
    })
  }
  if (verdict.families.length === 0) return 0
  const added = yield* unlessExists(withDeadline(
    "ModifyColumnFamilies",
    name,
    limit,
    client.modifyColumnFamilies({ tableName: table.tableName, create: familiesProto(verdict.families) })
  ))
  return added ? verdict.families.length : yield* new LostRace()
})

/**
 * Creates the table, or adds its missing declared families. Each admin call has the deadline
 * `timeout` (else the fiber's `AdminTimeout`).
 *
 * @internal
 */
export const ensure = Effect.fnUntraced(function*(
  client: Service,
  table: TableDestination,
  declared: Declared,
  timeout?: Duration.Duration
): Effect.fn.Return<EnsureResult, BigtableError> {
  const limit = yield* deadline.adminTimeout(timeout)
  const created = yield* unlessExists(withDeadline(
    "CreateTable",
    String(table),
    limit,
    client.createTable({
      instanceName: table.instanceName,
      tableId: table.tableId,
      columnFamilies: familiesProto(declared.families)
    })
  ))
  if (created) return { created: true, familiesAdded: 0 }
  // after maxRaces lost races the families stay as they are, as another writer is adding them
  const familiesAdded = yield* addMissingFamilies(client, table, declared, limit).pipe(
    Effect.retry({ times: maxRaces - 1, while: (e) => e instanceof LostRace }),
    Effect.catchIf((e): e is LostRace => e instanceof LostRace, () => Effect.succeed(0))
  )
  return { created: false, familiesAdded }
})
