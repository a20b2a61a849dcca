/**
 * `npm run sim`: runs the simulator over many seeds, or one seed with its trace.
 *
 *   npm run sim                                  1,000 seeds per method, half in swarm mode
 *   npm run sim -- --seeds 1000000               a million seeds per method, on every core
 *   npm run sim -- --method bigquery.exactlyOnce --seeds 5000 --from 20000
 *   npm run sim -- --method bigtable.exactlyOnce --seed 4711 [--swarm]
 *   npm run sim -- --budget --first                the CI budget, each method up to its first failure
 *
 * Options: `--method m` (repeatable; default all), `--seeds N` per method, `--from S` (first seed),
 * `--swarm` / `--no-swarm` (default: odd seeds in swarm mode), `--seed N` (one run, its trace
 * printed), `--workers K` (default: the machine's cores), `--budget` (each method's CI budget of
 * `seeds.ts` in place of `--seeds`/`--from`), `--first` (a method stops at its first failing seed:
 * how many seeds a planted fault takes to be found), `--no-widen` (none of the inputs drawn since
 * issue 36: the runs of the regression seeds found before them), `--record FILE` (the violations of
 * every failed seed, written to FILE) and `--against FILE` (a seed fails only with a kind of
 * violation FILE's run of it had not: a planted fault's seeds to detection on a tree whose own seeds
 * fail). Exits 1 when a seed breaks an invariant,
 * after printing the command that replays it.
 */
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import { methods } from "./methods/index.ts"
import { runSeed, runWith, type SeedReport } from "./run.ts"
import { budget } from "./seeds.ts"

interface Args {
  readonly methods: ReadonlyArray<string>
  readonly seeds: number
  readonly from: number
  readonly swarm: boolean | undefined
  readonly seed: number | undefined
  readonly workers: number
  readonly worker: { readonly index: number; readonly of: number } | undefined
  readonly budget: boolean
  readonly first: boolean
  readonly widen: boolean
  /** `--record FILE`: the violations of every failed seed are written to FILE. */
  readonly record: string | undefined
  /** `--against FILE`: a seed fails only where its violations differ from FILE's (a planted fault's own). */
  readonly against: Readonly<Record<string, string>> | undefined
}

const number = (flag: string, value: string | undefined): number => {
  const n = Number(value)
  if (value === undefined || !Number.isSafeInteger(n) || n < 0) {
    throw new Error(`${flag} takes a whole number, got ${value}`)
  }
  return n
}
const parse = (argv: ReadonlyArray<string>): Args => {
  const chosen: Array<string> = []
  let seeds = 1000
  let from = 1
  let swarm: boolean | undefined
  let seed: number | undefined
  let workers = os.availableParallelism()
  let worker: Args["worker"]
  let budgeted = false
  let first = false
  let widen = true
  let record: string | undefined
  let against: Args["against"]
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]
    const value = argv[i + 1]
    switch (flag) {
      case "--method":
        if (value === undefined || !(value in methods)) {
          throw new Error(`--method takes one of ${Object.keys(methods).join(", ")}; got ${value}`)
        }
        chosen.push(value)
        i++
        break
      case "--seeds":
        seeds = number(flag, value)
        i++
        break
      case "--from":
        from = number(flag, value)
        i++
        break
      case "--seed":
        seed = number(flag, value)
        i++
        break
      case "--workers":
        workers = Math.max(1, number(flag, value))
        i++
        break
      case "--worker": {
        const [index, of] = (value ?? "").split("/").map(Number)
        worker = { index: index ?? 0, of: of ?? 1 }
        i++
        break
      }
      case "--swarm":
        swarm = true
        break
      case "--budget":
        budgeted = true
        break
      case "--first":
        first = true
        break
      case "--no-widen":
        widen = false
        break
      case "--record":
        record = value
        i++
        break
      case "--against":
        against = JSON.parse(fs.readFileSync(value ?? "", "utf8")) as Record<string, string>
        i++
        break
      case "--no-swarm":
        swarm = false
        break
      default:
        throw new Error(`unknown option ${flag} (see test/sim/main.ts)`)
    }
  }
  return {
    methods: chosen.length > 0 ? chosen : Object.keys(methods),
    seeds,
    from,
    swarm,
    seed,
    workers,
    worker,
    budget: budgeted,
    first,
    widen,
    record,
    against
  }
}

