/**
 * The checkpoint table of `CheckpointStore.sql` as four statements: the seam between the store's
 * compare-and-set (`sqlStore.ts`) and the database. {@link fromClient} sends them through an
 * `SqlClient`; the simulator runs the same store on a simulated database through this interface.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"

/** A writer's row. @internal */
export interface Row {
  readonly id: string
  /** How many entries the writer has had (a driver may give it as a `bigint`). */
  readonly sequence: number | bigint
  readonly entry: string
}

/** Why a statement failed: the driver's error, and whether sending it again may succeed. @internal */
export interface StatementFailure {
  readonly retryable: boolean
  readonly cause: unknown
}

/** @internal */
export interface Table {
  readonly name: string
  /** `CREATE TABLE IF NOT EXISTS`. */
  readonly create: Effect.Effect<void, StatementFailure>
  /** The writer's row, if any. */
  readonly read: (writerId: string) => Effect.Effect<Row | undefined, StatementFailure>
  /** Inserts the writer's first row, unless it has one: whether it did. */
  readonly insert: (writerId: string, row: Row) => Effect.Effect<boolean, StatementFailure>
  /** Replaces the writer's row if its id is still `expectedId`: whether it did. */
  readonly update: (writerId: string, expectedId: string, row: Row) => Effect.Effect<boolean, StatementFailure>
}

const failure = (e: SqlError): StatementFailure => ({ retryable: e.isRetryable, cause: e })

/**
 * The table `name` through `sql`: a dialect with `INSERT ... ON CONFLICT DO NOTHING` and
 * `RETURNING` (PostgreSQL, SQLite).
 *
 * @internal
 */
export const fromClient = (sql: SqlClient, name: string): Table => {
  const table = sql(name)
  return {
    name,
    create: sql`CREATE TABLE IF NOT EXISTS ${table} (
        writer_id TEXT PRIMARY KEY,
        id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        entry TEXT NOT NULL,
        updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
      )`.pipe(Effect.asVoid, Effect.mapError(failure)),
    read: (writerId) =>
      sql<Row>`SELECT id, sequence, entry FROM ${table} WHERE writer_id = ${writerId}`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.mapError(failure)
      ),
    insert: (writerId, row) =>
      sql<{ readonly id: string }>`INSERT INTO ${table} (writer_id, id, sequence, entry)
        VALUES (${writerId}, ${row.id}, ${row.sequence}, ${row.entry})
        ON CONFLICT (writer_id) DO NOTHING RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.mapError(failure)
      ),
    update: (writerId, expectedId, row) =>
      sql<{ readonly id: string }>`UPDATE ${table}
        SET id = ${row.id}, sequence = ${row.sequence}, entry = ${row.entry}, updated_at = CURRENT_TIMESTAMP
        WHERE writer_id = ${writerId} AND id = ${expectedId} RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.mapError(failure)
      )
  }
}
