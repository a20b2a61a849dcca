/**
 * The I/O of CDC provisioning (reference 2.12): runs the state machine of `provisioning.ts` with
 * REST table calls and query jobs, each retried on the recovery budget while its failure is in the
 * retriable set (HTTP 429 and 5xx, 403 `rateLimitExceeded`, a transport error without status, job
 * reasons `rateLimitExceeded`, `jobRateLimitExceeded`, `backendError`, `internalError`,
 * `jobBackendError`). A destination is provisioned each time it is opened (so again after it was
 * evicted), before its appender: the writer appends only to a table whose contract is complete.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type { BigQueryClientService } from "../../../BigQuery/BigQueryClient.ts"
import { BigQueryError, TableAdminFailed, TableNotFound } from "../../../BigQuery/BigQueryError.ts"
import type { CdcTableOptions } from "../../../BigQuery/CdcTableOptions.ts"
import type { TableDestination } from "../../../BigQuery/TableDestination.ts"
import type { CreateDisposition } from "../../../Sink/CreateDisposition.ts"
import type { SinkConfigError } from "../../../Sink/SinkConfigError.ts"
import type { AnyPolicy } from "../../core/retrySchedule.ts"
import * as tables from "../schema/tables.ts"
import type { CdcSettings } from "./options.ts"
import * as P from "./provisioning.ts"

/** A snapshot of a REST table resource: its primary key, labels and etag. @internal */
export const snapshotOf = (live: tables.LiveTable): P.Snapshot => {
  const m = live.metadata
  const constraints = Predicate.isObject(m) ? m["tableConstraints"] : undefined
  const pk = Predicate.isObject(constraints) ? constraints["primaryKey"] : undefined
  const columns = Predicate.isObject(pk) ? pk["columns"] : undefined
  const labels = Predicate.isObject(m) ? m["labels"] : undefined
  const out: Record<string, string> = {}
  if (Predicate.isObject(labels)) {
    for (const [k, v] of Object.entries(labels)) if (Predicate.isString(v)) out[k] = v
  }
  return {
    primaryKey: Array.isArray(columns) ? columns.filter(Predicate.isString) : [],
    labels: out,
    etag: live.etag
  }
}

/** `tables.insert` fields of a CDC table: the primary key (`NOT ENFORCED`) and the label. @internal */
export const createFields = (primaryKey: ReadonlyArray<string>, label: string): Record<string, unknown> => ({
  tableConstraints: { primaryKey: { columns: [...primaryKey] } },
  labels: { [P.labelKey]: label }
})

/** The creation fields of a table the append path creates (a vanished table): as provisioning would. @internal */
export const createFieldsOf = (options: CdcTableOptions): Record<string, unknown> | undefined => {
  if (options.primaryKey.length === 0) return undefined
  const labels = P.labelValues(options)
  return createFields(options.primaryKey, options.maxStaleness._tag === "Unmanaged" ? labels.complete : labels.pending)
}

const quoted = (d: TableDestination): string => `\`${d.projectId}.${d.datasetId}.${d.tableId}\``

/** The DDL setting `max_staleness` (reference 2.12: `tables.patch` silently drops it). @internal */
export const alterSql = (d: TableDestination, m: P.Command & { readonly _tag: "AlterStaleness" }): string =>
  `ALTER TABLE ${quoted(d)} SET OPTIONS (max_staleness = ${
    m.maxStaleness._tag === "Set" ? `INTERVAL ${m.maxStaleness.micros} MICROSECOND` : "NULL"
  })`

/** The query reading `max_staleness` from `INFORMATION_SCHEMA.TABLE_OPTIONS`. @internal */
export const selectSql = (d: TableDestination): string =>
  `SELECT option_value FROM \`${d.projectId}.${d.datasetId}.INFORMATION_SCHEMA.TABLE_OPTIONS\` ` +
  `WHERE table_name = '${d.tableId.replaceAll("'", "\\'")}' AND option_name = 'max_staleness'`

