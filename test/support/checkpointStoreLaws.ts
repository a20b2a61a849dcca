/**
 * The compare-and-set laws every `CheckpointStore` obeys, as a property over random save histories
 * generated with fast-check (seeded: a failure names the seed and the case, which replays it):
 *
 * - of concurrent savers with the same expectation, exactly one wins when the expectation is the
 *   stored id, and none when it is stale (an older id, an id never stored, or none after a save);
 * - every loser fails with a `CheckpointConflict` naming the writer, its own expected id and the id
 *   actually stored (the round's winner, or the record that made the expectation stale);
 * - a load after the history returns the last winner, whole (id, position, commits).
 *
 * Cases run as Effects one after the other (each on a fresh writer id); fast-check generates them.
 */
import { assert } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import * as fc from "fast-check"
import { CheckpointConflict, CheckpointRecord, type CheckpointStore } from "../../src/Sink.ts"

type Expectation = "current" | "stale" | "none"

export interface Round {
  readonly contenders: number
  readonly expectation: Expectation
}

/** A history: rounds of concurrent saves, each with 1 to `maxContenders` savers. */
export const history = (maxContenders = 5): fc.Arbitrary<ReadonlyArray<Round>> =>
  fc.array(
    fc.record({
      contenders: fc.integer({ min: 1, max: maxContenders }),
      // mostly valid rounds, so that histories grow long enough to matter
      expectation: fc.constantFrom<Expectation>("current", "current", "current", "stale", "none")
    }),
    { minLength: 1, maxLength: 8 }
  )

const record = (id: string, round: number, contender: number) =>
  new CheckpointRecord({
    id,
    position: { round, contender, at: [round, contender] },
    commits: [{ stream: `s-${id}`, offset: round * 10 + contender }, null, "x"]
  })

export interface LawFigures {
  readonly cases: number
  readonly rounds: number
  readonly saves: number
  readonly conflicts: number
}

/** Runs one history on `writerId`; returns the number of saves and conflicts. */
const runHistory = Effect.fnUntraced(function*(
  store: CheckpointStore["Service"],
  writerId: string,
  rounds: ReadonlyArray<Round>,
  label: string
) {
  let current: CheckpointRecord | undefined
  const stored: Array<string> = []
  let conflicts = 0
  let saves = 0
  for (const [r, round] of rounds.entries()) {
    const expected = round.expectation === "current"
      ? current?.id
      : round.expectation === "none"
      ? undefined
      : stored.length >= 2
      ? stored[stored.length - 2]
      : `ghost-${r}`
    const valid = expected === current?.id
    const records = Array.from({ length: round.contenders }, (_, c) => record(`${writerId}-r${r}c${c}`, r, c))
    const exits = yield* Effect.forEach(
      records,
      (rec) => Effect.exit(store.save(writerId, rec, expected)),
      { concurrency: "unbounded" }
    )
    saves += records.length
    const winners = records.filter((_, i) => Exit.isSuccess(exits[i] ?? Exit.void))
    const where = `${label}, round ${r} (${round.contenders} x ${round.expectation}, expected ${String(expected)})`
    assert.strictEqual(winners.length, valid ? 1 : 0, `${where}: winners ${winners.map((w) => w.id).join(",")}`)
    const winner = winners[0]
    if (winner !== undefined) {
      current = winner
      stored.push(winner.id)
    }
    for (const exit of exits) {
      if (Exit.isSuccess(exit)) continue
      conflicts++
      const error = Cause.squash(exit.cause)
      assert.instanceOf(error, CheckpointConflict, `${where}: ${String(error)}`)
      if (error instanceof CheckpointConflict) {
        assert.strictEqual(error.writerId, writerId, where)
        assert.strictEqual(error.expectedPreviousId, expected, where)
        assert.strictEqual(error.actualId, current?.id, `${where}: the conflict names the stored id`)
        assert.include(error.message, current === undefined ? "found none" : `found '${current.id}'`, where)
      }
    }
  }
  const loaded = yield* store.load(writerId)
  if (current === undefined) {
    assert.isTrue(Option.isNone(loaded), `${label}: nothing was saved`)
  } else {
    const last = Option.getOrThrow(loaded)
    assert.deepStrictEqual(
      [last.id, last.position, last.commits],
      [current.id, current.position, current.commits],
      `${label}: load returns the last winner`
    )
  }
  return { saves, conflicts }
})

/**
 * Checks the laws on `store` for `runs` histories sampled with `seed`, each on its own writer id
 * (`<prefix>-<case>`), so that one store serves every case.
 */
export const checkLaws = Effect.fnUntraced(function*(
  store: CheckpointStore["Service"],
  options: { readonly runs: number; readonly seed: number; readonly prefix: string; readonly maxContenders?: number }
) {
  const cases = fc.sample(history(options.maxContenders), { numRuns: options.runs, seed: options.seed })
  let rounds = 0
  let saves = 0
  let conflicts = 0
  for (const [i, rs] of cases.entries()) {
    const label = `seed ${options.seed}, case ${i}: ${JSON.stringify(rs)}`
    const figures = yield* runHistory(store, `${options.prefix}-${i}`, rs, label)
    rounds += rs.length
    saves += figures.saves
    conflicts += figures.conflicts
  }
  const figures: LawFigures = { cases: cases.length, rounds, saves, conflicts }
  return figures
})
