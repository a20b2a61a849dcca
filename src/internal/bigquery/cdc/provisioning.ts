/**
 * The CDC table provisioning protocol of reference 2.12 as a pure state machine: `start` gives the
 * first command, `step` the next one from what the previous command observed. Its I/O (REST table
 * calls, query jobs, retries) is `provision.ts`; the property tests drive it against a model table.
 *
 * **Details**
 *
 * - The contract lives in the table's label `flink_gcp_cdc`: `pending_<hash>` while `max_staleness`
 *   is being set, `complete_<hash>` once verified (`CdcTableOptions.specHash` of the effective primary
 *   key and the staleness setting).
 * - Missing table: created under `CREATE_IF_NEEDED` with the primary key and the label (complete when
 *   `max_staleness` is unmanaged, pending otherwise); a primary key must be configured. `CREATE_NEVER`
 *   fails.
 * - Existing table: its primary key must equal the configured one (ignoring case; drift always
 *   fails, under both policies, and is never repaired); without a configured key the table's own is
 *   adopted (`VERIFY_ONLY` only; it must have one).
 * - Managed `max_staleness` is verified through `INFORMATION_SCHEMA.TABLE_OPTIONS` (no row or a zero
 *   interval both mean cleared); when it differs behind our pending label, `ALTER TABLE ... SET
 *   OPTIONS` runs once, the table is re-read (the snapshot preceding verification) and verified
 *   again; then the label flips pending to complete conditioned on that snapshot's etag. A lost
 *   condition (another writer, or the table vanished) re-reads the durable state.
 * - Labels: a matching pending label is resumed under either policy; a pending label of another
 *   contract is never taken over; a completed other contract fails under `VERIFY_ONLY` and migrates
 *   under `RECONCILE`; an unlabelled table is only verified under `VERIFY_ONLY` (never labelled nor
 *   altered), adopted under `RECONCILE`. Under `RECONCILE` drift behind a matching complete label is
 *   repaired (the label goes back to pending first). `RECONCILE` needs a configured primary key.
 * - Every run ends (`Done` or `Fail`) within {@link maxSteps} commands.
 *
 * @internal
 */
import type { ReconciliationPolicy } from "../../../BigQuery/Cdc.ts"
import type { CdcTableOptions, MaxStaleness } from "../../../BigQuery/CdcTableOptions.ts"
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import { specHash } from "./tableOptions.ts"

/** The label key holding the contract. @internal */
export const labelKey = "flink_gcp_cdc"

/** What the protocol needs to know of the configuration. @internal */
export interface Spec {
  readonly options: CdcTableOptions
  readonly policy: ReconciliationPolicy
  readonly createDisposition: CreateDisposition
}

/** A snapshot of the table (`tables.get`). @internal */
export interface Snapshot {
  readonly primaryKey: ReadonlyArray<string>
  readonly labels: Readonly<Record<string, string>>
  readonly etag: string | undefined
}

/** Why provisioning failed. @internal */
export type FailReason =
  | "TableNotFound"
  | "NoPrimaryKey"
  | "PrimaryKeyDrift"
  | "ForeignPending"
  | "ContractMismatch"
  | "StalenessMismatch"
  | "StalenessNotApplied"
  | "NotConverging"

/** The next I/O to run, or the end. @internal */
export type Command =
  | { readonly _tag: "ReadTable" }
  | { readonly _tag: "CreateTable"; readonly primaryKey: ReadonlyArray<string>; readonly label: string }
  | { readonly _tag: "ReadStaleness" }
  | { readonly _tag: "AlterStaleness"; readonly maxStaleness: Exclude<MaxStaleness, { readonly _tag: "Unmanaged" }> }
  | {
    readonly _tag: "WriteLabels"
    readonly labels: Readonly<Record<string, string>>
    readonly etag: string | undefined
  }
  | { readonly _tag: "Done"; readonly primaryKey: ReadonlyArray<string> }
  | { readonly _tag: "Fail"; readonly reason: FailReason; readonly message: string }

/**
 * What the last command observed. `Created` includes a 409 (another writer created it);
 * `LabelsLost` is a failed etag condition or a table that vanished during the patch; `staleness` is
 * the table's `max_staleness` in microseconds, `undefined` for cleared (no row, or zero).
 *
 * @internal
 */
