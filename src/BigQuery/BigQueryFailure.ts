/**
 * The per-record failures the BigQuery sink routes to its `FailureHandler`: `FailedRow` and
 * `UnroutableRecord`.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import { type FailedElement, unresolved } from "../Sink/FailedElement.ts"

/**
 * One row that failed terminally for its table.
 *
 * **Details**
 *
 * - Serialization failure (or an `AdditionalFields` provider failure): no `payload`; `message`
 *   names the field path.
 * - A row over 9 MiB: `payload` holds its bytes; it was never sent.
 * - A row the service rejected with per-row detail (`row_errors`): `payload` holds its bytes,
 *   `message` is the service's message for that row, `code` its row error code (`FIELDS_ERROR`).
 *
 * **Example** (Inspecting a failed row)
 * ```ts
 * import type { BigQueryFailure } from "effect-gcp-sinks/BigQuery"
 * const describe = (f: BigQueryFailure.BigQueryFailure) =>
 *   f._tag === "FailedRow" ? `${f.destination}: ${f.message}` : `unroutable: ${f.message}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface FailedRow extends FailedElement {
  readonly _tag: "FailedRow"
  readonly connector: "bigquery"
  readonly code?: string | undefined
}

/**
 * A record the destination resolver declared unroutable: it reaches the handler before
 * serialization and before any table is touched. `destination` is `"unresolved"`; `payload` is
 * what the resolver supplied, if anything.
 *
 * @category models
 * @since 0.1.0
 */
export interface UnroutableRecord extends FailedElement {
  readonly _tag: "UnroutableRecord"
  readonly connector: "bigquery"
  readonly destination: typeof unresolved
}

/**
 * Every failure the BigQuery sink routes. A handler of `FailedElement` accepts it too.
 *
 * @category models
 * @since 0.1.0
 */
export type BigQueryFailure = FailedRow | UnroutableRecord

/**
 * Builds a {@link FailedRow}.
 *
 * **Example** (A rejected row)
 * ```ts
 * import { BigQueryFailure } from "effect-gcp-sinks/BigQuery"
 * BigQueryFailure.failedRow({ destination: "p.d.t", message: "missing required field id" }).connector
 * // => "bigquery"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const failedRow = (options: {
  readonly destination: string
  readonly message: string
  readonly payload?: Uint8Array | undefined
  readonly cause?: unknown
  readonly code?: string | undefined
}): FailedRow => ({
  _tag: "FailedRow",
  connector: "bigquery",
  destination: options.destination,
  message: options.message,
  ...(options.payload === undefined ? {} : { payload: options.payload }),
  ...(options.cause === undefined ? {} : { cause: options.cause }),
  ...(options.code === undefined ? {} : { code: options.code })
})

/**
 * Builds an {@link UnroutableRecord}.
 *
 * **Example** (A record without a table)
 * ```ts
 * import { BigQueryFailure } from "effect-gcp-sinks/BigQuery"
 * BigQueryFailure.unroutableRecord({ payload: new Uint8Array(), message: "no tenant" }).destination
 * // => "unresolved"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const unroutableRecord = (options: {
  readonly payload?: Uint8Array | undefined
  readonly message: string
}): UnroutableRecord => ({
  _tag: "UnroutableRecord",
  connector: "bigquery",
  destination: unresolved,
  ...(options.payload === undefined ? {} : { payload: options.payload }),
  message: options.message
})

/**
 * Tells whether a failed element is a BigQuery {@link FailedRow}.
 *
 * **Example** (Narrowing)
 * ```ts
 * import { BigQueryFailure } from "effect-gcp-sinks/BigQuery"
 * BigQueryFailure.isFailedRow(BigQueryFailure.failedRow({ destination: "p.d.t", message: "x" }))
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isFailedRow = (u: unknown): u is FailedRow =>
  Predicate.isObject(u) && u["_tag"] === "FailedRow" && u["connector"] === "bigquery"

/**
 * Tells whether a failed element is an {@link UnroutableRecord}.
 *
 * **Example** (Counting unroutable records)
 * ```ts
 * import { BigQueryFailure } from "effect-gcp-sinks/BigQuery"
 * import type { FailedElement } from "effect-gcp-sinks/Sink"
 * declare const failures: ReadonlyArray<FailedElement>
 * const unroutable = failures.filter(BigQueryFailure.isUnroutableRecord).length
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isUnroutableRecord = (u: unknown): u is UnroutableRecord =>
  Predicate.isObject(u) && u["_tag"] === "UnroutableRecord" && u["connector"] === "bigquery"
