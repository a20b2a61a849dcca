/**
 * `CheckpointStore.sql`: each writer's latest entry in one row of a table, on any `SqlClient`
 * (PostgreSQL through `@effect/sql-pg` in the cluster's own database, or another dialect with
 * `INSERT ... ON CONFLICT DO NOTHING` and `RETURNING`).
 *
 * The database does the compare-and-set: a save is an `UPDATE ... WHERE writer_id = ? AND id = ?`
 * (or, for a writer's first entry, an `INSERT ... ON CONFLICT DO NOTHING`), and a statement that
 * changed no row lost the race. The row holds the entry's id (what the next save must expect) and
 * the same versioned JSON envelope as the file and GCS stores (a record, or a bare claim). A save
 * whose answer was lost is retried; it then finds its own record stored (the stored id is the
 * record's, ids being unique per save) and succeeds instead of reporting a conflict with itself.
 *
 * The statements go through `sqlTable.ts` (an `SqlClient`, or the simulator's database). Every
 * statement has a deadline (`responseTimeout`); a failure the driver calls retryable, and a
 * deadline, are retried on `retry` (its schedule reads the `CheckpointStoreError` the call would
 * end in); the rest fail at once. The table is created on first use (`CREATE TABLE IF NOT EXISTS`,
 * once per store, again after a failure).
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import { toScheduleOf } from "../core/retrySchedule.ts"
import * as envelope from "./envelope.ts"
import * as ids from "./ids.ts"
import type { Fields } from "./memoryStore.ts"
import type { Settings } from "./sqlOptions.ts"
import type { Row, StatementFailure, Table } from "./sqlTable.ts"
import type { ErrorFields } from "./storeError.ts"

/** @internal */
export interface Options<R, C, E> {
  readonly decode: (u: unknown) => Result.Result<R, Schema.SchemaError>
  readonly conflict: (fields: Fields) => C
  readonly error: (fields: ErrorFields) => E
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** What every statement of one store needs. */
interface Ctx<R, C, E> {
  readonly table: Table
  readonly settings: Settings
  readonly options: Options<R, C, E>
}

/** One statement: bounded by `responseTimeout`, retried on `retry` while its failure is transient. */
const run = <R, C, E, A>(
  ctx: Ctx<R, C, E>,
  writerId: string,
  what: string,
  statement: Effect.Effect<A, StatementFailure>
): Effect.Effect<A, E> => {
  const { options, settings, table } = ctx
  let transient = false
  return statement.pipe(
    Effect.timeoutOrElse({
      duration: settings.responseTimeout,
      orElse: () => Effect.fail(`no answer within ${Duration.format(settings.responseTimeout)}`)
    }),
    Effect.mapError((failure) => {
      const cause = typeof failure === "string" ? failure : failure.cause
      transient = typeof failure === "string" || failure.retryable
      const detail = `${what} in table ${table.name} failed: ${describe(cause)}`
      return options.error({ reason: "Io", writerId, detail, cause })
    }),
    Effect.retry({ schedule: toScheduleOf(settings.retry, (e: E) => e), while: () => transient })
  )
}

/**
 * The table, created once per store (again after a failed attempt); two processes at once are fine:
 * IF NOT EXISTS, and a creation that lost a race on the catalog is tried again and then finds it. A
 * creation refused although the table exists (PostgreSQL checks the role's CREATE privilege on the
 * schema before it looks for the table: a table made by an administrator) is fine too: the table
 * answers a read, and the store goes on; a table that does not answer fails with the creation's error.
 */
const tableCreation = <R, C, E>(ctx: Ctx<R, C, E>): (writerId: string) => Effect.Effect<void, E> => {
  const lock = Semaphore.makeUnsafe(1)
  let created = false
  const create = (writerId: string) =>
    run(ctx, writerId, "creating the checkpoint table", Effect.retry(ctx.table.create, { times: 2 })).pipe(
      Effect.catch((refused) =>
        Effect.matchEffect(run(ctx, writerId, "reading the checkpoint table", ctx.table.read(writerId)), {
          onSuccess: () => Effect.void,
          onFailure: () => Effect.fail(refused)
        })
      ),
      Effect.tap(() => Effect.sync(() => void (created = true)))
    )
  return (writerId) =>
    created ? Effect.void : lock.withPermit(Effect.suspend(() => created ? Effect.void : create(writerId)))
}

/** The entry a row holds, or `Corrupt`. */
const entryOf = <R extends { readonly id: string }, C, E>(
  ctx: Ctx<R, C, E>,
  writerId: string,
  row: Row
): Effect.Effect<envelope.Entry<R>, E> => {
  const corrupt = (detail: string) =>
    Effect.fail(ctx.options.error({ reason: "Corrupt", writerId, detail: `the stored checkpoint is ${detail}` }))
  const decoded = envelope.decodeEnvelope(row.entry)
  if (Result.isFailure(decoded)) return corrupt(`not a checkpoint envelope: ${decoded.failure.message}`)
  if (decoded.success.writerId !== writerId) return corrupt(`writer '${decoded.success.writerId}'s`)
  const stored = envelope.storedOf(decoded.success)
  if (Result.isFailure(stored)) return corrupt(stored.failure)
  const entry = envelope.entryOf(stored.success, ctx.options.decode)
  if (Result.isFailure(entry)) return corrupt(entry.failure)
  return entry.success.id === row.id ? Effect.succeed(entry.success) : corrupt(`not the row's id ${row.id}`)
}

/**
 * Stores `stored` under `id` if the writer's entry is still `expected` (none: no entry yet).
 * Whether it did.
 */
const replace = <R, C, E>(
  ctx: Ctx<R, C, E>,
  writerId: string,
  expected: Row | undefined,
  id: string,
  stored: envelope.Stored
): Effect.Effect<boolean, E> => {
  const sequence = Number(expected?.sequence ?? 0) + 1
  const row: Row = { id, sequence, entry: envelope.encodeEnvelope(writerId, sequence, stored) }
  const statement = expected === undefined
    ? ctx.table.insert(writerId, row)
    : ctx.table.update(writerId, expected.id, row)
  return run(ctx, writerId, "saving the checkpoint", statement)
}

/** `effect`, unless the writer id is empty (`InvalidWriterId`). */
const guardWith =
  <R, C, E>(options: Options<R, C, E>) =>
  <A, X>(writerId: string, effect: () => Effect.Effect<A, X>): Effect.Effect<A, X | E> =>
    writerId.length === 0
      ? Effect.fail(options.error({ reason: "InvalidWriterId", writerId, detail: "writerId must not be empty" }))
      : effect()

/** @internal */
export const make = <R extends { readonly id: string }, C, E>(
  table: Table,
  settings: Settings,
  options: Options<R, C, E>
) => {
  const ctx: Ctx<R, C, E> = { table, settings, options }
  const ensureTable = tableCreation(ctx)
  const guarded = guardWith(options)
  const read = (writerId: string): Effect.Effect<Row | undefined, E> =>
    Effect.andThen(ensureTable(writerId), run(ctx, writerId, "reading the checkpoint", table.read(writerId)))

  const load = (writerId: string): Effect.Effect<Option.Option<R>, E> =>
    guarded(
      writerId,
      () =>
        Effect.flatMap(read(writerId), (row) =>
          row === undefined ? Effect.succeedNone : Effect.map(entryOf(ctx, writerId, row), (e) => e.record))
    )

  const save = (writerId: string, record: R, expectedPreviousId: string | undefined): Effect.Effect<void, C | E> =>
    guarded(
      writerId,
      Effect.fnUntraced(function*() {
        const actual = yield* read(writerId)
        // a retried save whose first attempt landed finds its own record (ids are unique per save)
        if (actual?.id === record.id) return
        if (actual?.id !== expectedPreviousId) {
          return yield* Effect.fail(options.conflict({ writerId, expectedPreviousId, actualId: actual?.id }))
        }
        if (yield* replace(ctx, writerId, actual, record.id, { _tag: "Record", raw: record })) return
        // lost the race between the read and the write (or this very write landed, its answer lost)
        const now = yield* read(writerId)
        if (now?.id === record.id) return
        return yield* Effect.fail(options.conflict({ writerId, expectedPreviousId, actualId: now?.id }))
      })
    )

  const claim = (writerId: string): Effect.Effect<{ readonly id: string; readonly record: Option.Option<R> }, C | E> =>
    guarded(
      writerId,
      Effect.fnUntraced(function*() {
        for (let attempt = 0; attempt < ids.claimAttempts; attempt++) {
          const row = yield* read(writerId)
          const current = row === undefined ? undefined : yield* entryOf(ctx, writerId, row)
          const id = ids.idAfter(current?.id, yield* ids.randomPart)
          const stored = envelope.claimOver(current?.stored, id)
          if (yield* replace(ctx, writerId, row, id, stored)) {
            // the record as stored again: it decoded above, under its old id
            const claimed = envelope.entryOf(stored, options.decode)
            if (Result.isSuccess(claimed)) return { id, record: claimed.success.record }
            return yield* Effect.fail(options.error({ reason: "Corrupt", writerId, detail: claimed.failure }))
          }
        }
        return yield* Effect.fail(options.conflict({ writerId, expectedPreviousId: undefined, actualId: undefined }))
      })
    )

  return { load, save, claim }
}
