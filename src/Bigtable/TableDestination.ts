/**
 * Which Bigtable table a record goes to: a fixed table, or a resolver choosing one per record.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as check from "../internal/optionChecks.ts"
import type { SinkConfigError } from "../Sink/SinkConfigError.ts"

/**
 * The address of one Bigtable table. Two destinations with the same three ids are equal.
 *
 * **Details**
 *
 * `toString()` is `project.instance.table`, the form failures and summaries use; `tableName` is the
 * resource name `projects/p/instances/i/tables/t` the API uses.
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
export class TableDestination extends Data.Class<{
  readonly projectId: string
  readonly instanceId: string
  readonly tableId: string
}> {
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
 * Validates the three ids (not blank, no surrounding whitespace, no `/`) into a destination.
 *
 * **Example** (A rejected id)
 * ```ts
 * import { Effect } from "effect"
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * Effect.runSync(Effect.flip(TableDestination.make({ projectId: "p", instanceId: "i", tableId: "a/b" }))).path
 * // => "table.tableId"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  fields: TableDestinationFields,
  path = "table"
): Effect.Effect<TableDestination, SinkConfigError> =>
  Effect.gen(function*() {
    const projectId = yield* check.component(`${path}.projectId`, fields.projectId)
    const instanceId = yield* check.component(`${path}.instanceId`, fields.instanceId)
    const tableId = yield* check.component(`${path}.tableId`, fields.tableId)
    return new TableDestination({ projectId, instanceId, tableId })
  })

/**
 * Builds a destination without validating it here, for resolvers that run per record. The
 * writer validates each distinct destination the first time it sees it and fails the write with a
 * `SinkConfigError` (path `destinationResolver`) when an id is invalid.
 *
 * **Example** (A destination per tenant)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * const resolve = (e: { tenant: string }) =>
 *   TableDestination.makeUnsafe({ projectId: "p", instanceId: "i", tableId: `events_${e.tenant}` })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeUnsafe = (fields: TableDestinationFields): TableDestination => new TableDestination(fields)

/**
 * A resolver's verdict that a record belongs to no table: it is routed to the failure handler
 * (destination `"unresolved"`) and the write goes on.
 *
 * @category models
 * @since 0.1.0
 */
export interface Unroutable {
  readonly _tag: "Unroutable"
  readonly message: string
}

/**
 * The verdict for a record no table accepts.
 *
 * **Example** (Routing by a field)
 * ```ts
 * import { TableDestination } from "effect-gcp-sinks/Bigtable"
 * declare const orders: TableDestination.TableDestination
 * const resolve = (e: { kind: string }) =>
 *   e.kind === "order" ? orders : TableDestination.unroutable(`no table for kind '${e.kind}'`)
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const unroutable = (message: string): Unroutable => ({ _tag: "Unroutable", message })

/**
 * Chooses the table of each record, or declares it {@link Unroutable}. It runs before the serializer;
 * a resolver that throws fails the write (a defect).
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
 * TableDestination.isUnroutable(TableDestination.unroutable("no table"))
 * // => true
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isUnroutable = (u: unknown): u is Unroutable => Predicate.isTagged(u, "Unroutable")

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
