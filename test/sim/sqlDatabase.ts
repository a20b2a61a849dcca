/**
 * A simulated SQL database for the simulator, entering `CheckpointStore.sql`'s code
 * (`sqlStore.ts`) through its internal `Table` seam (`sqlTable.ts`, whose statements run against a
 * real PostgreSQL in `test/internal/checkpoint/sqlStore.test.ts`), so the store's compare-and-set,
 * nonce recognition, table creation, deadlines and retries are what runs.
 *
 * **Semantics**: one table kept by the world (it outlives the processes, and a machine crash of the
 * writers does not touch it), one row per writer; `insert` writes only when the writer has no row,
 * `replace` only where the row's id is the expected one; each statement is atomic. `create` is
 * `CREATE TABLE IF NOT EXISTS` as PostgreSQL runs it: a create sent while the table was missing
 * that finds it made by another create is refused half the time (a duplicate type), and in a
 * third of the seeds the processes' role may not create (every create is refused once the table
 * exists, as PostgreSQL checks the privilege first: the store must then use the table as it is);
 * reading a missing table is an error.
 * **Timing**: a statement leaves its process after a drawn latency, reaches the server after
 * another, and its answer comes back after a third. A paused process (a zombie) holds the
 * statements it has not sent, so one issued before the pause reaches the server after its
 * replacement's; a crashed process's unsent statements never do (a sent one still lands).
 * **Faults**: a connection error before the statement applies; a statement applied whose answer is
 * lost (the connection reset); an answer held past the store's deadline. Every draw comes from an
 * rng of the database's own, so the rest of a seed's draws are what they are without it.
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type { Row, StatementFailure, Table } from "../../src/internal/checkpoint/sqlTable.ts"
import type { CheckpointStore } from "../../src/Sink.ts"
import * as SqlStore from "../support/memorySqlTable.ts"
import type { Process, World } from "./kernel.ts"
import { rate as rateOf, type Rng } from "./random.ts"

export interface Faults {
  readonly latency: readonly [number, number]
  /** Per statement: a connection error before it applies. */
  readonly unavailable: number
  /** Per statement: applied, its answer lost. */
  readonly lostAnswer: number
  /** Per statement: its answer held past the store's deadline (30 s). */
  readonly spike: number
  /** The processes' role may not create the table (only the first create, on an empty database, goes through). */
  readonly createRefused: boolean
}

export const drawFaults = (rng: Rng, scale: number): Faults => ({
  latency: [1, rng.between(2, 30)],
  unavailable: rateOf(rng, scale),
  lostAnswer: rateOf(rng, scale),
  spike: rateOf(rng, scale) / 4,
  createRefused: rng.chance(1 / 3)
})

export interface SqlDatabaseSim {
  /** `CheckpointStore.sql`'s code on the simulated table, for one process. */
  readonly store: (proc: Process) => Layer.Layer<CheckpointStore>
  readonly calm: () => void
}

/** A statement's failure, as a driver reports it: `cause` names the statement and the server's message. */
const failed = (retryable: boolean, what: string, message: string): StatementFailure => ({
  retryable,
  cause: new Error(`${what}: ${message}`)
})
const refused = (what: string, message: string) => failed(false, what, message)
const transient = (what: string, message: string) => failed(true, what, message)
const missingTable = (what: string) => refused(what, "relation does not exist")
const isFailure = (u: unknown): u is StatementFailure =>
  typeof u === "object" && u !== null && "retryable" in u && "cause" in u

export const make = (world: World, rng: Rng, faults: Faults): SqlDatabaseSim => {
  const rows = new Map<string, Row>()
  let exists = false
  let calmed = false
  const hit = (p: number) => !calmed && rng.chance(p)
  const latency = () => rng.between(faults.latency[0], faults.latency[1])

  /** One statement of `proc`: sent (unless paused or dead), applied at the server, answered. */
  const statement = <A>(
    proc: Process,
    what: string,
    apply: (sentWhileMissing: boolean) => A | StatementFailure
  ): Effect.Effect<A, StatementFailure> =>
    Effect.callback<A, StatementFailure>((resume) => {
      const answer = (delay: number, result: Effect.Effect<A, StatementFailure>) =>
        world.at(delay, undefined, () => world.deliver(proc, () => resume(result)))
      world.at(latency(), undefined, () =>
        world.deliver(proc, () => {
          const missing = !exists
          world.at(latency(), undefined, () => {
            if (hit(faults.unavailable)) {
              world.trace(() => `${proc.name}: SQL ${what}: connection error before it applied`)
              return answer(latency(), Effect.fail(transient(what, "connection terminated (simulated)")))
            }
            const result = apply(missing)
            if (isFailure(result)) {
              world.trace(() => `${proc.name}: SQL ${what}: ${String(result.cause)}`)
              return answer(latency(), Effect.fail(result))
            }
            if (hit(faults.lostAnswer)) {
              world.trace(() => `${proc.name}: SQL ${what} applied, answer lost`)
              return answer(latency(), Effect.fail(transient(what, "connection reset (simulated)")))
            }
            answer(hit(faults.spike) ? 45_000 : latency(), Effect.succeed(result))
          })
        }))
    })

  const write = (proc: Process, writerId: string, row: Row) => {
    rows.set(writerId, row)
    world.trace(() => `${proc.name}: SQL row ${writerId} = ${row.id}`)
  }

  const table = (proc: Process): Table => ({
    name: "effect_gcp_sinks_checkpoints",
    create: statement(proc, "create table", (sentWhileMissing) => {
      if (exists && faults.createRefused) return refused("create table", "permission denied for schema public")
      if (exists && sentWhileMissing && rng.chance(0.5)) {
        return refused("create table", "duplicate key value violates unique constraint \"pg_type_typname_nsp_index\"")
      }
      exists = true
      return undefined
    }),
    read: (writerId) =>
      statement(proc, `read ${writerId}`, () => exists ? rows.get(writerId) : missingTable(`read ${writerId}`)),
    insert: (writerId, row) =>
      statement(proc, `insert ${writerId} ${row.id}`, () => {
        if (!exists) return missingTable("insert")
        if (rows.has(writerId)) return false
        write(proc, writerId, row)
        return true
      }),
    update: (writerId, expectedId, row) =>
      statement(proc, `update ${writerId} ${expectedId} -> ${row.id}`, () => {
        if (!exists) return missingTable("update")
        if (rows.get(writerId)?.id !== expectedId) return false
        write(proc, writerId, row)
        return true
      })
  })

  const store = (proc: Process): Layer.Layer<CheckpointStore> => SqlStore.layer(table(proc))

  return { store, calm: () => void (calmed = true) }
}
