/**
 * What a serializer returns for one record: a row key and the mutations to apply to that row.
 *
 * @since 0.1.0
 */
import * as heap from "../internal/bigtable/heapObjects.ts"
import * as internal from "../internal/bigtable/transport/mutationProto.ts"
import { single } from "../internal/sitelessArrays.ts"
import type { BytesInput, Mutation } from "./Mutation.ts"

/**
 * The mutations of one row, applied atomically by Bigtable.
 *
 * **Details**
 *
 * At most 100,000 mutations and 200 MiB per entry; a larger entry is routed to the failure handler
 * before any request is sent. The row key is never printed by the sink's failure messages.
 *
 * @category models
 * @since 0.1.0
 */
export interface RowMutationEntry {
  readonly rowKey: Uint8Array
  readonly mutations: ReadonlyArray<Mutation>
}

/**
 * Builds an entry from a row key (bytes, or text written as UTF-8) and its mutations.
 *
 * **Example** (An entry of two cells)
 * ```ts
 * import { Mutation, RowMutationEntry } from "effect-gcp-sinks/Bigtable"
 * const entry = RowMutationEntry.make("user#42", [
 *   Mutation.setCell({ family: "cf", qualifier: "name", value: "Ada" }),
 *   Mutation.setCell({ family: "cf", qualifier: "age", value: 36n })
 * ])
 * entry.mutations.length
 * // => 2
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (rowKey: BytesInput, mutations: ReadonlyArray<Mutation> | Mutation): RowMutationEntry =>
  new heap.Entry(internal.bytes(rowKey), Array.isArray(mutations) ? mutations : single(mutations as Mutation))

/**
 * An estimate of the entry's serialized size in bytes: what the batch byte thresholds and the
 * in-flight byte bound count.
 *
 * **Example** (Measuring an entry)
 * ```ts
 * import { Mutation, RowMutationEntry } from "effect-gcp-sinks/Bigtable"
 * const entry = RowMutationEntry.make("k", Mutation.deleteFromRow())
 * RowMutationEntry.byteSize(entry) > 0
 * // => true
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const byteSize: (entry: RowMutationEntry) => number = internal.entryByteSize
