/**
 * The BigQuery side of `effect-gcp-sinks`: table schemas and row encoding, destinations,
 * serializers, schema updates, additional columns and table creation options.
 *
 * **Example** (Importing the namespaces)
 * ```ts
 * import { RowSerializer, TableSchema } from "effect-gcp-sinks/BigQuery"
 * const schema = { fields: [TableSchema.field({ name: "id", type: "INT64", mode: "REQUIRED" })] }
 * const serializer = RowSerializer.fromJson(schema)
 * ```
 *
 * @since 0.1.0
 */

/**
 * Extra physical columns appended to every row.
 *
 * @since 0.1.0
 */
export * as AdditionalFields from "./AdditionalFields.ts"

/**
 * The `Schema` annotation choosing a derived column's type.
 *
 * @since 0.1.0
 */
export * as BigQueryType from "./BigQueryType.ts"

/**
 * The serializer contract and its built-ins.
 *
 * @since 0.1.0
 */
export * as RowSerializer from "./RowSerializer.ts"

/**
 * Which connector-driven schema updates are allowed.
 *
 * @since 0.1.0
 */
export * as SchemaUpdateOptions from "./SchemaUpdateOptions.ts"

/**
 * Partitioning and clustering of created tables.
 *
 * @since 0.1.0
 */
export * as TableCreateOptions from "./TableCreateOptions.ts"

/**
 * Table identities and per-record routing.
 *
 * @since 0.1.0
 */
export * as TableDestination from "./TableDestination.ts"

/**
 * BigQuery schemas as data, their conversions, descriptor, derivation and union.
 *
 * @since 0.1.0
 */
export * as TableSchema from "./TableSchema.ts"

/**
 * The BigQuery clients (Storage Write gRPC and REST) as a service and its layers.
 *
 * @since 0.1.0
 */
export * as BigQueryClient from "./BigQueryClient.ts"

/**
 * Terminal errors: `BigQueryError` and its reasons.
 *
 * @since 0.1.0
 */
export * as BigQueryError from "./BigQueryError.ts"

/**
 * Routed per-record failures: `FailedRow` and `UnroutableRecord`.
 *
 * @since 0.1.0
 */
export * as BigQueryFailure from "./BigQueryFailure.ts"

/**
 * The sink's metrics (names kept across versions), to read or export.
 *
 * @since 0.1.0
 */
export * as BigQueryMetrics from "./BigQueryMetrics.ts"

/**
 * The sink and its scoped writer.
 *
 * @since 0.1.0
 */
export * as BigQuerySink from "./BigQuerySink.ts"

/**
 * How the sink writes: at least once on the `_default` stream.
 *
 * @since 0.1.0
 */
export * as WriteMethod from "./WriteMethod.ts"

/**
 * Change data capture: the `_CHANGE_TYPE` and `_CHANGE_SEQUENCE_NUMBER` pseudocolumns, their
 * providers and the sequence-number formats.
 *
 * @since 0.1.0
 */
export * as Cdc from "./Cdc.ts"

/**
 * The primary key and `max_staleness` of a CDC table.
 *
 * @since 0.1.0
 */
export * as CdcTableOptions from "./CdcTableOptions.ts"
