/**
 * Partition writers spread over many processes with `effect/cluster`: one cluster singleton per source
 * partition, placed by `Sharding`, each running the partition's writer with a stable writer id and resuming
 * from the checkpoint store wherever it lands.
 *
 * **Example** (Twelve partitions of a log into BigQuery, exactly once, on every runner of the cluster)
 * ```ts
 * import { Effect, Layer, Option, Schema, Stream } from "effect"
 * import { BigQuerySink, RowSerializer, TableDestination, WriteMethod } from "effect-gcp-sinks/BigQuery"
 * import { Partitions } from "effect-gcp-sinks/Cluster"
 * declare const linesFrom: (partition: number, line: number) => Stream.Stream<{ readonly line: number }>
 * declare const serializer: RowSerializer.RowSerializer<{ readonly line: number }>
 * declare const table: TableDestination.TableDestination
 * const writers = Partitions.layer({
 *   name: "lines",
 *   partitions: 12,
 *   positionSchema: Schema.Number,
 *   source: (partition, from) => linesFrom(partition, Option.getOrElse(from, () => 0)),
 *   sink: ({ resume }) =>
 *     BigQuerySink.make({
 *       table,
 *       serializer,
 *       writeMethod: WriteMethod.exactlyOnce(),
 *       checkpoint: { resume, every: "1 second", position: (row) => row.line + 1 }
 *     })
 * })
 * // provide Sharding (for instance NodeClusterSocket.layer over PgClient.layer), a CheckpointStore and the client
 * ```
 *
 * @since 0.1.0
 */

/**
 * Partition writers as cluster singletons: {@link Partitions.layer}.
 *
 * @since 0.1.0
 */
export * as Partitions from "./Cluster/Partitions.ts"
