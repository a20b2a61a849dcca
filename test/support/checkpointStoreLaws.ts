/**
 * The laws every `CheckpointStore` obeys, as a property over random histories generated with
 * fast-check (seeded: a failure names the seed and the case, which replays it):
 *
 * - compare-and-set: of concurrent savers with the same expectation, exactly one wins when the
 *   expectation is the stored id, and none when it is stale (an older id, an id never stored, or
 *   none after a save or a claim);
 * - every loser fails with a `CheckpointConflict` naming the writer, its own expected id and the id
 *   actually stored (the round's winner, or the entry that made the expectation stale);
 * - ownership passes to a claimant: a claim succeeds even while the previous owner keeps saving (its
 *   concurrent saves, "zombies", expect the id before the claim), returns the latest record under
 *   the claim's id (or none), and from then on the previous owner's saves are refused and a save
 *   expecting the claim's id wins;
 * - a load after the history returns the last record, whole (position and commits), under the id
 *   the next save must expect (none when only claims were made).
 *
 * Cases run as Effects one after the other (each on a fresh writer id); fast-check generates them.
 * {@link checkClaims} adds the law a history cannot state: of concurrent claimants exactly one owns
 * the writer afterwards.
 */
import { assert } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import * as fc from "fast-check"
import { CheckpointConflict, CheckpointRecord, type CheckpointStore } from "../../src/Sink.ts"

type Expectation = "current" | "stale" | "none"

export type Round =
  | { readonly kind: "save"; readonly contenders: number; readonly expectation: Expectation }
  | { readonly kind: "claim"; readonly zombies: number }

/** A history: rounds of concurrent saves (1 to `maxContenders` savers), and claims racing 0-3 zombie saves. */
export const history = (maxContenders = 5): fc.Arbitrary<ReadonlyArray<Round>> =>
  fc.array(
    fc.oneof(
      // mostly valid rounds, so that histories grow long enough to matter
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant("save" as const),
          contenders: fc.integer({ min: 1, max: maxContenders }),
          expectation: fc.constantFrom<Expectation>("current", "current", "current", "stale", "none")
        })
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant("claim" as const), zombies: fc.integer({ min: 0, max: 3 }) })
      }
    ),
    { minLength: 1, maxLength: 8 }
  )

const record = (id: string, round: number, contender: number) =>
  new CheckpointRecord({
    id,
    position: { round, contender, at: [round, contender] },
    commits: [{ stream: `s-${id}`, offset: round * 10 + contender }, null, "x"]
  })

/** What a record holds besides its id. */
const content = (r: CheckpointRecord | undefined) => (r === undefined ? undefined : [r.position, r.commits])

export interface LawFigures {
  readonly cases: number
  readonly rounds: number
  readonly saves: number
  readonly conflicts: number
  readonly claims: number
}

/** The writer as the laws know it: the id the next save must expect, and the last record's content. */
interface State {
  id: string | undefined
  record: CheckpointRecord | undefined
  readonly ids: Array<string>
}

const assertConflict = (
  exit: Exit.Exit<unknown, unknown>,
  expected: { readonly writerId: string; readonly expectedPreviousId: string | undefined },
  actual: ReadonlyArray<string | undefined>,
  where: string
) => {
  const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  assert.instanceOf(error, CheckpointConflict, `${where}: ${String(error)}`)
  if (error instanceof CheckpointConflict) {
    assert.strictEqual(error.writerId, expected.writerId, where)
    assert.strictEqual(error.expectedPreviousId, expected.expectedPreviousId, where)
    assert.include(actual, error.actualId, `${where}: the conflict names the stored id`)
    const found = error.actualId === undefined ? "found none" : `found '${error.actualId}'`
    assert.include(error.message, found, where)
  }
}

/** A round of concurrent saves; returns the saves and conflicts. */
const saveRound = Effect.fnUntraced(function*(
  store: CheckpointStore["Service"],
  writerId: string,
  state: State,
  round: Extract<Round, { kind: "save" }>,
  r: number,
  label: string
) {
  const expected = round.expectation === "current"
    ? state.id
    : round.expectation === "none"
    ? undefined
    : state.ids.length >= 2
    ? state.ids[state.ids.length - 2]
    : `ghost-${r}`
  const valid = expected === state.id
  const records = Array.from({ length: round.contenders }, (_, c) => record(`${writerId}-r${r}c${c}`, r, c))
  const exits = yield* Effect.forEach(records, (rec) => Effect.exit(store.save(writerId, rec, expected)), {
    concurrency: "unbounded"
  })
  const winners = records.filter((_, i) => Exit.isSuccess(exits[i] ?? Exit.void))
  const where = `${label}, round ${r} (${round.contenders} x ${round.expectation}, expected ${String(expected)})`
  assert.strictEqual(winners.length, valid ? 1 : 0, `${where}: winners ${winners.map((w) => w.id).join(",")}`)
  const winner = winners[0]
  if (winner !== undefined) {
    state.id = winner.id
    state.record = winner
    state.ids.push(winner.id)
  }
  for (const exit of exits) {
    if (Exit.isFailure(exit)) assertConflict(exit, { writerId, expectedPreviousId: expected }, [state.id], where)
  }
  return { saves: records.length, conflicts: records.length - winners.length }
})

