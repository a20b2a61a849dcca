/**
 * The Bigtable backend of the writer core (`internal/core/`): what differs from BigQuery. Records
 * are prepared on the caller's fiber (`prepare.ts`), batched per table and sent as MutateRows
 * requests (`dispatch.ts`), judged entry by entry with the isolation pass (`verdict.ts`), and
 * tables are created or completed on demand (`repair.ts`). The core does the rest.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { TableDestination } from "../../../Bigtable/TableDestination.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { Backend } from "../../core/backend.ts"
import * as metrics from "../metrics.ts"
import type { Settings } from "../options.ts"
import { mutateRowsNowOf, type Service } from "../transport/connect.ts"
import * as callNow from "./callNow.ts"
import * as dispatch from "./dispatch.ts"
import * as prepare from "./prepare.ts"
import type { Item } from "./prepare.ts"
import * as repair from "./repair.ts"
import * as state from "./state.ts"
import type { BigtableCore, BigtableMethod, State } from "./state.ts"
import { judge } from "./verdict.ts"

/** The Bigtable backend's type on the core. @internal */
export type BigtableBackend<A, EH, R> = Backend<BigtableMethod<A, EH, R>>

/** Entries leaving the writer: their tables' in-flight counts, and the isolated ones unparked. */
const onResolved = <A, EH, R>(st: State<A, EH, R>, items: ReadonlyArray<Item>): Effect.Effect<void> =>
  Effect.suspend(() => {
    let isolated = 0
    // Items of one request share a table: look each destination up once per run of its items.
    let key: string | undefined
    let dest: state.Dest | undefined
    for (const item of items) {
      if (item.key !== key) {
        key = item.key
        dest = st.dests.get(key)
      }
      if (dest !== undefined) dest.inFlight--
      if (item.isolated) isolated++
    }
    return isolated === 0 ? Effect.void : st.core.gauge(metrics.parkedEntries, -isolated)
  })

/** Forgets tables idle longer than `destinationIdleTimeout` with nothing pending. */
const evictIdle = <A, EH, R>(st: State<A, EH, R>, now: number): void => {
  const idle = Duration.toMillis(st.w.destinationIdleTimeout)
  for (const [key, dest] of st.dests) {
    if (
      !st.core.repairs.active(key) && dest.inFlight === 0 && dest.held.length === 0 && dest.batch.items.length === 0 &&
      now - dest.lastUsed > idle
    ) st.dests.delete(key)
  }
}

const stallMessage = <A, EH, R>(st: State<A, EH, R>, waited: number) => {
  const tables = [...st.dests].filter(([, d]) => d.inFlight > 0).map(([key]) => key).toSorted()
  return {
    message: `Bigtable has answered no MutateRows call for ${Math.floor(waited / 1000)} s: ` +
      `${st.core.requestsInFlight()} calls (${st.core.outstanding()} entries) in flight, to ${tables.join(", ")}`,
    destinations: tables.join(",")
  }
}

/**
 * Records prepared in one run (then admitted in slices of a batch each): a run per batch paid the
 * admission's per-run work (gate, prepare, offer loop) every 100 records; 3-4% of the sink's CPU per
 * record in `npm run bench:peers`.
 */
const runRecords = 1000

/** Builds the backend on the core. @internal */
export const make = <A, EH, R>(
  settings: Settings<A, EH, R>,
  client: Service,
  validate: (table: TableDestination) => Effect.Effect<void, SinkConfigError>
) =>
(core: BigtableCore<A, EH, R>): Effect.Effect<BigtableBackend<A, EH, R>> =>
  Effect.sync(() => {
    const st = state.make(core, settings, client, validate)
    // the client's MutateRows on no fiber (`callNow.ts`), when it has one
    const startNow = mutateRowsNowOf(client)
    return {
      name: "BigtableSink",
      sliceRecords: Math.max(st.w.batchElementCount, runRecords),
      prepare: (records, limits) =>
        Effect.map(
          prepare.prepare(records, settings.resolve, settings.serializer),
          (prepared) => prepare.slices(prepared, limits, st.thresholds)
        ),
      admit: (items, now, generation) => dispatch.admit(st, items, now, generation),
      cutAll: dispatch.cutAll(st),
      tick: (now) => dispatch.tick(st, now),
      call: (items) => dispatch.call(st, items),
      start: startNow === undefined ? undefined : (items, deliver) => callNow.start(st, startNow, items, deliver),
      judge: (items, statuses) => {
        const judged = Effect.tap(
          judge(st, items, statuses),
          (v) => dispatch.answered(st, items, v.terminal === undefined)
        )
        return st.exceeded.size === 0 ? judged : Effect.andThen(callNow.logExceeded(st, items), judged)
      },
      resend: (items) => dispatch.resend(st, items),
      settled: (key) => repair.settled(st, key, (dest, items) => dispatch.dispatch(st, dest, items)),
      repairRetry: repair.repairRetry<EH>(),
      onResolved: (items) => onResolved(st, items),
      evictIdle: (now) => Effect.sync(() => evictIdle(st, now)),
      stallMessage: (waited) => stallMessage(st, waited)
    }
  })
