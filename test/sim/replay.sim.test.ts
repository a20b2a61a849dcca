import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { methods } from "./methods/index.ts"
import { runWith } from "./run.ts"

const fingerprint = async (method: string, seed: number, swarm: boolean): Promise<string> => {
  const run = methods[method]
  if (run === undefined) throw new Error(method)
  const lines: Array<string> = []
  const report = await runWith(method, run, seed, { swarm, trace: (line) => lines.push(line) })
  return createHash("sha256").update(lines.join("\n")).update(JSON.stringify(report)).digest("hex")
}

describe("simulation: one seed replays one run", () => {
  for (const method of Object.keys(methods).filter((m) => m !== "bigquery.destinations")) {
    it(`${method}: the same seed gives the same trace, another seed another`, async () => {
      const runs = [11, 12].map((seed) =>
        Promise.all([fingerprint(method, seed, seed % 2 === 1), fingerprint(method, seed, seed % 2 === 1)])
      )
      for (const [a, b] of await Promise.all(runs)) assert.strictEqual(a, b)
      assert.notStrictEqual(await fingerprint(method, 11, true), await fingerprint(method, 13, true))
    })
  }
})
