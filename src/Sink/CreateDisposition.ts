/**
 * Whether a sink may create the tables it writes to.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * What a sink does when its destination table does not exist.
 *
 * - `"CREATE_IF_NEEDED"`: create it (with the declared schema or column families), then write.
 * - `"CREATE_NEVER"`: fail the write with a terminal error naming the table and the disposition.
 *
 * The defaults differ by backend (see `SinkOptions` for both side by side): BigQuery `CREATE_IF_NEEDED`, since the serializer knows the table schema; Bigtable
 * `CREATE_NEVER`, since column families cannot be guessed (`CREATE_IF_NEEDED` needs
 * `tableCreateOptions`).
 *
 * **Example** (Choosing a disposition)
 * ```ts
 * import type { CreateDisposition } from "effect-gcp-sinks/Sink"
 * const disposition: CreateDisposition = "CREATE_NEVER"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type CreateDisposition = "CREATE_IF_NEEDED" | "CREATE_NEVER"

/**
 * The schema of {@link CreateDisposition}, for options decoded from untyped input or `Config`.
 *
 * **Example** (Decoding a disposition)
 * ```ts
 * import { Schema } from "effect"
 * import { CreateDisposition } from "effect-gcp-sinks/Sink"
 * Schema.decodeUnknownSync(CreateDisposition)("CREATE_NEVER")
 * // => "CREATE_NEVER"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export const CreateDisposition: Schema.Literals<readonly ["CREATE_IF_NEEDED", "CREATE_NEVER"]> = Schema.Literals([
  "CREATE_IF_NEEDED",
  "CREATE_NEVER"
])
