/**
 * Which Bigtable table a record goes to: a fixed table, or a resolver choosing one per record.
 *
 * **Details**
 *
 * A destination is always validated: {@link make} (an Effect, for a static `table`), {@link resolve}
 * (synchronous, for a `destinationResolver`: an invalid id gives an {@link Unroutable} verdict the
 * sink routes) and {@link parse}. The class cannot be constructed with `new`.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { describeValue } from "../internal/bigquery/encoding/valueText.ts"
import * as bigtableIds from "../internal/options/bigtableIds.ts"
import * as ids from "../internal/options/tableIds.ts"
import { SinkConfigError } from "../Sink/SinkConfigError.ts"

/**
 * The ids of a destination, before validation.
 *
 * @category models
 * @since 0.1.0
 */
export interface TableDestinationFields {
  readonly projectId: string
  readonly instanceId: string
  readonly tableId: string
}

/**
 * The address of one Bigtable table. Two destinations with the same three ids are equal.
 *
 * **Details**
 *
 * `toString()` is `project.instance.table`, the form failures and summaries use; `tableName` is the
 * resource name `projects/p/instances/i/tables/t` the API uses. Built only by {@link make},
 * {@link resolve}, {@link parse} or {@link makeUnsafe}, which validate the ids; the constructor is
 * not public.
 *
 * **Example** (A destination)
 * ```ts
 * import { Effect } from "effect"
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * const table = Effect.runSync(TableDestination.make({ projectId: "p", instanceId: "i", tableId: "events" }))
 * String(table)
 * // => "p.i.events"
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
   * `projects/<project>/instances/<instance>/tables/<table>`.
   *
   * @since 0.1.0
   */
  get tableName(): string {
    return `projects/${this.projectId}/instances/${this.instanceId}/tables/${this.tableId}`
  }
  /**
   * `projects/<project>/instances/<instance>`.
   *
   * @since 0.1.0
   */
  get instanceName(): string {
    return `projects/${this.projectId}/instances/${this.instanceId}`
  }
  /**
   * `project.instance.table`.
   *
   * @since 0.1.0
   */
  override toString(): string {
    return `${this.projectId}.${this.instanceId}.${this.tableId}`
  }
}

/** The one way to an instance: only after the ids were checked. */
class Checked extends TableDestination {
  constructor(fields: TableDestinationFields) {
    super({ projectId: fields.projectId, instanceId: fields.instanceId, tableId: fields.tableId })
  }
}

const validated = ids.constructors<TableDestinationFields, TableDestination, Unroutable>({
  components: ["projectId", "instanceId", "tableId"],
  rules: { instanceId: bigtableIds.instanceIdProblem, tableId: bigtableIds.tableIdProblem },
  checked: (fields) => new Checked(fields),
  unroutable: (reason) => new Unroutable({ reason })
})

/**
 * Validates the three ids (not blank, no surrounding whitespace, no `/`) into a destination, for a
 * sink's static `table`. Errors are `SinkConfigError`s whose path is `path` (default `"table"`)
 * followed by the component.
 *
 * **Example** (A rejected id)
 * ```ts
 * import { Effect } from "effect"
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * Effect.runSync(Effect.flip(TableDestination.make({ projectId: "p", instanceId: "i", tableId: "a/b" }))).path
 * // => "table.tableId"
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
 * {@link Unroutable} verdict naming the invalid id, which the sink routes to the failure handler
 * (destination `"unresolved"`) while the write goes on.
 *
 * **When to use**
 *
 * In a resolver that builds table ids from record fields (a tenant, a region). A static table is
 * {@link make}.
 *
 * **Example** (A table per tenant)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * const resolver: TableDestination.DestinationResolver<{ readonly tenant: string }> = (e) =>
 *   TableDestination.resolve({ projectId: "p", instanceId: "i", tableId: `events_${e.tenant}` })
 * String(resolver({ tenant: "acme" }))
 * // => "p.i.events_acme"
 * const verdict = resolver({ tenant: "a/b" })
 * TableDestination.isUnroutable(verdict) ? verdict.reason : ""
 * // => "invalid destination: tableId must not contain '/', was 'events_a/b'"
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
 * record is routed as unresolved, with no payload; use {@link resolve}.
 *
 * **Example** (A constant table)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "t" })
 * table.tableName
 * // => "projects/p/instances/i/tables/t"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeUnsafe: (fields: TableDestinationFields) => TableDestination = validated.makeUnsafe

const resourceName = /^projects\/([^/]*)\/instances\/([^/]*)\/tables\/([^/]*)$/

/**
 * Splits `project.instance.table`: the project ends at the first dot after its last `:` (a
 * domain-scoped project id such as `example.com:analytics` has dots only before its colon), the
 * instance at the next dot (instance ids have none), and the table is the rest (table ids may
 * contain dots).
 */
