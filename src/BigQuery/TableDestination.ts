/**
 * BigQuery table identities (`project.dataset.table`) and the per-record routing of a sink.
 *
 * **Details**
 *
 * A destination is always validated: {@link make} (an Effect, for a static `table`), {@link resolve}
 * (synchronous, for a `destinationResolver`: an invalid id gives an {@link Unroutable} verdict the sink
 * routes) and {@link parse}. The class cannot be constructed with `new`.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { describeValue } from "../internal/bigquery/encoding/valueText.ts"
import * as ids from "../internal/options/tableIds.ts"
import { SinkConfigError } from "../Sink/SinkConfigError.ts"

/**
 * The three ids of a destination, before validation.
 *
 * @category models
 * @since 0.1.0
 */
export interface TableDestinationFields {
  readonly projectId: string
  readonly datasetId: string
  readonly tableId: string
}

/**
 * A destination table: pure identity, equal (`Equal.equals`) when the three ids are equal, so it
 * is a cache key. `toString()` is `project.dataset.table`.
 *
 * **Details**
 *
 * Built only by {@link make}, {@link resolve}, {@link parse} or {@link makeUnsafe}, which validate
 * the ids; the constructor is not public.
 *
 * **Example** (A destination)
 * ```ts
 * import { Effect } from "effect"
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * const table = Effect.runSync(TableDestination.make({ projectId: "p", datasetId: "d", tableId: "t" }))
 * table.tablePath
 * // => "projects/p/datasets/d/tables/t"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class TableDestination extends Data.Class<TableDestinationFields> {
  /**
   * Not public: build destinations with {@link make} or {@link resolve}.
   *
   * @since 0.1.0
   */
  protected constructor(fields: TableDestinationFields) {
    super(fields)
  }

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

/** The one way to an instance: only after the ids were checked. */
class Checked extends TableDestination {
  constructor(fields: TableDestinationFields) {
    super({ projectId: fields.projectId, datasetId: fields.datasetId, tableId: fields.tableId })
  }
}

const validated = ids.constructors<TableDestinationFields, TableDestination, Unroutable>({
  components: ["projectId", "datasetId", "tableId"],
  checked: (fields) => new Checked(fields),
  unroutable: (reason) => new Unroutable({ reason })
})

/**
 * Validates the three ids into a {@link TableDestination}, for a sink's static `table`.
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
 * @see {@link resolve} for the destinations a resolver returns per record
 * @category constructors
 * @since 0.1.0
 */
export const make: (
  fields: TableDestinationFields,
  path?: string
) => Effect.Effect<TableDestination, SinkConfigError> = validated.make

/**
 * Validates the three ids synchronously, for a `destinationResolver`: the destination, or an
 * {@link Unroutable} verdict naming the invalid id, which the sink routes to the failure handler as
 * an `UnroutableRecord` while the write goes on.
 *
 * **When to use**
 *
 * In a resolver that builds table ids from record fields (a tenant, a day). A static table is
 * {@link make}.
 *
 * **Example** (A table per day)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * const resolver: TableDestination.DestinationResolver<{ readonly day: string }> = (order) =>
 *   TableDestination.resolve({ projectId: "p", datasetId: "shop", tableId: `orders_${order.day}` })
 * String(resolver({ day: "20240506" }))
 * // => "p.shop.orders_20240506"
 * const verdict = resolver({ day: "2024/05/06" })
 * TableDestination.isUnroutable(verdict) ? verdict.reason : ""
 * // => "invalid destination: tableId must not contain '/', was 'orders_2024/05/06'"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve: (fields: TableDestinationFields) => TableDestination | Unroutable = validated.resolve

/**
 * Validates the three ids synchronously and throws the `SinkConfigError` of {@link make} when one
 * is invalid.
 *
 * **When to use**
 *
 * For constants known to be valid (tests, scripts). Never in a resolver: a throwing resolver's
 * record is routed as an `UnroutableRecord` with only the thrown message; use {@link resolve}.
 *
 * **Example** (A constant table)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * const table = TableDestination.makeUnsafe({ projectId: "p", datasetId: "d", tableId: "t" })
 * table.defaultStream
 * // => "projects/p/datasets/d/tables/t/streams/_default"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeUnsafe: (fields: TableDestinationFields) => TableDestination = validated.makeUnsafe

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
    if (middle <= 0) {
      return Effect.fail(
        new SinkConfigError({ path, detail: `must be project.dataset.table, was ${describeValue(value)}` })
      )
    }
    return make({
      projectId: value.slice(0, middle),
      datasetId: value.slice(middle + 1, last),
      tableId: value.slice(last + 1)
    }, path)
  })

/**
 * A resolver's verdict that a record belongs to no table. The sink routes it to the failure
 * handler as an `UnroutableRecord` (destination `"unresolved"`, message `reason`) before
 * serialization, without creating any table or stream.
 *
 * **Details**
 *
 * - `reason`: why, as the failure's `message`.
 * - `payload` (optional): bytes to hand to the failure handler with it (the record, encoded).
 *
 * **Example** (Refusing a record)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * new TableDestination.Unroutable({ reason: "no tenant" })._tag
 * // => "Unroutable"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Unroutable extends Data.TaggedClass("Unroutable")<{
  readonly reason: string
  readonly payload?: Uint8Array | undefined
}> {}

/**
 * Constructs an {@link Unroutable} verdict, optionally with the bytes to hand to the failure handler.
 *
 * **Example** (Refusing a record)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * TableDestination.unroutable({ reason: "no tenant", payload: new TextEncoder().encode("{}") }).reason
 * // => "no tenant"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const unroutable = (options: {
  readonly reason: string
  readonly payload?: Uint8Array | undefined
}): Unroutable => new Unroutable(options)

/**
 * Tells an {@link Unroutable} verdict from a destination.
 *
 * **Example** (Narrowing a verdict)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * TableDestination.isUnroutable(TableDestination.unroutable({ reason: "no tenant" }))
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isUnroutable = (u: unknown): u is Unroutable => u instanceof Unroutable

/**
 * Tells whether a value is a {@link TableDestination}.
 *
 * **Example** (Checking a value)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * TableDestination.isTableDestination("p.d.t")
 * // => false
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isTableDestination = (u: unknown): u is TableDestination => u instanceof TableDestination

/**
 * Chooses the table of each record, synchronously: a {@link TableDestination} (built with
 * {@link resolve}, or a static one) or an {@link Unroutable} verdict. A resolver that throws fails
 * the write (it is a bug, not a bad record).
 *
 * **Example** (Daily tables)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/BigQuery"
 * const resolver: TableDestination.DestinationResolver<{ readonly day: string | undefined }> = (event) =>
 *   event.day === undefined
 *     ? TableDestination.unroutable({ reason: "no day" })
 *     : TableDestination.resolve({ projectId: "p", datasetId: "d", tableId: `events_${event.day}` })
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
