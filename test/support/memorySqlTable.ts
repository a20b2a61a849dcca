/**
 * `CheckpointStore.sql`'s own code (`sqlStore.ts`) on an in-memory table behind its statement seam
 * (`sqlTable.ts`): each statement atomic, as the database makes it. The statements themselves run
 * against a real PostgreSQL in test/internal/checkpoint/sqlStore.test.ts.
 */
import { Effect, Layer, Schema } from "effect"
import { settings } from "../../src/internal/checkpoint/sqlOptions.ts"
import * as sqlStore from "../../src/internal/checkpoint/sqlStore.ts"
import type { Row, StatementFailure, Table } from "../../src/internal/checkpoint/sqlTable.ts"
import * as storeError from "../../src/internal/checkpoint/storeError.ts"
import { CheckpointConflict, CheckpointRecord, CheckpointStore } from "../../src/Sink/CheckpointStore.ts"

/** An in-memory checkpoint table; a statement before `create` fails as a missing table would. */
export const make = (): Table => {
  const rows = new Map<string, Row>()
  let exists = false
  // checked when a statement runs, not when it is built
  const statement = <A>(apply: () => A): Effect.Effect<A, StatementFailure> =>
    Effect.suspend(() =>
      exists ? Effect.sync(apply) : Effect.fail({ retryable: false, cause: new Error("relation does not exist") })
    )
  return {
    name: "checkpoints",
    create: Effect.sync(() => void (exists = true)),
    read: (writerId) => statement(() => rows.get(writerId)),
    insert: (writerId, row) =>
      statement(() => {
        if (rows.has(writerId)) return false
        rows.set(writerId, row)
        return true
      }),
    update: (writerId, expectedId, row) =>
      statement(() => {
        if (rows.get(writerId)?.id !== expectedId) return false
        rows.set(writerId, row)
        return true
      })
  }
}

/** `CheckpointStore.sql`'s code on `table` (each call: another process's store on the same table; the simulator's too). */
export const layer = (table: Table): Layer.Layer<CheckpointStore> =>
  Layer.effect(
    CheckpointStore,
    Effect.map(Effect.orDie(settings({})), (config) =>
      CheckpointStore.of(sqlStore.make(table, config, {
        decode: Schema.decodeUnknownResult(CheckpointRecord),
        conflict: (f) => new CheckpointConflict(f),
        error: storeError.fromFields
      })))
  )
