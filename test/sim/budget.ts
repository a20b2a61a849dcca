/** Runs one method's CI budget of seeds in a vitest test; fails listing the seeds that broke an invariant. */
import { assert, it } from "@effect/vitest"
import { methods } from "./methods/index.ts"
import { runSeed } from "./run.ts"
import { budget } from "./seeds.ts"

/** `part` of `parts` (from 0): a slice of the method's seeds, so that vitest spreads a long budget over files. */
export const seedsHold = (method: string, part = 0, parts = 1): void => {
  const run = methods[method]
  const whole = budget[method]
  if (run === undefined || whole === undefined) throw new Error(`no simulated method ${method}`)
  const size = Math.ceil(whole.seeds / parts)
  const from = whole.from + part * size
  const to = Math.min(whole.from + whole.seeds, from + size)
  it(`seeds ${from} to ${to - 1} keep every invariant`, async () => {
    const failures: Array<string> = []
    for (let seed = from; seed < to; seed++) {
      // oxlint-disable-next-line no-await-in-loop -- one run at a time: runs are CPU-bound
      const r = await runSeed(method, run, seed, { swarm: seed % 2 === 1 })
      if (!r.ok) {
        failures.push(
          `npm run sim -- --method ${method} --seed ${seed} ${r.swarm ? "--swarm" : "--no-swarm"}: ${
            r.violations.join("; ")
          }`
        )
      }
    }
    assert.deepStrictEqual(failures, [])
  }, 170_000)
}
