/**
 * Times each method of a benchmark in its own fresh Node process, one pass per process, the methods
 * alternating (ABBA order across passes, so a drifting machine charges no method more than another).
 *
 * Why not one process: methods timed in turn in one process share V8's heap heuristics. A baseline
 * that allocates a fresh buffer per request drives many old-generation collections, after which V8
 * keeps the old-generation limit close to the live heap; the next method then pays for mark-compacts
 * it would never trigger alone (`--trace-gc`: the BigQuery sink runs only scavenges in a process of
 * its own, and a mark-compact every 100-200 ms after the raw loop, with `collect()` between them).
 * A user's process runs the sink, not the baseline, so each is timed as it runs alone.
 *
 * The child runs the benchmark script with `--isolated-child <method>` and the forwarded arguments;
 * it runs its warm-up passes and one timed pass, and prints one JSON line ({@link Sample}) last.
 * `BENCH_CHILD_NODE_FLAGS` (space-separated) adds Node or V8 flags to every child, for experiments.
 */
import { spawnSync } from "node:child_process"

/** The flag that makes a benchmark script a child timing one method. */
export const childFlag = "--isolated-child"

/** One timed pass of one method, as a child prints it. */
export interface Sample {
  readonly rowsPerSecond: number
  readonly cpuNsPerRow: number
  /** Of `cpuNsPerRow`, what threads other than the main one spent (bench/timing.ts `helperCpuSeconds`). */
  readonly helperNsPerRow?: number
  /** Full collections during the timed pass (bench/timing.ts `majorCollections`). */
  readonly majorCollections?: number
  /** Method-specific figures (e.g. checkpoint latencies). */
  readonly extra?: Record<string, ReadonlyArray<number>>
}

/** The method a child process times, or `undefined` in the parent. */
export const childMethod = (): string | undefined => {
  const at = process.argv.indexOf(childFlag)
  return at >= 0 ? process.argv[at + 1] : undefined
}

/** Prints a child's result: the last line of its stdout. */
export const report = (sample: Sample): void => console.log(JSON.stringify(sample))

/**
 * `passes` timed passes of every method, each in a fresh process running `script` with `args`.
 * Throws when a child fails: a missing sample must not become a quiet median of fewer passes.
 */
export const run = (
  script: string,
  methods: ReadonlyArray<string>,
  passes: number,
  args: ReadonlyArray<string>
): Record<string, Array<Sample>> => {
  const samples: Record<string, Array<Sample>> = {}
  for (let pass = 0; pass < passes; pass++) {
    const order = pass % 2 === 0 ? methods : methods.toReversed()
    for (const method of order) (samples[method] ??= []).push(once(script, method, args))
  }
  return samples
}

/** One timed pass of `method` in a fresh process running `script` with `args`. */
export const once = (script: string, method: string, args: ReadonlyArray<string>): Sample => {
  // V8 flags for the children alone (`BENCH_CHILD_NODE_FLAGS="--single-threaded-gc"`): Node refuses many
  // of them in NODE_OPTIONS, and the parent's own flags are not theirs
  const extra = (process.env["BENCH_CHILD_NODE_FLAGS"] ?? "").split(" ").filter((f) => f !== "")
  const proc = spawnSync(process.execPath, ["--expose-gc", ...extra, script, ...args, childFlag, method], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024
  })
  if (proc.status !== 0) throw new Error(`${method}: child exited with ${proc.status ?? proc.signal}`)
  return JSON.parse(proc.stdout.trim().split("\n").at(-1) ?? "") as Sample
}