export type Event =
  | { readonly _tag: "TableRead"; readonly table: Snapshot | undefined }
  | { readonly _tag: "Created" }
  | { readonly _tag: "StalenessRead"; readonly staleness: bigint | undefined }
  | { readonly _tag: "Altered" }
  | { readonly _tag: "LabelsWritten" }
  | { readonly _tag: "LabelsLost" }

/** What a staleness check leads to. */
type Plan =
  /** verify only: a mismatch fails */
  | "check"
  /** RECONCILE behind a complete label: a mismatch moves the label back to pending */
  | "repair"
  /** behind our pending label: a mismatch is altered (once), a match flips the label */
  | "pending"

/** @internal */
export interface State {
  readonly spec: Spec
  readonly steps: number
  /** The last table snapshot. */
  readonly snapshot: Snapshot | undefined
  /** The primary key in force (configured or adopted). */
  readonly primaryKey: ReadonlyArray<string>
  readonly plan: Plan | undefined
  /** An ALTER ran since the label went pending. */
  readonly altered: boolean
  /** The labels last written (their value). */
  readonly written: string | undefined
}

/** The most commands one provisioning runs before it gives up. @internal */
export const maxSteps = 24

const fail = (state: State, reason: FailReason, message: string): readonly [State, Command] => [
  state,
  { _tag: "Fail", reason, message }
]

const next = (state: State, command: Command): readonly [State, Command] => [state, command]

const managed = (spec: Spec): boolean => spec.options.maxStaleness._tag !== "Unmanaged"

const sameColumns = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((c, i) => c.toLowerCase() === (b[i] ?? "").toLowerCase())

const hashOf = (state: State): string => specHash({ ...state.spec.options, primaryKey: state.primaryKey })

/** The label values of the contract in force. @internal */
export const labelValues = (options: CdcTableOptions): { readonly pending: string; readonly complete: string } => {
  const hash = specHash(options)
  return { pending: `pending_${hash}`, complete: `complete_${hash}` }
}

const matches = (m: MaxStaleness, staleness: bigint | undefined): boolean =>
  m._tag === "Unmanaged" || (m._tag === "Clear" ? staleness === undefined : staleness === m.micros)

const describeStaleness = (staleness: bigint | undefined): string =>
  staleness === undefined ? "NULL" : `${staleness} µs`

const wanted = (m: MaxStaleness): string => (m._tag === "Set" ? `${m.micros} µs` : "NULL")

const withLabel = (table: Snapshot, value: string): Readonly<Record<string, string>> => ({
  ...table.labels,
  [labelKey]: value
})

/** The first command (RECONCILE needs a primary key: a provider's options are checked here). @internal */
export const start = (spec: Spec): readonly [State, Command] =>
  spec.policy === "RECONCILE" && spec.options.primaryKey.length === 0
    ? [initial(spec), { _tag: "Fail", reason: "NoPrimaryKey", message: "RECONCILE needs a configured primary key" }]
    : [initial(spec), { _tag: "ReadTable" }]

const initial = (spec: Spec): State => ({
  spec,
  steps: 1,
  snapshot: undefined,
  primaryKey: spec.options.primaryKey,
  plan: undefined,
  altered: false,
  written: undefined
})