const splitDotted = (value: string): TableDestinationFields | undefined => {
  const first = value.indexOf(".", value.lastIndexOf(":") + 1)
  const second = first < 0 ? -1 : value.indexOf(".", first + 1)
  if (first <= 0 || second < 0) return undefined
  return {
    projectId: value.slice(0, first),
    instanceId: value.slice(first + 1, second),
    tableId: value.slice(second + 1)
  }
}

const splitTableName = (value: string): TableDestinationFields | undefined => {
  const match = resourceName.exec(value)
  return match === null ? undefined : { projectId: match[1] ?? "", instanceId: match[2] ?? "", tableId: match[3] ?? "" }
}

/**
 * Parses a table's resource name `projects/<project>/instances/<instance>/tables/<table>` (its
 * {@link TableDestination.tableName}) or its short form `project.instance.table` (its `toString()`),
 * then validates like {@link make}.
 *
 * **Details**
 *
 * In the short form the project ends at the first dot after its last `:` (domain-scoped project
 * ids such as `example.com:analytics` contain dots before the colon), the instance at the next dot
 * (instance ids have none), and the rest is the table (table ids may contain dots). Errors are
 * `SinkConfigError`s whose path is `path` (default `"table"`), followed by the component when one
 * id is invalid.
 *
 * **Example** (Parsing a table name)
 * ```ts
 * import { Effect } from "effect"
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * String(Effect.runSync(TableDestination.parse("projects/p/instances/i/tables/events")))
 * // => "p.i.events"
 * Effect.runSync(TableDestination.parse("example.com:p.i.events.v2")).tableId
 * // => "events.v2"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const parse = (value: string, path = "table"): Effect.Effect<TableDestination, SinkConfigError> =>
  Effect.suspend(() => {
    const fields = Predicate.isString(value)
      ? value.includes("/") ? splitTableName(value) : splitDotted(value)
      : undefined
    return fields === undefined
      ? Effect.fail(
        new SinkConfigError({
          path,
          detail: `must be projects/<project>/instances/<instance>/tables/<table> or project.instance.table, was ${
            describeValue(value)
          }`
        })
      )
      : make(fields, path)
  })

/**
 * A resolver's verdict that a record belongs to no table: it is routed to the failure handler
 * (destination `"unresolved"`, message `reason`) and the write goes on.
 *
 * **Details**
 *
 * - `reason`: why, as the failure's `message`.
 * - `payload` (optional): bytes to hand to the failure handler with it.
 *
 * **Example** (A verdict)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * new TableDestination.Unroutable({ reason: "no table" })._tag
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
 * The verdict for a record no table accepts.
 *
 * **Example** (Routing by a field)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * declare const orders: TableDestination.TableDestination
 * const resolve = (e: { kind: string }) =>
 *   e.kind === "order" ? orders : TableDestination.unroutable({ reason: `no table for kind '${e.kind}'` })
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
 * Chooses the table of each record, or declares it {@link Unroutable}. It runs before the serializer;
 * a resolver that throws has its record routed as unresolved (a `FailedMutation`), as an
 * unroutable verdict is.
 *
 * **Example** (Even and odd tables)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * declare const even: TableDestination.TableDestination
 * declare const odd: TableDestination.TableDestination
 * const resolver: TableDestination.DestinationResolver<number> = (n) => (n % 2 === 0 ? even : odd)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type DestinationResolver<A> = (record: A) => TableDestination | Unroutable

/**
 * Tells a destination from an unroutable verdict.
 *
 * **Example** (Narrowing a verdict)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * TableDestination.isUnroutable(TableDestination.unroutable({ reason: "no table" }))
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
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * TableDestination.isTableDestination("p.i.t")
 * // => false
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isTableDestination = (u: unknown): u is TableDestination => u instanceof TableDestination

/**
 * A resolver sending every record to one table.
 *
 * **Example** (One table)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * const table = TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: "events" })
 * String(TableDestination.fixed(table)("any record"))
 * // => "p.i.events"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fixed = (destination: TableDestination): DestinationResolver<unknown> => () => destination
