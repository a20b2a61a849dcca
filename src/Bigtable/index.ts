/**
 * The Bigtable backend: the client service, the sink, mutations, destinations, table creation,
 * failures and errors.
 *
 * **Example** (Importing the namespaces)
 * ```ts
 * import { BigtableSink, Mutation, RowMutationEntry } from "effect-gcp-sinks/Bigtable"
 * const entry = RowMutationEntry.make("k", Mutation.deleteFromRow())
 * ```
 *
 * @since 0.1.0
 */

/**
 * The client service and its layers.
 *
 * @since 0.1.0
 */
export * as BigtableClient from "./BigtableClient.ts"

/**
 * Terminal errors.
 *
 * @since 0.1.0
 */
export * as BigtableError from "./BigtableError.ts"

/**
 * Routed per-record failures.
 *
 * @since 0.1.0
 */
export * as BigtableFailure from "./BigtableFailure.ts"

/**
 * The sink's metrics (names kept across versions), to read or export.
 *
 * @since 0.1.0
 */
export * as BigtableMetrics from "./BigtableMetrics.ts"

/**
 * The sink and the writer.
 *
 * @since 0.1.0
 */
export * as BigtableSink from "./BigtableSink.ts"

/**
 * Garbage-collection rules.
 *
 * @since 0.1.0
 */
export * as GcRule from "./GcRule.ts"

/**
 * Mutations of one row.
 *
 * @since 0.1.0
 */
export * as Mutation from "./Mutation.ts"

/**
 * A row key with its mutations.
 *
 * @since 0.1.0
 */
export * as RowMutationEntry from "./RowMutationEntry.ts"

/**
 * Table and column-family creation.
 *
 * @since 0.1.0
 */
export * as TableCreateOptions from "./TableCreateOptions.ts"

/**
 * Destinations and resolvers.
 *
 * @since 0.1.0
 */
export * as TableDestination from "./TableDestination.ts"

/**
 * How the sink writes: `WriteMethod.atLeastOnce({...})` carrying the writer tuning.
 *
 * @since 0.1.0
 */
export * as WriteMethod from "./WriteMethod.ts"
