/**
 * The owner's table repair (`CREATE_IF_NEEDED`): destinations opened on demand, entries answered
 * NOT_FOUND parked, rounds of `admin.ensure` (create the table, add missing declared families,
 * check aggregate types) on a fiber of their own within the recovery budget, then the parked and
 * held entries re-applied. Under `CREATE_NEVER`, or for an undeclared family, NOT_FOUND is fatal.
 * The waits between rounds are the writer core's `recovery` budget (its `Schedule`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import {
  BigtableError,
  ColumnFamilyNotDeclared,
  RecoveryExhausted,
  TableNotFound
} from "../../../Bigtable/BigtableError.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { Repairing } from "../../core/backend.ts"
import * as admin from "../admin/createTable.ts"
import * as metrics from "../metrics.ts"
import { isMissingFamily } from "../transport/classify.ts"
import * as batcher from "./batcher.ts"
import { dispatch } from "./dispatch.ts"
import type { Item } from "./prepare.ts"
import type { Dest, EnsureResults, Repair, State } from "./state.ts"

/** Starts a round of `admin.ensure` over the tables under repair, unless one is under way. @internal */
export const startRound = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const repair = st.repair
    if (repair === undefined || repair.busy || repair.tables.size === 0) return
    const declared = st.settings.declared
    if (declared === undefined) return
    repair.busy = true
    const keys = [...repair.tables]
    const tables = keys.flatMap((key) => {
      const dest = st.dests.get(key)
      return dest === undefined ? [] : [{ key, table: dest.table }]
    })
    yield* st.core.fork(
      Effect.forEach(tables, ({ key, table }) =>
        Effect.map(Effect.exit(admin.ensure(st.client, table, declared)), (exit) => ({ key, exit }))).pipe(
          Effect.withSpan("BigtableSink.ensureTables", { attributes: { "bigtable.tables": keys.length } }),
          // the results are booked on the owner
          Effect.flatMap((results) =>
            st.core.offer(onEnsured(st, results))
          )
        )
    )
  })

/**
 * Starts the next round: at once when no table under repair has failed a round (tables new to the
 * repair), else after the recovery budget's wait for the table that failed most, failing once that
 * table's schedule is spent. @internal
 */
export const scheduleRound = <A, EH, R>(st: State<A, EH, R>, cause: unknown): Effect.Effect<void> =>
  Effect.suspend(() => {
    const repair = st.repair
    if (repair === undefined || repair.busy) return Effect.void
    repair.lastCause = cause
    let table = "unknown"
    let attempts = 0
    for (const key of repair.tables) {
      const failed = repair.failures.get(key) ?? 0
      if (failed > attempts) [table, attempts] = [key, failed]
    }
    if (attempts === 0) return startRound(st)
    repair.busy = true
    return st.core.after(
      "recovery",
      attempts,
      onRepairDue(st),
      () => new BigtableError({ reason: new RecoveryExhausted({ table, attempts, cause }) }),
      cause
    )
  })

/** The end of a round's backoff (a step on the owner). @internal */
export const onRepairDue = <A, EH, R>(st: State<A, EH, R>): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (st.repair !== undefined) st.repair.busy = false
    return startRound(st)
  })

const needsRepair = <A, EH, R>(st: State<A, EH, R>, dest: Dest): Repair => {
  dest.ready = false
  const repair = st.repair ??
    { tables: new Set<string>(), parked: [], failures: new Map<string, number>(), lastCause: undefined, busy: false }
  st.repair = repair
  repair.tables.add(String(dest.table))
  return repair
}

/** Opens the destination of an item's table (validated first). @internal */
export const open = <A, EH, R>(st: State<A, EH, R>, item: Item): Effect.Effect<Dest, SinkConfigError> =>
  Effect.gen(function*() {
    const known = st.dests.get(item.key)
    if (known !== undefined) return known
    yield* st.validate(item.table)
    const dest: Dest = {
      table: item.table,
      batch: batcher.empty(),
      openedAt: 0,
      ready: true,
      ensured: false,
      held: [],
      inFlight: 0,
      requests: 0,
      lastUsed: 0
    }
    st.dests.set(item.key, dest)
    // With aggregate families declared, types are checked (and families added) before any data.
    if (st.settings.declared?.hasAggregate === true && st.settings.createDisposition === "CREATE_IF_NEEDED") {
      needsRepair(st, dest)
      yield* startRound(st)
    }
    return dest
  })

