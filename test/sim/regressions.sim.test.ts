import { assert, describe, it } from "@effect/vitest"
import { methods } from "./methods/index.ts"
import { runWith } from "./run.ts"
import { regressions } from "./seeds.ts"

describe("simulation: the seeds that once failed", () => {
  it("are listed for known methods", () => {
    for (const r of regressions) assert.isDefined(methods[r.method], r.method)
  })
  for (const r of regressions) {
    it(`${r.method} seed ${r.seed}${r.swarm ? " (swarm)" : ""}: ${r.found}`, async () => {
      const run = methods[r.method]
      if (run === undefined) return assert.fail(`no simulated method ${r.method}`)
      const widened = r.draws === "widened" || r.draws === "sql"
      const report = await runWith(r.method, run, r.seed, {
        swarm: r.swarm,
        handovers: r.handovers ?? widened,
        widen: widened,
        sqlStore: r.draws === "sql"
      })
      assert.deepStrictEqual(report.violations, [])
    })
  }
})