const onTable = (state: State, table: Snapshot | undefined): readonly [State, Command] => {
  const spec = state.spec
  if (table === undefined) {
    if (spec.createDisposition === "CREATE_NEVER") {
      return fail(state, "TableNotFound", "the table does not exist and createDisposition is CREATE_NEVER")
    }
    if (spec.options.primaryKey.length === 0) {
      return fail(state, "NoPrimaryKey", "the table does not exist and no primary key is configured to create it")
    }
    const labels = labelValues(spec.options)
    return next(state, {
      _tag: "CreateTable",
      primaryKey: spec.options.primaryKey,
      label: managed(spec) ? labels.pending : labels.complete
    })
  }
  const configured = spec.options.primaryKey
  if (table.primaryKey.length === 0) {
    return fail(state, "NoPrimaryKey", "the table has no primary key (CDC applies changes by primary key)")
  }
  if (configured.length > 0 && !sameColumns(configured, table.primaryKey)) {
    return fail(
      state,
      "PrimaryKeyDrift",
      `the table's primary key (${table.primaryKey.join(", ")}) differs from the configured one (${
        configured.join(", ")
      }); a primary key is never changed`
    )
  }
  const current: State = {
    ...state,
    snapshot: table,
    primaryKey: configured.length > 0 ? configured : table.primaryKey
  }
  const hash = hashOf(current)
  const pending = `pending_${hash}`
  const complete = `complete_${hash}`
  const label = table.labels[labelKey]
  const reconcile = spec.policy === "RECONCILE"
  const write = (value: string) =>
    next({ ...current, written: value }, { _tag: "WriteLabels", labels: withLabel(table, value), etag: table.etag })
  const verify = (plan: Plan) => next({ ...current, plan }, { _tag: "ReadStaleness" })
  if (label === complete) return managed(spec) ? verify(reconcile ? "repair" : "check") : done(current)
  if (label === pending) return managed(spec) ? verify("pending") : write(complete)
  if (label !== undefined && label.startsWith("pending_")) {
    return fail(current, "ForeignPending", `another writer is provisioning a different contract (label ${label})`)
  }
  if (label !== undefined && label.startsWith("complete_") && !reconcile) {
    return fail(
      current,
      "ContractMismatch",
      `the table carries another completed contract (label ${label}); RECONCILE migrates it`
    )
  }
  // unlabelled (or a completed older contract under RECONCILE)
  if (!reconcile) return managed(spec) ? verify("check") : done(current)
  return write(managed(spec) ? pending : complete)
}

const done = (state: State): readonly [State, Command] => next(state, { _tag: "Done", primaryKey: state.primaryKey })

const onStaleness = (state: State, staleness: bigint | undefined): readonly [State, Command] => {
  const m = state.spec.options.maxStaleness
  const table = state.snapshot
  if (table === undefined || m._tag === "Unmanaged") return next(state, { _tag: "ReadTable" })
  const ok = matches(m, staleness)
  const hash = hashOf(state)
  switch (state.plan) {
    case "pending":
      if (ok) {
        return next({ ...state, written: `complete_${hash}` }, {
          _tag: "WriteLabels",
          labels: withLabel(table, `complete_${hash}`),
          etag: table.etag
        })
      }
      if (state.altered) {
        return fail(
          state,
          "StalenessNotApplied",
          `max_staleness is ${describeStaleness(staleness)} after ALTER TABLE set it to ${wanted(m)}`
        )
      }
      return next({ ...state, altered: true }, { _tag: "AlterStaleness", maxStaleness: m })
    case "repair":
      if (ok) return done(state)
      return next({ ...state, written: `pending_${hash}` }, {
        _tag: "WriteLabels",
        labels: withLabel(table, `pending_${hash}`),
        etag: table.etag
      })
    default:
      if (ok) return done(state)
      return fail(
        state,
        "StalenessMismatch",
        `max_staleness is ${describeStaleness(staleness)}, not ${wanted(m)}; VERIFY_ONLY never changes it`
      )
  }
}

/** The next command after `event`. @internal */
export const step = (state: State, event: Event): readonly [State, Command] => {
  const s: State = { ...state, steps: state.steps + 1 }
  if (s.steps > maxSteps) {
    return fail(s, "NotConverging", `provisioning did not settle within ${maxSteps} steps (concurrent writers?)`)
  }
  switch (event._tag) {
    case "TableRead":
      return onTable({ ...s, plan: undefined }, event.table)
    case "Created":
      return next(s, { _tag: "ReadTable" })
    case "StalenessRead":
      return onStaleness(s, event.staleness)
    case "Altered":
      // the snapshot preceding verification is read after the ALTER
      return next(s, { _tag: "ReadTable" })
    case "LabelsWritten":
      return s.written !== undefined && s.written.startsWith("complete_")
        ? done(s)
        : next({ ...s, altered: false }, { _tag: "ReadTable" })
    case "LabelsLost":
      return next({ ...s, altered: false }, { _tag: "ReadTable" })
  }
}