/** A round's results (a step on the owner); repaired tables get their held and parked entries. @internal */
export const onEnsured = <A, EH, R>(st: State<A, EH, R>, results: EnsureResults): Effect.Effect<void> =>
  Effect.gen(function*() {
    const repair = st.repair
    if (repair === undefined) return
    repair.busy = false
    let lastCause: unknown
    for (const { exit, key } of results) {
      const dest = st.dests.get(key)
      if (Exit.isSuccess(exit)) {
        repair.tables.delete(key)
        repair.failures.delete(key)
        if (exit.value.created) yield* Metric.update(metrics.tablesCreated, 1)
        if (exit.value.familiesAdded > 0) {
          yield* Metric.update(metrics.columnFamiliesAdded, exit.value.familiesAdded)
        }
        if (dest !== undefined) {
          dest.ready = true
          dest.ensured = true
          yield* dispatch(st, dest, dest.held.splice(0, dest.held.length))
        }
      } else {
        const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        if (error !== undefined && error._tag === "Fail" && admin.isTerminal(error.error)) {
          return yield* st.core.fail(error.error)
        }
        lastCause = error?._tag === "Fail" ? error.error : exit.cause
        repair.failures.set(key, (repair.failures.get(key) ?? 0) + 1)
      }
    }
    // Re-apply the parked entries of every repaired table (exempt from admission: they hold permits).
    const stillParked: Array<Item> = []
    const ready = new Map<string, Array<Item>>()
    for (const item of repair.parked) {
      const dest = st.dests.get(item.key)
      if (dest !== undefined && dest.ready) {
        const list = ready.get(item.key) ?? []
        list.push(item)
        ready.set(item.key, list)
      } else stillParked.push(item)
    }
    yield* st.core.gauge(metrics.parkedEntries, -(repair.parked.length - stillParked.length))
    repair.parked.splice(0, repair.parked.length, ...stillParked)
    for (const [key, items] of ready) {
      const dest = st.dests.get(key)
      if (dest !== undefined) yield* dispatch(st, dest, items)
    }
    if (repair.tables.size > 0) yield* scheduleRound(st, lastCause ?? repair.lastCause)
    else if (repair.parked.length === 0) st.repair = undefined
  })

/** An entry answered NOT_FOUND: parked for repair, or fatal (`CREATE_NEVER`, undeclared family). @internal */
export const notFound = <A, EH, R>(
  st: State<A, EH, R>,
  item: Item,
  detail: string,
  cause: unknown
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* metrics.errorClass("NOT_FOUND", 1)
    const dest = st.dests.get(item.key)
    const declared = st.settings.declared
    if (st.settings.createDisposition === "CREATE_NEVER" || declared === undefined || dest === undefined) {
      return yield* st.core.fail(
        new BigtableError({ reason: new TableNotFound({ table: item.key, description: detail }) })
      )
    }
    if (dest.ensured && isMissingFamily(detail)) {
      const undeclared = item.entry.mutations.find((m) => "family" in m && !declared.families.has(m.family))
      if (undeclared !== undefined && "family" in undeclared) {
        return yield* st.core.fail(
          new BigtableError({
            reason: new ColumnFamilyNotDeclared({
              table: item.key,
              family: undeclared.family,
              description: detail
            })
          })
        )
      }
    }
    const repair = needsRepair(st, dest)
    repair.parked.push(item)
    yield* st.core.gauge(metrics.parkedEntries, 1)
    if (!repair.busy) yield* scheduleRound(st, cause)
  })

/** Entries answered NOT_FOUND (the verdict's `repair`), one by one. @internal */
export const repairAll = <A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Repairing<Item>>): Effect.Effect<void> =>
  Effect.forEach(
    items,
    ({ cause, detail, item }) => st.core.failed() ? Effect.void : notFound(st, item, detail, cause),
    {
      discard: true
    }
  )
