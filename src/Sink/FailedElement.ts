/**
 * The record-level failure both backends route to a failure handler.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"

/**
 * One record that failed terminally and is routed to the sink's `FailureHandler`.
 *
 * **Details**
 *
 * - `connector`: `"bigquery"` or `"bigtable"`.
 * - `destination`: `project.dataset.table` (BigQuery), `project.instance.table` (Bigtable), or
 *   `"unresolved"` when the record could not be routed to any table.
 * - `payload`: the serialized record when there is one (row bytes, mutation bytes).
 * - `message`: what went wrong, as the service or the serializer said it.
 * - `cause`: the original error, when there is one.
 *
 * Backends extend it (`FailedRow`, `UnroutableRecord`, `FailedMutation`); a handler of
 * `FailedElement` accepts the failures of every backend.
 *
 * **Example** (A failed element)
 * ```ts
 * import type { FailedElement } from "effect-gcp-sinks/Sink"
 * const failure: FailedElement = {
 *   connector: "bigquery",
 *   destination: "p.d.t",
 *   message: "field amount: NUMERIC has more than 29 integer digits"
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface FailedElement {
  readonly connector: Connector
  readonly destination: string
  readonly payload?: Uint8Array | undefined
  readonly message: string
  readonly cause?: unknown
}

/**
 * The backends a failure can come from.
 *
 * @category models
 * @since 0.1.0
 */
export type Connector = "bigquery" | "bigtable"

/**
 * The destination of a record that no table could be resolved for.
 *
 * **Example** (Failures no table was resolved for)
 * ```ts
 * import { unresolved, type FailedElement } from "effect-gcp-sinks/Sink"
 * declare const failure: FailedElement
 * const wasUnroutable = failure.destination === unresolved
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export const unresolved = "unresolved"

/**
 * Tells whether a value has the shape of a {@link FailedElement}.
 *
 * **Example** (Narrowing an unknown value)
 * ```ts
 * import { isFailedElement } from "effect-gcp-sinks/Sink"
 * isFailedElement({ connector: "bigtable", destination: "p.i.t", message: "rejected" })
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isFailedElement = (u: unknown): u is FailedElement =>
  Predicate.isObject(u) &&
  (u["connector"] === "bigquery" || u["connector"] === "bigtable") &&
  Predicate.isString(u["destination"]) &&
  Predicate.isString(u["message"]) &&
  (u["payload"] === undefined || u["payload"] instanceof Uint8Array)
