/**
 * Shared fixtures of the BigQuery CDC sink tests: a change record over the fixtures' two columns, its
 * serializer (the row image of the change), and the table resource fields of a primary key on `id`.
 */
import { Effect } from "effect"
import { type Cdc, RowSerializer } from "../../src/BigQuery/index.ts"
import * as F from "./sinkFixtures.ts"

export interface Change {
  readonly op: Cdc.ChangeType
  readonly id: bigint
  readonly name?: string | undefined
  readonly seq?: string | undefined
}

/** `sinkFixtures.schema`'s serializer over the change's row image. */
export const serializer = Effect.map(
  F.serializer,
  (rows) => RowSerializer.contramap(rows, ({ id, name }: Change): F.Row => ({ id, name }))
)

/** The `cdc` option of the tests: the change's own type and sequence number. */
export const cdc: Cdc.CdcOptions<Change> = { changeType: (c) => c.op, sequenceNumber: (c) => c.seq ?? "" }

/** Table resource fields: a primary key on `id`. */
export const primaryKey = { tableConstraints: { primaryKey: { columns: ["id"] } } }
