/**
 * Two trees of this repository, one BigQuery method, timed in step: `before` and `after` each run the
 * method in a warmed-up child of their own `bench/peers.ts` (a stepped child, bench/isolated.ts, with a
 * fake of its own), and the children take turns, `--steps` timed passes each in ABBA order, for
 * `--rounds` pairs of fresh processes (who starts first alternating). On this VM the same code runs
 * 1.5-2x slower for seconds at a time, so a change of 10% is lost between two `bench:peers` runs taken
 * minutes apart; in step, both trees meet the same spells. Each tree needs `bench/peers.ts` with
 * `--stepped` (2026-12-07 on).
 *
 *   node bench/inStep.ts --before /tmp/wt-before [--after .] [--method bigquery.sink.bytes]
 *                        [--rounds 4] [--steps 6] [--warmup-seconds 10] [--rows 2000000]
 *
 * Prints each round's steps (CPU per row), then each tree's median and the median of the rounds' own
 * ratios (after's CPU over before's). Nothing is written to bench/results: it compares code, not a release.
 */
import * as path from "node:path"
import { forwardedArgs, numberArg, optionalArg, textArg } from "./args.ts"
import * as Isolated from "./isolated.ts"
import { median } from "./timing.ts"

process.env.METADATA_SERVER_DETECTION ??= "none"

const trees = {
  before: path.resolve(textArg("before")),
  after: path.resolve(optionalArg("after") ?? ".")
}
const method = optionalArg("method") ?? "bigquery.sink.bytes"
if (!method.startsWith("bigquery.")) throw new Error(`--method: a BigQuery method of bench/peers.ts, was ${method}`)
const rounds = numberArg("rounds", 4)
const steps = numberArg("steps", 6)
const childArgs = ["--warmup-seconds", optionalArg("warmup-seconds") ?? "10", ...forwardedArgs(["rows"])]

type Tree = keyof typeof trees
const samples: Record<Tree, Array<number>> = { before: [], after: [] }
const ratios: Array<number> = []

const list = (xs: ReadonlyArray<number>) => xs.map((x) => x.toFixed(0)).join(" ")

/** CPU per row of a child's answers. */
const cpu = (xs: ReadonlyArray<unknown>) => xs.map((x) => (x as Isolated.Sample).cpuNsPerRow)

const start = (tree: Tree): Isolated.Stepped =>
  Isolated.stepped(path.join(trees[tree], "bench", "peers.ts"), method, childArgs)

for (let round = 0; round < rounds; round++) {
  const first: Tree = round % 2 === 0 ? "before" : "after"
  const second: Tree = first === "before" ? "after" : "before"
  // oxlint-disable-next-line no-await-in-loop -- one pair of processes at a time on the machine
  const answers = await Isolated.alternate(() => start(first), () => start(second), steps)
  const mine = { [first]: cpu(answers.first), [second]: cpu(answers.second) } as Record<Tree, Array<number>>
  samples.before.push(...mine.before)
  samples.after.push(...mine.after)
  ratios.push(median(mine.after) / median(mine.before))
  console.log(`round ${round + 1}: before ${list(mine.before)} | after ${list(mine.after)} (ns CPU per row)`)
}

console.log(
  `${method}: before ${median(samples.before).toFixed(0)} ns, after ${median(samples.after).toFixed(0)} ns CPU a row ` +
    `(medians of ${samples.before.length} passes each); after / before, the median of the rounds' ratios: ${
      median(ratios).toFixed(3)
    }x`
)
