/**
 * Garbage-collection rules of a column family: which cell versions Bigtable may delete.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"

/**
 * A garbage-collection rule. No rule means every version is kept, including the versions replays
 * add when cells are written with the server's timestamp.
 *
 * **Example** (Keep the latest version for a week)
 * ```ts
 * import { GcRule } from "effect-gcp-sinks/Bigtable"
 * const rule: GcRule.GcRule = GcRule.union(GcRule.maxVersions(1), GcRule.maxAge("7 days"))
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type GcRule = MaxVersions | MaxAge | Union | Intersection

/**
 * Keep at most `versions` versions of each cell.
 *
 * @category models
 * @since 0.1.0
 */
export interface MaxVersions {
  readonly _tag: "MaxVersions"
  readonly versions: number
}

/**
 * Delete versions older than `age`.
 *
 * @category models
 * @since 0.1.0
 */
export interface MaxAge {
  readonly _tag: "MaxAge"
  readonly age: Duration.Duration
}

/**
 * Delete a version when any of `rules` would.
 *
 * @category models
 * @since 0.1.0
 */
export interface Union {
  readonly _tag: "Union"
  readonly rules: ReadonlyArray<GcRule>
}

/**
 * Delete a version only when all of `rules` would.
 *
 * @category models
 * @since 0.1.0
 */
export interface Intersection {
  readonly _tag: "Intersection"
  readonly rules: ReadonlyArray<GcRule>
}

/**
 * Keeps at most `versions` (an integer above 0, validated when the sink is built) per cell.
 *
 * **Example** (Only the latest version)
 * ```ts
 * import { GcRule } from "effect-gcp-sinks/Bigtable"
 * GcRule.maxVersions(1)
 * // => { _tag: "MaxVersions", versions: 1 }
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const maxVersions = (versions: number): MaxVersions => ({ _tag: "MaxVersions", versions })

/**
 * Deletes versions older than `age` (above 0, validated when the sink is built).
 *
 * **Example** (Thirty days)
 * ```ts
 * import { GcRule } from "effect-gcp-sinks/Bigtable"
 * GcRule.maxAge("30 days")._tag
 * // => "MaxAge"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const maxAge = (age: Duration.Input): MaxAge => ({ _tag: "MaxAge", age: Duration.fromInputUnsafe(age) })

/**
 * Deletes a version when any rule would; at least two rules (validated when the sink is built).
 *
 * **Example** (Either rule)
 * ```ts
 * import { GcRule } from "effect-gcp-sinks/Bigtable"
 * GcRule.union(GcRule.maxVersions(3), GcRule.maxAge("1 day")).rules.length
 * // => 2
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const union = (...rules: ReadonlyArray<GcRule>): Union => ({ _tag: "Union", rules })

/**
 * Deletes a version only when every rule would; at least two rules (validated when the sink is built).
 *
 * **Example** (Both rules)
 * ```ts
 * import { GcRule } from "effect-gcp-sinks/Bigtable"
 * GcRule.intersection(GcRule.maxVersions(1), GcRule.maxAge("1 hour"))._tag
 * // => "Intersection"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const intersection = (...rules: ReadonlyArray<GcRule>): Intersection => ({ _tag: "Intersection", rules })
