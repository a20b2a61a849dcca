/**
 * The vocabulary shared by the BigQuery and Bigtable sinks: failures and their handlers, write
 * summaries, option errors, emulator endpoints, retry policies, checkpoints and their storage.
 *
 * **Example** (Routing failures to a dead-letter sink)
 * ```ts
 * import { Effect, Sink } from "effect"
 * import { FailureHandler, type FailedElement } from "effect-gcp-sinks/Sink"
 * const handler = FailureHandler.deadLetter(Sink.forEach((f: FailedElement) => Effect.logWarning(f.message)))
 * ```
 *
 * @since 0.1.0
 */
export * as Checkpoint from "./Sink/Checkpoint.ts"
export {
  type CheckpointClaim,
  CheckpointConflict,
  CheckpointRecord,
  CheckpointStore,
  type GcsCheckpointStoreOptions,
  type SqlCheckpointStoreOptions
} from "./Sink/CheckpointStore.ts"
export {
  CheckpointStoreCorrupt,
  CheckpointStoreError,
  type CheckpointStoreErrorReason,
  CheckpointStoreInvalidWriterId,
  CheckpointStoreIo
} from "./Sink/CheckpointStoreError.ts"
export { ContactFailed } from "./Sink/ContactFailed.ts"
export { CreateDisposition } from "./Sink/CreateDisposition.ts"
export { EmulatorEndpoint } from "./Sink/EmulatorEndpoint.ts"
export { type Connector, type FailedElement, isFailedElement, unresolved } from "./Sink/FailedElement.ts"
export { type DeadLetterOptions, DeadLetterStalled, FailureHandler, RecordFailed } from "./Sink/FailureHandler.ts"
export * as GcsClient from "./Sink/GcsClient.ts"
export * as ProgressLog from "./Sink/ProgressLog.ts"
export { RetryPolicy, type RetryPolicyInput, type RetryPolicyOptions } from "./Sink/RetryPolicy.ts"
export { SinkConfigError } from "./Sink/SinkConfigError.ts"
export type * as SinkOptions from "./Sink/SinkOptions.ts"
export type { Writer } from "./Sink/Writer.ts"
export { type Counters, WriteSummary } from "./Sink/WriteSummary.ts"
