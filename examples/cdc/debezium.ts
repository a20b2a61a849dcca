/**
 * Mirroring a Debezium PostgreSQL change stream into a BigQuery CDC table: the event envelope, the
 * serializer of its row image and the `cdc` option (UPSERT for snapshot reads, creates and updates,
 * DELETE for deletes; the sequence number from the source block's LSNs). Used by
 * `examples/bigquery-cdc-debezium.ts` and by its test.
 */
import { Effect, Schema } from "effect"
import { Cdc, RowSerializer, WriteMethod } from "effect-gcp-sinks/BigQuery"

/** The mirrored table's columns: `public.customers`. */
export const Customer = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String
})
export type Customer = typeof Customer.Type

/** A Debezium change event (JSON converter without schemas): the row before and after, the source block, the operation. */
export const ChangeEvent = Schema.Struct({
  before: Schema.NullOr(Customer),
  after: Schema.NullOr(Customer),
  source: Schema.Record(Schema.String, Schema.Unknown),
  op: Schema.Literals(["r", "c", "u", "d"])
})
export type ChangeEvent = typeof ChangeEvent.Type

/** Decodes one line of a Debezium topic dump. */
export const decodeLine = Schema.decodeUnknownEffect(Schema.fromJsonString(ChangeEvent))

/** The row a change writes: the image after it, or for a delete the image before (its primary key matters). */
export const serializer = Effect.map(
  RowSerializer.fromSchema(Customer),
  (customers) =>
    RowSerializer.contramap(customers, (event: ChangeEvent): Customer => {
      const row = event.after ?? event.before
      if (row === null) throw new Error(`a '${event.op}' event without a row image`)
      return row
    })
)

/** The write method: CDC with the Debezium PostgreSQL sequence numbers, a primary key and 15 minutes of staleness. */
export const writeMethod = WriteMethod.atLeastOnce<ChangeEvent>({
  cdc: {
    changeType: (event) => (event.op === "d" ? "DELETE" : "UPSERT"),
    sequenceNumber: (event) => Cdc.debeziumPostgres(event.source),
    tableOptions: { primaryKey: ["id"], maxStaleness: "15 minutes" }
  }
})
