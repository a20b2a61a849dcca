/**
 * Effect-native streaming sinks into Google BigQuery and Cloud Bigtable.
 *
 * **Example** (Importing the namespaces)
 * ```ts
 * import { BigQuery, Bigtable, Sink } from "effect-gcp-sinks"
 * const handler = Sink.FailureHandler.logAndDrop
 * const make = BigQuery.BigQuerySink.make
 * const entry = Bigtable.RowMutationEntry.make("row-1", Bigtable.Mutation.deleteFromRow())
 * ```
 *
 * @since 0.1.0
 */

/**
 * The BigQuery backend: client, sink, schemas, serializers, destinations.
 *
 * @since 0.1.0
 */
export * as BigQuery from "./BigQuery/index.ts"

/**
 * The Bigtable backend: client, sink, mutations, destinations, table creation.
 *
 * @since 0.1.0
 */
export * as Bigtable from "./Bigtable/index.ts"

/**
 * The vocabulary shared by both backends.
 *
 * @since 0.1.0
 */
export * as Sink from "./Sink.ts"