/** A violation's kind: what comes before its first colon (`routing`, `leak`, `hang`, `defect in p2`, ...). */
const kindOf = (violation: string): string => violation.slice(0, Math.max(0, violation.indexOf(":"))) || violation

/** Whether `report` has a kind of violation that `recorded` (a recorded run's violations) has not. */
const newKind = (recorded: string | undefined, report: SeedReport): boolean => {
  const known = new Set((recorded ?? "").split("\n").filter((v) => v !== "").map(kindOf))
  return report.violations.some((v) => !known.has(kindOf(v)))
}

/** Swarm mode for a seed when not forced: odd seeds. */
const swarmOf = (args: Args, seed: number): boolean => args.swarm ?? seed % 2 === 1

const replay = (r: SeedReport): string =>
  `npm run sim -- --method ${r.method} --seed ${r.seed}${r.swarm ? " --swarm" : " --no-swarm"}`

interface Tally {
  seeds: number
  failed: number
  millis: number
  virtualMillis: number
  restarts: number
  readonly errors: Record<string, number>
  /** The violations of each failed seed (`method seed`), with `--record`. */
  readonly record: Record<string, string>
  /** Failed seeds by the kinds of their violations (`routing`, `leak`, `hang`, ...). */
  readonly kinds: Record<string, number>
  readonly failures: Array<
    { readonly seed: number; readonly replay: string; readonly violations: ReadonlyArray<string> }
  >
}

const emptyTally = (): Tally => ({
  seeds: 0,
  failed: 0,
  millis: 0,
  virtualMillis: 0,
  restarts: 0,
  errors: {},
  kinds: {},
  record: {},
  failures: []
})

/** Runs this worker's share of every method's seeds, reporting each method's tally as it is done. */
const runShare = async (args: Args, done: (method: string, tally: Tally) => void): Promise<void> => {
  const share = args.worker ?? { index: 0, of: 1 }
  for (const method of args.methods) {
    const run = methods[method]
    if (run === undefined) continue
    const tally = emptyTally()
    const range = args.budget ? budget[method] ?? { from: args.from, seeds: args.seeds } : args
    for (let seed = range.from + share.index; seed < range.from + range.seeds; seed += share.of) {
      const started = performance.now()
      // oxlint-disable-next-line no-await-in-loop -- one run at a time per worker: runs are CPU-bound
      const report = await runSeed(method, run, seed, { swarm: swarmOf(args, seed), widen: args.widen })
      tally.millis += performance.now() - started
      tally.seeds++
      tally.virtualMillis += report.virtualMillis
      tally.restarts += report.restarts
      for (const e of report.errors) tally.errors[e] = (tally.errors[e] ?? 0) + 1
      const violations = report.violations.join("\n")
      if (args.record !== undefined && !report.ok) tally.record[`${method} ${seed}`] = violations
      // against a recorded run, a seed fails only with a kind of violation the recorded run of it had not
      // (a planted fault moves a run elsewhere: how often a recorded defect shows again is no finding)
      const failed = args.against === undefined ? !report.ok : newKind(args.against[`${method} ${seed}`], report)
      if (failed) {
        tally.failed++
        // the first few of each kind: a frequent one does not hide the others
        const kinds = [...new Set(report.violations.map(kindOf))]
        const rare = kinds.some((k) => (tally.kinds[k] ?? 0) < 3)
        for (const kind of kinds) tally.kinds[kind] = (tally.kinds[kind] ?? 0) + 1
        if (rare || tally.failures.length < 10) {
          tally.failures.push({ seed, replay: replay(report), violations: report.violations })
        }
        if (args.first) break
      }
    }
    done(method, tally)
  }
}

