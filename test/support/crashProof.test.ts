/**
 * The crash-proof harness proven on its toy child (`crashToyChild.ts`: the exactly-once protocol on a
 * file-backed destination with `CheckpointStore.file`), before any sink uses it: seeded SIGKILLs between
 * a save and its commit, in the middle of a commit, after a staged batch and at random times; restarts
 * from the store; an exact destination afterwards; a zombie and its replacement; and the harness's own
 * failures (time bound, a child failing on its own).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CrashProof from "./crashProof.ts"
import { exact, readToyDestination, toyPoints, toyScript } from "./crashToy.ts"

const toy = toyScript
const points = toyPoints
const readDestination = readToyDestination

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "crash-proof-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("crashProof", () => {
  it.effect("the kill plan is a function of the seed", () =>
    Effect.gen(function*() {
      const a = yield* CrashProof.plan({ seed: 11, kills: 20, points })
      const b = yield* CrashProof.plan({ seed: 11, kills: 20, points })
      const c = yield* CrashProof.plan({ seed: 12, kills: 20, points })
      assert.deepStrictEqual(a, b)
      assert.notStrictEqual(JSON.stringify(a), JSON.stringify(c))
      assert.strictEqual(a.length, 20)
      assert.deepStrictEqual(new Set(a.map((k) => k.label)).size, 4, "every kind of point is drawn")
      // the first round in the order given: each kind is tried on fresh input, whatever the machine's speed
      const first = yield* CrashProof.plan({ seed: 11, kills: points.length, points })
      const reversed = yield* CrashProof.plan({ seed: 11, kills: points.length, points: points.toReversed() })
      assert.deepStrictEqual(first.map((k) => k.label), reversed.map((k) => k.label).toReversed())
      assert.deepStrictEqual(a.slice(0, points.length).map((k) => k.label), first.map((k) => k.label))
    }))

  it.live(
    "the toy survives seeded SIGKILLs, restarts from its store, and its destination is exact",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        // 120 batches, 40 checkpoints: more work than 12 kills (each after at most 2 checkpoints) consume
        const total = 60_000
        const figures = yield* CrashProof.run({
          script: toy,
          env: { TOY_DIR: dir, TOY_TOTAL: String(total), TOY_CHUNK: "500", TOY_EVERY: "3" },
          seed: 20261130,
          kills: 12,
          points,
          timeout: "90 seconds"
        })
        assert.strictEqual(figures.kills, 12)
        assert.strictEqual(figures.restarts, 12)
        assert.deepStrictEqual(figures.completion, { position: total })
        assert.deepStrictEqual(readDestination(dir), exact(total))
        // the kills landed where they were aimed
        // the kills that landed at their planned point (a start whose work ran out first was killed where it held)
        const aimed = CrashProof.aimedKills(figures.history).filter((s) => s.plan?.hold === true)
        for (const start of aimed) {
          const plan = start.plan
          if (plan?.step === "saved") {
            assert.strictEqual(start.steps.saved, plan.nth, "killed at the planned save")
            assert.strictEqual(
              start.steps.committed ?? 0,
              plan.nth - 1 + (start.steps.restored ?? 0),
              "before its commit"
            )
          }
          if (plan?.step === "commit-partial") {
            assert.strictEqual(start.steps["commit-partial"], plan.nth)
            assert.strictEqual(
              (start.steps.committing ?? 0) - (start.steps.committed ?? 0),
              1,
              "inside a commit that never finished"
            )
          }
        }
        assert.isAtLeast(figures.killsByPoint["after saved (hold)"] ?? 0, 1)
        assert.isAtLeast(figures.killsByPoint["after commit-partial (hold)"] ?? 0, 1)
        // every restart restored a checkpoint (or found none yet) and re-ran its commits
        assert.isAtLeast(figures.steps.restored ?? 0, figures.restarts - (figures.killsByPoint["at time"] ?? 0) - 1)
        yield* Effect.log(
          `crash proof (toy): N=${total} kills=${figures.kills} restarts=${figures.restarts} ` +
            `duration=${figures.durationMillis}ms by point=${JSON.stringify(figures.killsByPoint)}`
        )
      }),
    120_000
  )

  it.live(
    "more kills than the work has room for: each is delivered, the late ones where the child held",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        // 6 batches, 2 checkpoints: most planned points are never reached before the source drains
        const total = 3_000
        const figures = yield* CrashProof.run({
          script: toy,
          env: { TOY_DIR: dir, TOY_TOTAL: String(total), TOY_CHUNK: "500", TOY_EVERY: "3" },
          seed: 20261201,
          kills: 8,
          points,
          timeout: "60 seconds"
        })
        assert.strictEqual(figures.kills, 8)
        assert.strictEqual(figures.restarts, 8)
        const atEnd = figures.history.filter((s) => s.killedAt === CrashProof.endOfInputLabel)
        const afterLast = figures.history.filter((s) => s.killedAt === CrashProof.afterLastCheckpointLabel)
        assert.isAtLeast(atEnd.length + afterLast.length, 1, "some kills had no work left to land in")
        // a start killed where it held had reached that hold: its source drained, or its work was done
        assert.isTrue(atEnd.every((s) => s.plan?.fallback === "input" && s.steps.drained === 1))
        assert.isTrue(afterLast.every((s) => s.plan?.fallback === "done" && s.steps.finished === 1))
        // the last start had no kill left: its source ended and it completed
        const last = figures.history.at(-1)
        assert.strictEqual(last?.plan, undefined)
        assert.strictEqual(last?.steps.drained, undefined)
        assert.strictEqual(last?.steps.done, 1)
        assert.deepStrictEqual(figures.completion, { position: total })
        assert.deepStrictEqual(readDestination(dir), exact(total))
        yield* Effect.log(`crash proof (toy, little work): by point=${JSON.stringify(figures.killsByPoint)}`)
      }),
    90_000
  )

  it.live(
    "a zombie and its replacement on one writer: one is fenced, the destination is still exact",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const total = 20_000
        const outcomes = yield* CrashProof.runConcurrently({
          script: toy,
          env: { TOY_DIR: dir, TOY_TOTAL: String(total), TOY_CHUNK: "250", TOY_EVERY: "2", TOY_BATCH_DELAY_MS: "50" },
          processes: 2,
          startAfter: { step: "saved", nth: 2 },
          timeout: "60 seconds"
        })
        const outcome = JSON.stringify(outcomes.map(({ stderr: _, ...o }) => o))
        assert.strictEqual(outcomes.filter((o) => o.fenced).length, 1, outcome)
        assert.strictEqual(outcomes.filter((o) => o.completed).length, 1, outcome)
        assert.strictEqual(outcomes[1]?.steps.restored, 1, "the replacement restored the zombie's checkpoint")
        assert.deepStrictEqual(readDestination(dir), exact(total))
      }),
    90_000
  )

  it.live("the proof is bounded in time: a child that never completes fails it with Timeout", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const script = path.join(dir, "forever.mjs")
      fs.writeFileSync(script, "process.stdout.write('STEP started null\\n'); setInterval(() => {}, 1000)\n")
      const started = performance.now()
      const error = yield* Effect.flip(CrashProof.run({
        script,
        seed: 1,
        kills: 1,
        points: [{ _tag: "AfterStep", step: "started", nth: [1, 1] }],
        timeout: "2 seconds"
      }))
      assert.strictEqual(error.reason, "Timeout")
      assert.strictEqual(error.history.filter((s) => s.killed).length, 1, "the planned kill was delivered first")
      assert.isBelow(performance.now() - started, 8_000)
    }))

  it.live("a child that completes with a kill still planned (it does not hold) fails the proof", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const script = path.join(dir, "eager.mjs")
      fs.writeFileSync(script, "process.stdout.write('STEP done null\\n')\n")
      const error = yield* Effect.flip(CrashProof.run({
        script,
        seed: 1,
        kills: 1,
        points: [{ _tag: "AfterStep", step: "never", nth: [1, 1] }],
        timeout: "20 seconds"
      }))
      assert.strictEqual(error.reason, "KillNotDelivered")
      assert.strictEqual(error.history.length, 1)
    }))

  it.live("a child that fails on its own fails the proof with its stderr", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const script = path.join(dir, "boom.mjs")
      fs.writeFileSync(script, "console.error('boom: lost batch 7'); process.exit(2)\n")
      const error = yield* Effect.flip(CrashProof.run({ script, seed: 1, kills: 0, points, timeout: "20 seconds" }))
      assert.strictEqual(error.reason, "ChildFailed")
      assert.include(error.stderr, "boom: lost batch 7")
      assert.strictEqual(error.history[0]?.exitCode, 2)
    }))
})
