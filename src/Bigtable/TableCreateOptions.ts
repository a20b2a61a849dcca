/**
 * How the sink creates tables and column families under `createDisposition: "CREATE_IF_NEEDED"`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { GcRule } from "./GcRule.ts"

/**
 * The value type of a column family: plain bytes (`RAW`) or an int64 aggregate, which only
 * `AddToCell`/`MergeToCell` update. A family's type is fixed once it exists.
 *
 * **Example** (A counter family)
 * ```ts
 * import type { TableCreateOptions } from "effect-gcp-sinks/Bigtable"
 * const type: TableCreateOptions.ColumnFamilyType = "INT64_SUM"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type ColumnFamilyType = "RAW" | "INT64_SUM" | "INT64_MIN" | "INT64_MAX" | "INT64_HLL"

/**
 * The schema of {@link ColumnFamilyType}, for values read from `Config` or untyped input.
 *
 * **Example** (Decoding a type)
 * ```ts
 * import { Schema } from "effect"
 * import { TableCreateOptions } from "effect-gcp-sinks/Bigtable"
 * Schema.decodeUnknownSync(TableCreateOptions.ColumnFamilyType)("INT64_MAX")
 * // => "INT64_MAX"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export const ColumnFamilyType: Schema.Literals<
  readonly ["RAW", "INT64_SUM", "INT64_MIN", "INT64_MAX", "INT64_HLL"]
> = Schema.Literals(["RAW", "INT64_SUM", "INT64_MIN", "INT64_MAX", "INT64_HLL"])

/**
 * One declared column family: its value type (default `RAW`) and garbage-collection rule (default
 * none: keep every version).
 *
 * @category models
 * @since 0.1.0
 */
export interface ColumnFamily {
  readonly type?: ColumnFamilyType | undefined
  readonly gcRule?: GcRule | undefined
}

/**
 * The column families of every table the sink creates, keyed by family name (at least one).
 *
 * **Details**
 *
 * - A missing table is created with all declared families, types and rules; `ALREADY_EXISTS`
 *   counts as success.
 * - Declared families missing from an existing table are added in one atomic modification;
 *   existing families are never changed, so their GC rules stay as they are.
 * - When any declared family is an aggregate, the types of the existing declared families are
 *   checked (and missing families added) before a table first receives data; a mismatch fails the
 *   write. Raw-only options reconcile by name, reactively, when a write finds something missing.
 * - A mutation naming a family that is not declared cannot be repaired and fails the write.
 *
 * **Example** (A table with a counter family)
 * ```ts
 * import { GcRule, TableCreateOptions } from "effect-gcp-sinks/Bigtable"
 * const options = TableCreateOptions.make({
 *   columnFamilies: {
 *     cf: { gcRule: GcRule.union(GcRule.maxVersions(1), GcRule.maxAge("30 days")) },
 *     views: { type: "INT64_SUM" }
 *   }
 * })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface TableCreateOptions {
  readonly columnFamilies: { readonly [family: string]: ColumnFamily }
}

/**
 * Builds creation options (validated when the sink is built: at least one family, names not blank,
 * rules well formed).
 *
 * **Example** (One raw family)
 * ```ts
 * import { TableCreateOptions } from "effect-gcp-sinks/Bigtable"
 * Object.keys(TableCreateOptions.make({ columnFamilies: { cf: {} } }).columnFamilies)
 * // => ["cf"]
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: TableCreateOptions): TableCreateOptions => options
