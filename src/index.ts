/**
 * Effect-native streaming sinks into Google BigQuery and Cloud Bigtable.
 *
 * The shared vocabulary is the namespace `GcpSink` here (the subpath `effect-gcp-sinks/Sink`), so a
 * file importing it reads clearly next to Effect's own `Sink`.
 *
 * **Example** (Importing the namespaces)
 * ```ts
 * import { Sink } from "effect"
 * import { BigQuery, Bigtable, GcpSink } from "effect-gcp-sinks"
 * const handler = GcpSink.FailureHandler.logAndDrop
 * const drain = Sink.drain
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
 * Partition writers spread over many processes on `effect/cluster` (the subpath `effect-gcp-sinks/Cluster`).
 *
 * @since 0.1.0
 */
export * as Cluster from "./Cluster.ts"

/**
 * The vocabulary shared by both backends (the subpath `effect-gcp-sinks/Sink`), named apart from
 * Effect's `Sink`.
 *
 * @since 0.1.0
 */
export * as GcpSink from "./Sink.ts"