const intervalPattern =
  /^INTERVAL\s+["'](-?\d+)-(-?\d+)\s+(-?\d+)\s+(-?)(\d+):(\d+):(\d+)(?:\.(\d{1,9}))?["']\s+YEAR\s+TO\s+SECOND$/i

/**
 * The microseconds of a `max_staleness` option value (`INTERVAL "Y-M D H:M:S[.F]" YEAR TO SECOND`):
 * `undefined` for no value or a zero interval (both mean cleared), `-1n` for what cannot be read
 * as a fixed duration (a year-month part, a negative value), which matches no setting.
 *
 * @internal
 */
export const parseStaleness = (value: string | undefined): bigint | undefined => {
  if (value === undefined) return undefined
  const m = intervalPattern.exec(value.trim())
  if (m === null) return -1n
  const [, y, mo, d, sign, h, mi, s, f] = m
  if (Number(y) !== 0 || Number(mo) !== 0 || sign === "-" || Number(d) < 0) return -1n
  const seconds = BigInt(d ?? "0") * 86_400n + BigInt(h ?? "0") * 3600n + BigInt(mi ?? "0") * 60n + BigInt(s ?? "0")
  const fraction = (f ?? "").padEnd(9, "0")
  if (!fraction.endsWith("000")) return -1n
  const micros = seconds * 1_000_000n + BigInt(fraction.slice(0, 6))
  return micros === 0n ? undefined : micros
}

/**
 * Runs a query job (in the client's project and location; it names the table in full): the values
 * of its first column.
 *
 * @internal
 */
export const query = (
  client: BigQueryClientService,
  destination: TableDestination,
  sql: string
): Effect.Effect<ReadonlyArray<string | undefined>, tables.AdminFailure> =>
  tables.withDeadline(
    "query",
    destination,
    undefined,
    Effect.tryPromise({
      try: () =>
        client.rest.createQueryJob({
          query: sql,
          useLegacySql: false,
          ...(client.location === undefined ? {} : { location: client.location })
        }),
      catch: (cause) => tables.adminFailure("query", cause)
    }).pipe(
      Effect.flatMap(([job]) =>
        Effect.tryPromise({ try: () => job.getQueryResults(), catch: (cause) => tables.adminFailure("query", cause) })
      )
    )
  ).pipe(
    Effect.map(([rows]) =>
      rows.map((row: unknown) => {
        const value = Predicate.isObject(row) ? row["option_value"] : undefined
        return Predicate.isString(value) ? value : undefined
      })
    )
  )

const failure = (destination: TableDestination, method: string, detail: string, cause: unknown, status = 0) =>
  new BigQueryError({
    reason: new TableAdminFailed({ method, destination: destination.toString(), status, detail, cause })
  })

/** What provisioning needs of the sink's settings. @internal */
export interface Env {
  readonly createDisposition: CreateDisposition
  readonly recovery: AnyPolicy
  /** The creation fields (partitioning, clustering) and schema of a table to create. */
  readonly create: (fields: Record<string, unknown>) => Effect.Effect<unknown, BigQueryError>
}

/** The terminal error of a failed provisioning. */
const failed = (
  destination: TableDestination,
  createDisposition: CreateDisposition,
  command: P.Command & { readonly _tag: "Fail" }
): BigQueryError =>
  command.reason === "TableNotFound"
    ? new BigQueryError({
      reason: new TableNotFound({
        destination: destination.toString(),
        createDisposition,
        detail: `CDC table ${destination.toString()}: ${command.message}`,
        cause: command.reason
      })
    })
    : failure(
      destination,
      `cdc.${command.reason}`,
      `CDC table ${destination.toString()}: ${command.message}`,
      command.reason
    )

/** Runs one command of the protocol: what it observed. */
const execute = (
  client: BigQueryClientService,
  destination: TableDestination,
  env: Env,
  command: Exclude<P.Command, { readonly _tag: "Done" | "Fail" }>
): Effect.Effect<P.Event, BigQueryError> => {
  const retrying = <X>(call: Effect.Effect<X, tables.AdminFailure>) =>
    Effect.mapError(tables.retrying(call, env.recovery, destination), (f) => tables.toError(destination, f))
  switch (command._tag) {
    case "ReadTable":
      return Effect.map(
        retrying(tables.get(client.rest, destination)),
        (live): P.Event => ({ _tag: "TableRead", table: live === undefined ? undefined : snapshotOf(live) })
      )
    case "CreateTable":
      return Effect.as(env.create(createFields(command.primaryKey, command.label)), { _tag: "Created" })
    case "ReadStaleness":
      return Effect.map(
        retrying(query(client, destination, selectSql(destination))),
        (rows): P.Event => ({ _tag: "StalenessRead", staleness: parseStaleness(rows[0]) })
      )
    case "AlterStaleness":
      return Effect.as(retrying(query(client, destination, alterSql(destination, command))), { _tag: "Altered" })
    case "WriteLabels":
      return retrying(
        tables.patch(client.rest, destination, { labels: { ...command.labels } }, command.etag).pipe(
          Effect.as<P.Event>({ _tag: "LabelsWritten" }),
          // the condition lost (another writer) or the table vanished: re-read the durable state
          Effect.catchIf(
            (f) => f.status === 412 || f.status === 409 || f.status === 404,
            () => Effect.succeed<P.Event>({ _tag: "LabelsLost" })
          )
        )
      )
  }
}

/**
 * Provisions one destination: runs the protocol until `Done` (its primary key) or a terminal
 * `BigQueryError` (`TableNotFound` under `CREATE_NEVER`, else `TableAdminFailed` whose `method` is
 * `cdc.<reason>`: `cdc.PrimaryKeyDrift`, `cdc.ForeignPending`, ...).
 *
 * @internal
 */
export const provision = Effect.fn("BigQuerySink.provisionCdcTable")(function*<A>(
  client: BigQueryClientService,
  cdc: CdcSettings<A>,
  destination: TableDestination,
  env: Env
) {
  yield* Effect.annotateCurrentSpan("destination", destination.toString())
  const options = yield* Effect.mapError(
    cdc.tableOptions(destination),
    (e: SinkConfigError) => failure(destination, "cdc.tableOptions", e.message, e)
  )
  let [state, command] = P.start({ options, policy: cdc.reconciliation, createDisposition: env.createDisposition })
  while (command._tag !== "Done" && command._tag !== "Fail") {
    const event = yield* execute(client, destination, env, command)
    ;[state, command] = P.step(state, event)
  }
  if (command._tag === "Fail") return yield* failed(destination, env.createDisposition, command)
  return command.primaryKey
})
