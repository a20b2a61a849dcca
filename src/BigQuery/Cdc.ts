/**
 * Change data capture into BigQuery: rows carry the `_CHANGE_TYPE` pseudocolumn
 * (`UPSERT` or `DELETE`) and optionally `_CHANGE_SEQUENCE_NUMBER`, and BigQuery applies them to the
 * table by its primary key. Given as the `cdc` option of `WriteMethod.atLeastOnce`.
 *
 * @since 0.1.0
 */
import * as internal from "../internal/bigquery/cdc/sequenceNumber.ts"
import type { CdcTableOptions, CdcTableOptionsInput } from "./CdcTableOptions.ts"
import type { TableDestination } from "./TableDestination.ts"

/**
 * What a change row does to the row of its primary key: replace it (or insert it), or delete it.
 *
 * **Example** (From a Debezium operation)
 * ```ts
 * import type { Cdc } from "effect-gcp-sinks/BigQuery"
 * const changeType = (op: "r" | "c" | "u" | "d"): Cdc.ChangeType => (op === "d" ? "DELETE" : "UPSERT")
 * changeType("u")
 * // => "UPSERT"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type ChangeType = "UPSERT" | "DELETE"

/**
 * The names of the two pseudocolumns. They are written in the rows' writer schema only: never
 * columns of the table, never reconciled, not queryable. A column of the serializer's schema (or an
 * additional field) with either name, ignoring case, is a configuration error.
 *
 * **Example** (The names)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.pseudoColumns.changeType
 * // => "_CHANGE_TYPE"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export const pseudoColumns = {
  changeType: "_CHANGE_TYPE",
  sequenceNumber: "_CHANGE_SEQUENCE_NUMBER"
} as const

/**
 * How the sink reconciles an existing CDC table with the {@link CdcTableOptions}:
 *
 * - `"VERIFY_ONLY"` (default): verify only. A table the sink creates gets the whole contract; an
 *   existing table must already carry it (its primary key may be adopted when no `primaryKey` is
 *   configured); a table without the sink's label is never labelled.
 * - `"RECONCILE"`: also adopt an unlabelled table, repair drift behind a matching label and migrate a
 *   completed older contract; it manages only `max_staleness` and the label. A primary key is
 *   required.
 *
 * A primary key that differs from the configured one always fails (never repaired), under both.
 *
 * **Example** (Adopting existing tables)
 * ```ts
 * import { Cdc, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * const method = WriteMethod.atLeastOnce<{ readonly id: number }>({
 *   cdc: { changeType: Cdc.upsertOnly(), tableOptions: { primaryKey: ["id"] }, reconciliation: "RECONCILE" }
 * })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type ReconciliationPolicy = "VERIFY_ONLY" | "RECONCILE"

/**
 * The `cdc` option of `WriteMethod.atLeastOnce`.
 *
 * **Details**
 *
 * - `changeType` (required): the change type of each element; {@link upsertOnly} for streams of
 *   upserts only.
 * - `sequenceNumber` (optional): the element's `_CHANGE_SEQUENCE_NUMBER`, 1 to 4 `/`-separated
 *   sections of 1 to 16 hex digits (upper-cased by the sink); BigQuery applies the changes of a key
 *   in this order (section by section, unsigned), ties and absent values in ingestion order. The
 *   built-ins: {@link debeziumPostgres}, {@link debeziumMySql}, {@link tiCdc}, {@link spanner},
 *   {@link debeziumSpanner}.
 * - `tableOptions` (optional): the primary key and `max_staleness` of each destination, fixed or per
 *   destination (see `CdcTableOptions`); without them a missing table cannot be created and an
 *   existing one must have a primary key.
 * - `reconciliation` (default `"VERIFY_ONLY"`): see {@link ReconciliationPolicy}.
 *
 * Both providers get the original element and run after the serializer (a skipped row invokes
 * neither). A provider that throws, returns no value, or returns an invalid change type or sequence
 * number routes the record to the failure handler as a `FailedRow`.
 *
 * **Example** (Mirroring a Debezium PostgreSQL table)
 * ```ts
 * import { Cdc, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * interface Change { readonly op: "c" | "u" | "d" | "r"; readonly source: unknown }
 * const method = WriteMethod.atLeastOnce<Change>({
 *   cdc: {
 *     changeType: (change) => (change.op === "d" ? "DELETE" : "UPSERT"),
 *     sequenceNumber: (change) => Cdc.debeziumPostgres(change.source),
 *     tableOptions: { primaryKey: ["id"], maxStaleness: "15 minutes" }
 *   }
 * })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface CdcOptions<A> {
  readonly changeType: (element: A) => ChangeType
  readonly sequenceNumber?: ((element: A) => string) | undefined
  readonly tableOptions?:
    | CdcTableOptionsInput
    | ((destination: TableDestination) => CdcTableOptions | CdcTableOptionsInput)
    | undefined
  readonly reconciliation?: ReconciliationPolicy | undefined
}

/**
 * A change-type provider for streams of upserts only: every element is an `UPSERT`.
 *
 * **Example** (Upserts)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.upsertOnly()({ id: 1 })
 * // => "UPSERT"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const upsertOnly = <A = unknown>(): (element: A) => ChangeType => upsert

const upsert = (): ChangeType => "UPSERT"

/**
 * A valid sequence number upper-cased, or `undefined` for anything else (the sink routes such a
 * record).
 *
 * **Example** (Normalizing)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.normalizeSequenceNumber("ff/0a")
 * // => "FF/0A"
 * Cdc.normalizeSequenceNumber("ff/0a/1/2/3")
 * // => undefined
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const normalizeSequenceNumber: (value: unknown) => string | undefined = internal.normalize

/**
 * The order BigQuery applies two valid sequence numbers in: section by section, each compared as an
 * unsigned number (`"A" > "09"`); a value that is a prefix of another sorts first.
 *
 * **Example** (Unsigned, section by section)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.compareSequenceNumbers("A/1", "9/FFFF")
 * // => 1
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const compareSequenceNumbers: (a: string, b: string) => number = internal.compare

/**
 * The sequence number of a Debezium PostgreSQL change from its `source` block: 2 sections
 * `lastCommittedLsn / currentLsn` of its `sequence` property (`null` as 0), checked against `lsn`.
 * Throws on a malformed source (the sink then routes the record).
 *
 * **Example** (A Debezium source block)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.debeziumPostgres({ sequence: "[\"24023128\",\"24023184\"]", lsn: 24023184 })
 * // => "00000000016E9058/00000000016E9090"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const debeziumPostgres: (source: unknown) => string = internal.debeziumPostgres

/**
 * The sequence-number provider of Debezium MySQL changes, given the source servers' UUIDs in
 * failover order: 4 sections `epoch / GTID transaction / binlog position / row`, the epoch being the
 * 1-based index of the GTID's server in `sourceUuids` (0 for snapshot reads). A GTID of another
 * server, or a change without GTID outside a snapshot, throws (the sink routes the record).
 *
 * **Example** (Two servers)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * const sequence = Cdc.debeziumMySql(["3e11fa47-71ca-11e1-9e33-c80aa9429562", "5a2c..."])
 * sequence({ gtid: "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", pos: 1542, row: 0 })
 * // => "0000000000000001/0000000000000017/0000000000000606/0000000000000000"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const debeziumMySql: (sourceUuids: ReadonlyArray<string>) => (source: unknown) => string = internal.debeziumMySql

/**
 * The sequence-number provider of TiCDC changes (Debezium format) of one cluster: the `commit_ts` of
 * the source block as one section; a change of another `cluster_id` throws.
 *
 * **Example** (A TiCDC source block)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.tiCdc("cluster-1")({ cluster_id: "cluster-1", commit_ts: 441234567890123777n })
 * // => "061F948071B6BC01"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const tiCdc: (clusterId: string) => (source: unknown) => string = internal.tiCdc

/**
 * The position of one modification in a Spanner change stream.
 *
 * **Example** (A data change record's modification)
 * ```ts
 * import type { Cdc } from "effect-gcp-sinks/BigQuery"
 * const position: Cdc.SpannerPosition = { commitTimestamp: 1767323045123456n, recordSequence: "00000001", modNumber: 0 }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface SpannerPosition {
  /** The commit timestamp: microseconds since the epoch, or RFC 3339 (at most 6 fractional digits). */
  readonly commitTimestamp: bigint | number | string
  /** The record's sequence in its transaction (a decimal string in change streams). */
  readonly recordSequence: bigint | number | string
  /** The modification's index in its record. */
  readonly modNumber: bigint | number | string
}

/**
 * The sequence number of a Spanner modification: 3 sections `commit timestamp (µs) / record
 * sequence / mod number`, equal to {@link debeziumSpanner}'s for the same modification.
 *
 * **Example** (A change-stream record)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.spanner({ commitTimestamp: "2026-01-02T03:04:05.123456Z", recordSequence: "00000001", modNumber: 2 })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const spanner: (position: SpannerPosition) => string = internal.spanner

/**
 * The sequence number of a Debezium Spanner change from its `source` block (`commit_timestamp` in
 * microseconds or RFC 3339, `record_sequence`, `mod_number`), as {@link spanner}.
 *
 * **Example** (A Debezium Spanner source block)
 * ```ts
 * import { Cdc } from "effect-gcp-sinks/BigQuery"
 * Cdc.debeziumSpanner({ commit_timestamp: 1767323045123456, record_sequence: "00000001", mod_number: 2 })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const debeziumSpanner: (source: unknown) => string = internal.debeziumSpanner
