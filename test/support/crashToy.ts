/**
 * The parent's side of the toy child (`crashToyChild.ts`): its script path, its kill points, and the
 * check of its file-backed destination.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { KillPoint } from "./crashProof.ts"

export const toyScript = fileURLToPath(new URL("./crashToyChild.ts", import.meta.url))

/** Where the toy is killed: between a save and its commit, inside a commit, while writing, anywhere. */
export const toyPoints: ReadonlyArray<KillPoint> = [
  { _tag: "AfterStep", step: "saved", nth: [1, 2], hold: true },
  { _tag: "AfterStep", step: "commit-partial", nth: [1, 2], hold: true },
  { _tag: "AfterStep", step: "staged", nth: [1, 6], delayMillis: [0, 5] },
  { _tag: "AtTime", millis: [50, 700] }
]

export interface Tally {
  readonly count: number
  readonly distinct: number
  readonly sum: number
}

/** COUNT, COUNT DISTINCT and SUM of the ids the toy destination made visible (`committed/` only). */
export const readToyDestination = (dir: string): Tally => {
  const ids: Array<number> = []
  const committed = path.join(dir, "committed")
  for (const name of fs.readdirSync(committed)) {
    const batch: unknown = JSON.parse(fs.readFileSync(path.join(committed, name), "utf8"))
    if (Array.isArray(batch)) { for (const id of batch) if (typeof id === "number") ids.push(id) }
  }
  return { count: ids.length, distinct: new Set(ids).size, sum: ids.reduce((a, b) => a + b, 0) }
}

/** What ids 0..n-1, each once, tally to. */
export const exact = (n: number): Tally => ({ count: n, distinct: n, sum: (n * (n - 1)) / 2 })
