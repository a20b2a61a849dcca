import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, type Fiber, Layer, Option } from "effect"
import { CheckpointConflict, CheckpointRecord, CheckpointStore } from "../../src/Sink.ts"
import { World } from "./kernel.ts"
import * as Rng from "./random.ts"
import * as SqlDatabase from "./sqlDatabase.ts"

const calm: SqlDatabase.Faults = { latency: [1, 1], unavailable: 0, lostAnswer: 0, spike: 0, createRefused: false }

const record = (id: string) => new CheckpointRecord({ id, position: id, commits: [] })

/** The store of `proc` on the database. */
const storeOf = (sim: SqlDatabase.SqlDatabaseSim, proc: Parameters<SqlDatabase.SqlDatabaseSim["store"]>[0]) =>
  Effect.map(Layer.build(sim.store(proc)), (context) => Context.get(context, CheckpointStore))

/** Runs the world until `fiber` ends; its exit. */
const drive = async <A, E>(w: World, fiber: Fiber.Fiber<A, E>): Promise<Exit.Exit<A, E>> => {
  await w.run(() => fiber.pollUnsafe() !== undefined, { maxTime: 600_000, maxSteps: 100_000 })
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("the fiber did not end")
  return exit
}

describe("simulated SQL database", () => {
  it("a paused zombie's statement reaches the database after its replacement's claim, and is refused", async () => {
    const w = new World({ rng: Rng.make(7) })
    const sim = SqlDatabase.make(w, Rng.make(8), calm)
    const zombie = w.process("zombie")
    const replacement = w.process("replacement")
    const setup = await drive(
      w,
      w.fork(
        zombie,
        Effect.scoped(Effect.gen(function*() {
          const store = yield* storeOf(sim, zombie)
          const claim = yield* store.claim("w")
          yield* store.save("w", record("z1"), claim.id)
          return store
        }))
      )
    )
    if (Exit.isFailure(setup)) return assert.fail(String(setup))
    // the zombie issues its next save, and pauses before the statement leaves (it takes 1 ms)
    const late = w.fork(zombie, setup.value.save("w", record("z2"), "z1"))
    w.at(0.5, undefined, () => w.pause(zombie))
    const taken = await drive(
      w,
      w.fork(
        replacement,
        Effect.scoped(Effect.gen(function*() {
          const store = yield* storeOf(sim, replacement)
          const claim = yield* store.claim("w")
          yield* store.save("w", record("r1"), claim.id)
          return claim.id
        }))
      )
    )
    assert.isTrue(Exit.isSuccess(taken))
    assert.strictEqual(zombie.state, "paused")
    w.resume(zombie)
    const exit = await drive(w, late)
    const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    assert.instanceOf(error, CheckpointConflict)
    const loaded = await drive(
      w,
      w.fork(replacement, Effect.scoped(Effect.flatMap(storeOf(sim, replacement), (store) => store.load("w"))))
    )
    assert.strictEqual(Exit.isSuccess(loaded) ? Option.getOrThrow(loaded.value).id : undefined, "r1")
  })

  it("under lost answers, refused creates and connection errors, a chain of saves lands whole", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const w = new World({ rng: Rng.make(seed) })
      const faults = { ...calm, latency: [1, 20] as const, unavailable: 0.1, lostAnswer: 0.2, createRefused: true }
      const sim = SqlDatabase.make(w, Rng.make(seed + 1000), faults)
      const procs = [w.process("a"), w.process("b")]
      // each process saves a chain from its own claim; the last claimant's chain is the one in force
      let last = ""
      for (const [i, proc] of procs.entries()) {
        // oxlint-disable-next-line no-await-in-loop -- the world runs one process at a time
        const exit = await drive(
          w,
          w.fork(
            proc,
            Effect.scoped(Effect.gen(function*() {
              const store = yield* storeOf(sim, proc)
              const claim = yield* store.claim("w")
              let previous = claim.id
              for (let n = 0; n < 5; n++) {
                const id = `${i}-${n}`
                yield* store.save("w", record(id), previous)
                previous = id
              }
              return previous
            }))
          )
        )
        assert.isTrue(Exit.isSuccess(exit), `seed ${seed}, process ${i}: ${String(exit)}`)
        if (Exit.isSuccess(exit)) last = exit.value
      }
      // oxlint-disable-next-line no-await-in-loop -- the world runs one process at a time
      const loaded = await drive(
        w,
        w.fork(
          procs[0] ?? w.process("c"),
          Effect.scoped(Effect.flatMap(storeOf(sim, procs[0] ?? w.process("c")), (s) => s.load("w")))
        )
      )
      assert.strictEqual(Exit.isSuccess(loaded) ? Option.getOrThrow(loaded.value).id : undefined, last, `seed ${seed}`)
    }
  })
})