/** A claim racing `zombies` saves of the previous owner (expecting the id before the claim). */
const claimRound = Effect.fnUntraced(function*(
  store: CheckpointStore["Service"],
  writerId: string,
  state: State,
  round: Extract<Round, { kind: "claim" }>,
  r: number,
  label: string
) {
  const before = state.id
  const zombies = Array.from({ length: round.zombies }, (_, c) => record(`${writerId}-r${r}z${c}`, r, c))
  const [claim, ...exits] = yield* Effect.all(
    [
      Effect.exit(store.claim(writerId)),
      ...zombies.map((rec) => Effect.exit(store.save(writerId, rec, before)))
    ],
    { concurrency: "unbounded" }
  )
  const where = `${label}, round ${r} (claim with ${round.zombies} zombie saves, expected ${String(before)})`
  if (claim === undefined || Exit.isFailure(claim)) return assert.fail(`${where}: the claim failed: ${String(claim)}`)
  const claimed = claim.value as { readonly id: string; readonly record: Option.Option<CheckpointRecord> }
  const landed = zombies.filter((_, i) => Exit.isSuccess(exits[i] ?? Exit.void))
  // a zombie save may land before the claim reads (the claim then takes it over): at most one
  assert.isAtMost(landed.length, 1, `${where}: zombie saves that landed`)
  const zombie = landed[0]
  for (const exit of exits) {
    if (Exit.isFailure(exit)) {
      assertConflict(exit, { writerId, expectedPreviousId: before }, [claimed.id, zombie?.id], where)
    }
  }
  assert.notInclude(state.ids, claimed.id, `${where}: a claim's id is new`)
  const taken = zombie ?? state.record
  assert.deepStrictEqual(content(Option.getOrUndefined(claimed.record)), content(taken), `${where}: the claimed record`)
  if (Option.isSome(claimed.record)) assert.strictEqual(claimed.record.value.id, claimed.id, where)
  // from now on the previous owner's saves are refused
  const late = yield* Effect.exit(store.save(writerId, record(`${writerId}-r${r}late`, r, 9), before))
  assertConflict(late, { writerId, expectedPreviousId: before }, [claimed.id], `${where}, a later zombie save`)
  if (zombie !== undefined) {
    const again = yield* Effect.exit(store.save(writerId, record(`${writerId}-r${r}late2`, r, 8), zombie.id))
    assertConflict(again, { writerId, expectedPreviousId: zombie.id }, [claimed.id], `${where}, the zombie again`)
  }
  if (zombie !== undefined) state.ids.push(zombie.id)
  state.id = claimed.id
  state.record = taken
  state.ids.push(claimed.id)
  const extra = zombie === undefined ? 1 : 2
  return { saves: zombies.length + extra, conflicts: exits.length - landed.length + extra }
})

/** Runs one history on `writerId`. */
const runHistory = Effect.fnUntraced(function*(
  store: CheckpointStore["Service"],
  writerId: string,
  rounds: ReadonlyArray<Round>,
  label: string
) {
  const state: State = { id: undefined, record: undefined, ids: [] }
  let conflicts = 0
  let saves = 0
  let claims = 0
  for (const [r, round] of rounds.entries()) {
    const figures = round.kind === "save"
      ? yield* saveRound(store, writerId, state, round, r, label)
      : yield* claimRound(store, writerId, state, round, r, label)
    saves += figures.saves
    conflicts += figures.conflicts
    if (round.kind === "claim") claims++
  }
  const loaded = yield* store.load(writerId)
  if (state.record === undefined) {
    assert.isTrue(Option.isNone(loaded), `${label}: no record was saved`)
  } else {
    const last = Option.getOrThrow(loaded)
    assert.deepStrictEqual(
      [last.id, last.position, last.commits],
      [state.id, state.record.position, state.record.commits],
      `${label}: load returns the last record under the current id`
    )
  }
  return { saves, conflicts, claims }
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
  let claims = 0
  for (const [i, rs] of cases.entries()) {
    const label = `seed ${options.seed}, case ${i}: ${JSON.stringify(rs)}`
    const figures = yield* runHistory(store, `${options.prefix}-${i}`, rs, label)
    rounds += rs.length
    saves += figures.saves
    conflicts += figures.conflicts
    claims += figures.claims
  }
  const figures: LawFigures = { cases: cases.length, rounds, saves, conflicts, claims }
  return figures
})

/**
 * Of `claimants` concurrent claims of one writer (with or without a record), every one succeeds with
 * a distinct id, and exactly one of them owns the writer afterwards: a save expecting its id wins,
 * a save expecting any other is refused.
 */
export const checkClaims = Effect.fnUntraced(function*(
  store: CheckpointStore["Service"],
  options: { readonly writerId: string; readonly claimants: number; readonly withRecord: boolean }
) {
  const { writerId } = options
  const base = record(`${writerId}-base`, 0, 0)
  if (options.withRecord) yield* store.save(writerId, base, undefined)
  const claimed = yield* Effect.forEach(
    Array.from({ length: options.claimants }),
    () => store.claim(writerId),
    { concurrency: "unbounded" }
  )
  const claimIds = claimed.map((c) => c.id)
  assert.strictEqual(new Set(claimIds).size, claimIds.length, "claim ids are distinct")
  for (const c of claimed) {
    assert.strictEqual(Option.isSome(c.record), options.withRecord)
    if (Option.isSome(c.record)) assert.deepStrictEqual(content(c.record.value), content(base))
  }
  // one save per claimant, one after the other: only the owner's lands
  const exits = yield* Effect.forEach(
    claimIds,
    (id, i) => Effect.exit(store.save(writerId, record(`${writerId}-after${i}`, 1, i), id))
  )
  assert.strictEqual(exits.filter(Exit.isSuccess).length, 1, `owners among ${claimIds.join(", ")}`)
})
