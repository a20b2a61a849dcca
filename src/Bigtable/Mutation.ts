/**
 * The changes one row can receive: set a cell, delete cells, a family or the row, and add to or
 * merge into an aggregate cell.
 *
 * @since 0.1.0
 */
import * as heap from "../internal/bigtable/heapObjects.ts"
import * as internal from "../internal/bigtable/transport/mutationProto.ts"

/**
 * Writes `value` into `family:qualifier` at `timestampMicros`, or at the server's time when it is
 * `undefined` (then every replay adds a version).
 *
 * @category models
 * @since 0.1.0
 */
export interface SetCell {
  readonly _tag: "SetCell"
  readonly family: string
  readonly qualifier: Uint8Array
  readonly value: Uint8Array
  readonly timestampMicros: number | undefined
}

/**
 * Deletes the versions of `family:qualifier` in `[startTimestampMicros, endTimestampMicros)`
 * (unbounded where `undefined`).
 *
 * @category models
 * @since 0.1.0
 */
export interface DeleteFromColumn {
  readonly _tag: "DeleteFromColumn"
  readonly family: string
  readonly qualifier: Uint8Array
  readonly startTimestampMicros: number | undefined
  readonly endTimestampMicros: number | undefined
}

/**
 * Deletes every cell of `family` in the row.
 *
 * @category models
 * @since 0.1.0
 */
export interface DeleteFromFamily {
  readonly _tag: "DeleteFromFamily"
  readonly family: string
}

/**
 * Deletes the whole row.
 *
 * @category models
 * @since 0.1.0
 */
export interface DeleteFromRow {
  readonly _tag: "DeleteFromRow"
}

/**
 * Adds `input` to the aggregate cell `family:qualifier` (an `INT64_SUM`, `INT64_MIN` or `INT64_MAX`
 * family). Replays add again: aggregates are not idempotent.
 *
 * @category models
 * @since 0.1.0
 */
export interface AddToCell {
  readonly _tag: "AddToCell"
  readonly family: string
  readonly qualifier: Uint8Array
  readonly timestampMicros: number
  readonly input: bigint
}

/**
 * Merges an aggregate state (`input` bytes, for example a HyperLogLog sketch of an `INT64_HLL`
 * family, or an int64) into `family:qualifier`.
 *
 * @category models
 * @since 0.1.0
 */
export interface MergeToCell {
  readonly _tag: "MergeToCell"
  readonly family: string
  readonly qualifier: Uint8Array
  readonly timestampMicros: number
  readonly input: Uint8Array | bigint
}

/**
 * One change to one row.
 *
 * **Example** (Building mutations)
 * ```ts
 * import { Mutation } from "effect-gcp-sinks/Bigtable"
 * const mutations: Array<Mutation.Mutation> = [
 *   Mutation.setCell({ family: "cf", qualifier: "name", value: "Ada", timestampMicros: 1_700_000_000_000_000 }),
 *   Mutation.deleteFromFamily({ family: "old" })
 * ]
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type Mutation = SetCell | DeleteFromColumn | DeleteFromFamily | DeleteFromRow | AddToCell | MergeToCell

/**
 * Bytes, or text written as UTF-8.
 *
 * @category models
 * @since 0.1.0
 */
export type BytesInput = string | Uint8Array

/**
 * A cell value: bytes, text (UTF-8) or a `bigint` (8-byte big-endian two's complement, the
 * encoding of Bigtable's int64 cells and of the Node client's numbers).
 *
 * @category models
 * @since 0.1.0
 */
export type ValueInput = string | Uint8Array | bigint

