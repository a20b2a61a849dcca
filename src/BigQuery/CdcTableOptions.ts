/**
 * The table side of change data capture: the primary key BigQuery applies changes
 * by, and the table's `max_staleness`, which trades freshness against query cost.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as internal from "../internal/bigquery/cdc/tableOptions.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"

/**
 * What the sink does with the table's `max_staleness`: leave it alone (`Unmanaged`), set it to NULL
 * (`Clear`), or set it to `micros` microseconds (`Set`). It is managed with
 * `ALTER TABLE ... SET OPTIONS` query jobs and verified through `INFORMATION_SCHEMA.TABLE_OPTIONS`
 * (the REST table resource drops it).
 *
 * **Example** (Fifteen minutes)
 * ```ts
 * import type { CdcTableOptions } from "effect-gcp-sinks/BigQuery"
 * const staleness: CdcTableOptions.MaxStaleness = { _tag: "Set", micros: 15n * 60n * 1_000_000n }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type MaxStaleness =
  | { readonly _tag: "Unmanaged" }
  | { readonly _tag: "Clear" }
  | { readonly _tag: "Set"; readonly micros: bigint }

/**
 * Validated CDC table options. An empty `primaryKey` means none configured: a missing table cannot
 * then be created, and under `VERIFY_ONLY` an existing table's own primary key is adopted.
 *
 * **Example** (A composite key, staleness left alone)
 * ```ts
 * import type { CdcTableOptions } from "effect-gcp-sinks/BigQuery"
 * const options: CdcTableOptions.CdcTableOptions = {
 *   primaryKey: ["tenant", "id"],
 *   maxStaleness: { _tag: "Unmanaged" }
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface CdcTableOptions {
  readonly primaryKey: ReadonlyArray<string>
  readonly maxStaleness: MaxStaleness
}

/**
 * The options as written by users.
 *
 * **Details**
 *
 * - `primaryKey`: 1 to 16 column names, not blank, distinct ignoring case (`PRIMARY KEY (...) NOT
 *   ENFORCED` on the tables the sink creates).
 * - `maxStaleness`: a positive duration of whole microseconds, at most about 292 years.
 * - `clearMaxStaleness: true`: set `max_staleness` to NULL. Not together with `maxStaleness`.
 * - Neither: `max_staleness` is not managed.
 *
 * **Example** (Clearing max_staleness)
 * ```ts
 * import type { CdcTableOptions } from "effect-gcp-sinks/BigQuery"
 * const input: CdcTableOptions.CdcTableOptionsInput = { primaryKey: ["id"], clearMaxStaleness: true }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface CdcTableOptionsInput {
  readonly primaryKey?: ReadonlyArray<string> | undefined
  readonly maxStaleness?: Duration.Input | undefined
  readonly clearMaxStaleness?: boolean | undefined
}

/**
 * Validates CDC table options, failing with a `SinkConfigError` naming the option under `path`.
 *
 * **Example** (A primary key and 15 minutes of staleness)
 * ```ts
 * import { Effect } from "effect"
 * import { CdcTableOptions } from "effect-gcp-sinks/BigQuery"
 * const options = Effect.runSync(CdcTableOptions.make({ primaryKey: ["id"], maxStaleness: "15 minutes" }))
 * options.maxStaleness
 * // => { _tag: "Set", micros: 900000000n }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: (input: CdcTableOptionsInput, path?: string) => Effect.Effect<CdcTableOptions, SinkConfigError> = (
  input,
  path = "cdc.tableOptions"
) => internal.make(input, path)

/**
 * The hash of the contract in the table's `flink_gcp_cdc` label: the first 32 hex digits of SHA-256
 * over the lower-cased primary-key columns and the `max_staleness` setting, NUL-separated.
 *
 * **Example** (Same key, other case, same hash)
 * ```ts
 * import { CdcTableOptions } from "effect-gcp-sinks/BigQuery"
 * const unmanaged = { _tag: "Unmanaged" } as const
 * CdcTableOptions.specHash({ primaryKey: ["ID"], maxStaleness: unmanaged }) ===
 *   CdcTableOptions.specHash({ primaryKey: ["id"], maxStaleness: unmanaged })
 * // => true
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const specHash: (options: CdcTableOptions) => string = internal.specHash