const merge = (into: Tally, t: Tally): void => {
  into.seeds += t.seeds
  into.failed += t.failed
  into.millis += t.millis
  into.virtualMillis += t.virtualMillis
  into.restarts += t.restarts
  for (const [e, n] of Object.entries(t.errors)) into.errors[e] = (into.errors[e] ?? 0) + n
  for (const [k, n] of Object.entries(t.kinds)) into.kinds[k] = (into.kinds[k] ?? 0) + n
  into.failures.push(...t.failures)
  Object.assign(into.record, t.record)
}

/** Prints one method's line (and its failures); false when a seed failed. */
const report = (method: string, t: Tally): boolean => {
  const errors = Object.entries(t.errors).toSorted((a, b) => b[1] - a[1]).map(([e, n]) => `${e} ${n}`).join(", ")
  console.log(
    `${method.padEnd(22)} ${String(t.seeds).padStart(8)} seeds  ${String(t.failed).padStart(4)} failed  ` +
      `${(t.millis / Math.max(1, t.seeds)).toFixed(1)} ms/seed  ${
        (t.virtualMillis / 3_600_000).toFixed(1)
      } virtual h  ` +
      `${t.restarts} restarts${errors === "" ? "" : ` (writer errors: ${errors})`}`
  )
  const kinds = Object.entries(t.kinds).toSorted((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(", ")
  if (kinds !== "") console.log(`  failed seeds by kind of violation: ${kinds}`)
  for (const f of t.failures.toSorted((a, b) => a.seed - b.seed)) {
    console.log(`  FAILED: ${f.replay}\n    ${f.violations.join("\n    ")}`)
  }
  return t.failed === 0
}

const main = async (): Promise<void> => {
  const args = parse(process.argv.slice(2))
  if (args.seed !== undefined) {
    for (const method of args.methods) {
      const run = methods[method]
      if (run === undefined) continue
      const swarm = swarmOf(args, args.seed)
      console.log(`# ${method}, seed ${args.seed}${swarm ? ", swarm" : ""}`)
      // oxlint-disable-next-line no-await-in-loop -- one traced run after the other
      const r = await runWith(method, run, args.seed, {
        swarm,
        widen: args.widen,
        trace: (line) => console.log(line)
      })
      console.log(
        r.ok
          ? `# ok: ${r.virtualMillis.toFixed(0)} virtual ms, ${r.steps} steps, ${r.restarts} restarts`
          : `# FAILED:\n#   ${r.violations.join("\n#   ")}`
      )
      if (!r.ok) process.exitCode = 1
    }
    return
  }
  if (args.worker !== undefined) {
    await runShare(args, (method, tally) => process.send?.({ method, tally }))
    process.disconnect?.()
    return
  }
  const started = performance.now()
  const tallies = new Map<string, { readonly tally: Tally; reported: number }>()
  let ok = true
  const children = Array.from({ length: args.workers }, (_, index) =>
    new Promise<void>((resolve, reject) => {
      const child = fork(process.argv[1] ?? "test/sim/main.ts", [
        ...process.argv.slice(2).filter((a, i, all) => a !== "--workers" && all[i - 1] !== "--workers"),
        "--worker",
        `${index}/${args.workers}`
      ])
      child.on("message", (m) => {
        const { method, tally } = m as { readonly method: string; readonly tally: Tally }
        let entry = tallies.get(method)
        if (entry === undefined) tallies.set(method, entry = { tally: emptyTally(), reported: 0 })
        merge(entry.tally, tally)
        // a method's line once every worker has done its share
        if (++entry.reported === args.workers) ok = report(method, entry.tally) && ok
      })
      child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`worker ${index} exited ${code}`))))
    }))
  await Promise.all(children)
  if (args.record !== undefined) {
    const all = Object.assign({}, ...[...tallies.values()].map((e) => e.tally.record)) as Record<string, string>
    fs.writeFileSync(args.record, JSON.stringify(all, null, 1))
  }
  console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`)
  if (!ok) process.exitCode = 1
}

await main()