/**
 * Sets a cell.
 *
 * **Details**
 *
 * `timestampMicros` is microseconds since the epoch and must be a multiple of 1000 on Bigtable
 * (the service rejects others; the emulator answers `INTERNAL`). An explicit timestamp makes
 * replays overwrite the same version; leave it out to let the server stamp each write.
 * Throws a `RangeError` for a blank family, a negative timestamp or a `bigint` outside int64;
 * inside a serializer that routes the record to the failure handler. A string `qualifier` or
 * `value` is encoded to UTF-8 on every call (about 40 ns each): give a constant one as bytes made
 * once (`const v = Buffer.from("v")` outside the serializer).
 *
 * **Example** (A cell with an explicit timestamp)
 * ```ts
 * import { Mutation } from "effect-gcp-sinks/Bigtable"
 * const m = Mutation.setCell({ family: "cf", qualifier: "count", value: 42n, timestampMicros: 1_000 })
 * m.value.length
 * // => 8
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const setCell = (options: {
  readonly family: string
  readonly qualifier: BytesInput
  readonly value: ValueInput
  readonly timestampMicros?: number | bigint | undefined
}): SetCell =>
  new heap.SetCell(
    internal.family(options.family),
    internal.bytes(options.qualifier),
    internal.value(options.value),
    options.timestampMicros === undefined ? undefined : internal.timestamp("timestampMicros", options.timestampMicros)
  )

/**
 * Deletes the versions of one column, optionally only those in a time range.
 *
 * **Example** (Deleting a column)
 * ```ts
 * import { Mutation } from "effect-gcp-sinks/Bigtable"
 * Mutation.deleteFromColumn({ family: "cf", qualifier: "name" })._tag
 * // => "DeleteFromColumn"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const deleteFromColumn = (options: {
  readonly family: string
  readonly qualifier: BytesInput
  readonly startTimestampMicros?: number | bigint | undefined
  readonly endTimestampMicros?: number | bigint | undefined
}): DeleteFromColumn =>
  new heap.DeleteFromColumn(
    internal.family(options.family),
    internal.bytes(options.qualifier),
    options.startTimestampMicros === undefined
      ? undefined
      : internal.timestamp("startTimestampMicros", options.startTimestampMicros),
    options.endTimestampMicros === undefined
      ? undefined
      : internal.timestamp("endTimestampMicros", options.endTimestampMicros)
  )

/**
 * Deletes every cell of a family in the row.
 *
 * **Example** (Clearing a family)
 * ```ts
 * import { Mutation } from "effect-gcp-sinks/Bigtable"
 * Mutation.deleteFromFamily({ family: "cf" }).family
 * // => "cf"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const deleteFromFamily = (options: { readonly family: string }): DeleteFromFamily =>
  new heap.DeleteFromFamily(internal.family(options.family))

/**
 * Deletes the whole row. A replayed delete can erase writes made after it.
 *
 * **Example** (Deleting a row)
 * ```ts
 * import { Mutation } from "effect-gcp-sinks/Bigtable"
 * Mutation.deleteFromRow()._tag
 * // => "DeleteFromRow"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const deleteFromRow = (): DeleteFromRow => new heap.DeleteFromRow()

/**
 * Adds an integer to an aggregate cell of an `INT64_SUM`, `INT64_MIN` or `INT64_MAX` family.
 *
 * **Example** (Counting page views)
 * ```ts
 * import { Mutation } from "effect-gcp-sinks/Bigtable"
 * const m = Mutation.addToCell({ family: "views", qualifier: "total", input: 1 })
 * m.input
 * // => 1n
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const addToCell = (options: {
  readonly family: string
  readonly qualifier: BytesInput
  readonly input: number | bigint
  readonly timestampMicros?: number | bigint | undefined
}): AddToCell =>
  new heap.ToCell(
    "AddToCell",
    internal.family(options.family),
    internal.bytes(options.qualifier),
    internal.timestamp("timestampMicros", options.timestampMicros ?? 0),
    internal.int64(options.input)
  )

/**
 * Merges an aggregate state into a cell: sketch bytes (an `INT64_HLL` family) or an int64.
 *
 * **Example** (Merging a sketch)
 * ```ts
 * import { Mutation } from "effect-gcp-sinks/Bigtable"
 * declare const sketch: Uint8Array
 * Mutation.mergeToCell({ family: "visitors", qualifier: "hll", input: sketch })._tag
 * // => "MergeToCell"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const mergeToCell = (options: {
  readonly family: string
  readonly qualifier: BytesInput
  readonly input: Uint8Array | number | bigint
  readonly timestampMicros?: number | bigint | undefined
}): MergeToCell =>
  new heap.ToCell(
    "MergeToCell",
    internal.family(options.family),
    internal.bytes(options.qualifier),
    internal.timestamp("timestampMicros", options.timestampMicros ?? 0),
    options.input instanceof Uint8Array ? options.input : internal.int64(options.input)
  )
