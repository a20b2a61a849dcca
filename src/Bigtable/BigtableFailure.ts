/**
 * The record-level failure the Bigtable sink routes to its failure handler.
 *
 * @since 0.1.0
 */
import type { FailedElement } from "../Sink/FailedElement.ts"
import type { RowMutationEntry } from "./RowMutationEntry.ts"
import type { TableDestination } from "./TableDestination.ts"

const inspect = Symbol.for("nodejs.util.inspect.custom")

/**
 * One record Bigtable will not take, handed to `failureHandler`.
 *
 * **Details**
 *
 * Only three things are routed: a record the serializer (or the resolver) rejected, an entry
 * over the client-side limits (100,000 mutations, 200 MiB), and a mutation Bigtable rejected as
 * `INVALID_ARGUMENT` on its own (after the isolation pass).
 *
 * - `destination`: `project.instance.table`, or `"unresolved"` when no table was resolved.
 * - `table`: the destination, when there is one.
 * - `entry`, `rowKey`: `undefined` when serialization failed.
 * - `payload`: the entry as `MutateRowsRequest.Entry` bytes, when there is one.
 *
 * Its string, JSON and `util.inspect` forms show the destination, the payload size and the
 * message, never the row key or the payload.
 *
 * **Example** (Logging failures without row keys)
 * ```ts
 * import { Effect } from "effect"
 * import { FailureHandler } from "effect-gcp-sinks/Sink"
 * import type { BigtableFailure } from "effect-gcp-sinks/Bigtable"
 * const handler = FailureHandler.make({
 *   handle: (f: BigtableFailure.FailedMutation) => Effect.logWarning(String(f))
 * })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class FailedMutation implements FailedElement {
  readonly connector = "bigtable" as const
  readonly destination: string
  readonly table: TableDestination | undefined
  readonly entry: RowMutationEntry | undefined
  readonly rowKey: Uint8Array | undefined
  readonly payload: Uint8Array | undefined
  readonly message: string
  readonly cause: unknown
  constructor(fields: {
    readonly destination: string
    readonly table?: TableDestination | undefined
    readonly entry?: RowMutationEntry | undefined
    readonly payload?: Uint8Array | undefined
    readonly message: string
    readonly cause?: unknown
  }) {
    this.destination = fields.destination
    this.table = fields.table
    this.entry = fields.entry
    this.rowKey = fields.entry?.rowKey
    this.payload = fields.payload
    this.message = fields.message
    this.cause = fields.cause
  }
  /**
   * Destination, payload size and message; never the row key.
   *
   * @since 0.1.0
   */
  toString(): string {
    const size = this.payload === undefined ? "no payload" : `${this.payload.length} payload bytes`
    return `FailedMutation(${this.destination}, ${size}): ${this.message}`
  }
  /**
   * The same fields as `toString`, for structured loggers.
   *
   * @since 0.1.0
   */
  toJSON(): {
    readonly connector: "bigtable"
    readonly destination: string
    readonly payloadBytes: number
    readonly message: string
  } {
    return {
      connector: this.connector,
      destination: this.destination,
      payloadBytes: this.payload?.length ?? 0,
      message: this.message
    }
  }
  /** @since 0.1.0 */
  [inspect](): string {
    return this.toString()
  }
}

/**
 * Tells whether a value is a {@link FailedMutation}.
 *
 * **Example** (Narrowing in a shared handler)
 * ```ts
 * import { BigtableFailure } from "effect-gcp-sinks/Bigtable"
 * BigtableFailure.isFailedMutation({ connector: "bigtable" })
 * // => false
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isFailedMutation = (u: unknown): u is FailedMutation => u instanceof FailedMutation
