import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { methods } from "./methods/index.ts"
import { runWith } from "./run.ts"
import { underLoad } from "./wallClock.ts"

const fingerprint = async (method: string, seed: number): Promise<string> => {
  const run = methods[method]
  if (run === undefined) throw new Error(method)
  const lines: Array<string> = []
  const report = await runWith(method, run, seed, { swarm: seed % 2 === 1, trace: (line) => lines.push(line) })
  return createHash("sha256").update(lines.join("\n")).update(JSON.stringify(report)).digest("hex")
}

const names = Object.keys(methods)
/** Hours of virtual time a seed: one. */
const seedsOf = (method: string): ReadonlyArray<number> => (method === "bigquery.destinations" ? [2] : [11, 12])

// one test at a time, so that "alone" is alone in this process
describe("simulation: one seed replays one run", { concurrent: false }, () => {
  for (const [i, method] of names.entries()) {
    const other = names[(i + 1) % names.length] ?? method
    it(
      `${method}: a seed gives one trace alone, twice interleaved, and beside ${other} on a loaded machine`,
      async () => {
        for (const seed of seedsOf(method)) {
          // oxlint-disable-next-line no-await-in-loop -- the first run is the one alone
          const alone = await fingerprint(method, seed)
          // oxlint-disable-next-line no-await-in-loop
          const twice = await Promise.all([fingerprint(method, seed), fingerprint(method, seed)])
          // real time jumping at every reading, and another method's run interleaved step by step
          // oxlint-disable-next-line no-await-in-loop
          const [loaded] = await underLoad(() => Promise.all([fingerprint(method, seed), fingerprint(other, seed + 1)]))
          assert.deepStrictEqual([...twice, loaded], [alone, alone, alone], `seed ${seed}`)
        }
        assert.notStrictEqual(await fingerprint(method, 11), await fingerprint(method, 13))
      },
      120_000
    )
  }
})
