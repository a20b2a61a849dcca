/**
 * BigQuery table identities (`project.dataset.table`) and the per-record routing of a sink.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as check from "../internal/optionChecks.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"

/**
 * A destination table: pure identity, equal (`Equal.equals`) when the three ids are equal, so it
 * is a cache key. `toString()` is `project.dataset.table`.
 *
 * @category models
 * @since 0.1.0
 */
export class TableDestination extends Data.Class<{
  readonly projectId: string
  readonly datasetId: string
  readonly tableId: string
}> {
  /**
   * The resource path `projects/p/datasets/d/tables/t`.
   *
   * @since 0.1.0
   */
  get tablePath(): string {
    return `projects/${this.projectId}/datasets/${this.datasetId}/tables/${this.tableId}`
  }

  /**
   * The table's default write stream, `projects/p/datasets/d/tables/t/streams/_default`.
   *
   * @since 0.1.0
   */
  get defaultStream(): string {
    return `${this.tablePath}/streams/_default`
  }

  /**
   * `project.dataset.table`.
   *
   * @since 0.1.0
   */
  override toString(): string {
    return `${this.projectId}.${this.datasetId}.${this.tableId}`
  }
}

/**
 * Validates the three ids into a {@link TableDestination}.
 *
 * **Details**
 *
 * Each id must be a string, not blank, without surrounding whitespace and without `/`. Errors are
 * `SinkConfigError`s whose path is `path` (default `"table"`) followed by the component.
 *
 * **Example** (A destination)
 * ```ts
 * import { Effect } from "effect"
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * const table = Effect.runSync(TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" }))
 * String(table)
 * // => "p.d.t"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: { readonly projectId: string; readonly datasetId: string; readonly tableId: string },
  path = "table"
): Effect.Effect<TableDestination, SinkConfigError> =>
  Effect.gen(function*() {
    const projectId = yield* check.component(`${path}.projectId`, options.projectId)
    const datasetId = yield* check.component(`${path}.datasetId`, options.datasetId)
    const tableId = yield* check.component(`${path}.tableId`, options.tableId)
    return new TableDestination({ projectId, datasetId, tableId })
  })

/**
 * Parses `project.dataset.table`, splitting at the last two dots (domain-scoped project ids such
 * as `example.com:analytics` contain dots), then validates like {@link make}.
 *
 * **Example** (Parsing a table id)
 * ```ts
 * import { Effect } from "effect"
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * Effect.runSync(TableDestination.parse("example.com:p.sales.orders")).projectId
 * // => "example.com:p"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const parse = (value: string, path = "table"): Effect.Effect<TableDestination, SinkConfigError> =>
  Effect.suspend(() => {
    const last = Predicate.isString(value) ? value.lastIndexOf(".") : -1
    const middle = last > 0 ? value.lastIndexOf(".", last - 1) : -1
    if (middle <= 0) return check.fail(path, `must be project.dataset.table, was ${check.describe(value)}`)
    return make({
      projectId: value.slice(0, middle),
      datasetId: value.slice(middle + 1, last),
      tableId: value.slice(last + 1)
    }, path)
  })

/**
 * A resolver's verdict that a record belongs to no table. The sink routes it to the failure
 * handler as an `UnroutableRecord` (destination `"unresolved"`) before serialization, without
 * creating any table or stream.
 *
 * @category models
 * @since 0.1.0
 */
export class Unroutable extends Data.TaggedClass("Unroutable")<{
  readonly payload: Uint8Array
  readonly reason: string
}> {}

/**
 * Constructs an {@link Unroutable} verdict with the bytes to hand to the failure handler.
 *
 * **Example** (Refusing a record)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * TableDestination.unroutable({ payload: new TextEncoder().encode("{}"), reason: "no tenant" }).reason
 * // => "no tenant"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const unroutable = (options: { readonly payload: Uint8Array; readonly reason: string }): Unroutable =>
  new Unroutable(options)

/**
 * Tells an {@link Unroutable} verdict from a destination.
 *
 * @category guards
 * @since 0.1.0
 */
export const isUnroutable = (u: unknown): u is Unroutable => u instanceof Unroutable

/**
 * Chooses the table of each record, synchronously: a {@link TableDestination} or an
 * {@link Unroutable} verdict. A resolver that throws fails the write (it is a bug, not a bad record).
 *
 * **Example** (Daily tables)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * declare const days: Map<string, TableDestination.TableDestination>
 * const resolver: TableDestination.DestinationResolver<{ readonly day: string }> = (event) =>
 *   days.get(event.day) ?? TableDestination.unroutable({ payload: new Uint8Array(), reason: `no table for ${event.day}` })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type DestinationResolver<A> = (record: A) => TableDestination | Unroutable

/**
 * A resolver sending every record to one table.
 *
 * **Example** (One table)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * declare const table: TableDestination.TableDestination
 * const resolver = TableDestination.fixed(table)
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fixed = (destination: TableDestination): DestinationResolver<unknown> => () => destination
