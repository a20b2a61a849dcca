/**
 * Effect-native streaming sinks into Google BigQuery and Cloud Bigtable.
 *
 * **Example** (Importing the namespaces)
 * ```ts
 * import { Sink } from "effect-gcp-sinks"
 * const handler = Sink.FailureHandler.logAndDrop
 * ```
 *
 * @since 0.1.0
 */

/**
 * The vocabulary shared by both backends.
 *
 * @since 0.1.0
 */
export * as Sink from "./Sink.ts"
