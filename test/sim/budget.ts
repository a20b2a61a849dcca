/** Runs one method's CI budget of seeds in a vitest test; fails listing the seeds that broke an invariant. */
import { assert, it } from "@effect/vitest"
import { methods } from "./methods/index.ts"
import { runWith } from "./run.ts"
import { budget } from "./seeds.ts"

export const seedsHold = (method: string): void => {
  const run = methods[method]
  const share = budget[method]
  if (run === undefined || share === undefined) throw new Error(`no simulated method ${method}`)
  it(`${share.seeds} seeds keep every invariant`, async () => {
    const failures: Array<string> = []
    for (let seed = share.from; seed < share.from + share.seeds; seed++) {
      // oxlint-disable-next-line no-await-in-loop -- one run at a time: runs are CPU-bound
      const r = await runWith(method, run, seed, { swarm: seed % 2 === 1 })
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
