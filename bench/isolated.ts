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
 *
 * A stepped child ({@link stepped}, `--stepped`) stays up after its warm-up and times one pass per line
 * the parent sends it, so the parent can alternate its passes with a Go peer's (bench/peers.ts `--steps`).
 * `BENCH_TRACE=1`: a stepped child marks each step's start and end (ms since it started, with the share
 * of the step its event loop was busy: below 1, the main thread waited on the server), and the parent
 * prints a stepped child's other output lines on stderr, after its name: with
 * `BENCH_CHILD_NODE_FLAGS=--trace-gc`, which collections fell in which step.
 */
import { spawn, spawnSync } from "node:child_process"
import * as readline from "node:readline"
import { envFlags } from "./args.ts"

/** `BENCH_TRACE`: steps marked, and stepped children's other output passed on (see above). */
const tracing = process.env["BENCH_TRACE"] === "1"

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

// V8 flags for the children alone (`BENCH_CHILD_NODE_FLAGS="--single-threaded-gc"`): Node refuses many
// of them in NODE_OPTIONS, and the parent's own flags are not theirs
const childNodeArgs = (script: string, method: string, args: ReadonlyArray<string>): Array<string> => [
  "--expose-gc",
  ...envFlags("BENCH_CHILD_NODE_FLAGS"),
  script,
  ...args,
  childFlag,
  method
]

/** One timed pass of `method` in a fresh process running `script` with `args`. */
export const once = (script: string, method: string, args: ReadonlyArray<string>): Sample => {
  const proc = spawnSync(process.execPath, childNodeArgs(script, method, args), {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024
  })
  if (proc.status !== 0) throw new Error(`${method}: child exited with ${proc.status ?? proc.signal}`)
  return JSON.parse(proc.stdout.trim().split("\n").at(-1) ?? "") as Sample
}

/** The flag that makes a child serve stepped passes ({@link serveSteps}) after its warm-up. */
export const steppedFlag = "--stepped"

/**
 * A warmed-up child that times one pass per line it is sent: ours ({@link stepped}) or a Go peer's
 * (`measure.Steps`). A parent alternates two of them, so a spell of the machine's slowness (this VM
 * runs the same loop 1.5x slower for a few seconds at a time) falls on both sides of a comparison,
 * not on whichever process happened to run then.
 */
export interface Stepped {
  /** The child finished its warm-up. */
  readonly ready: Promise<void>
  /** One timed pass, given `arg` (a table id, or nothing): the JSON line it printed. */
  readonly pass: (arg?: string) => Promise<unknown>
  /** Closes its stdin and waits for it to exit. */
  readonly close: () => Promise<void>
}

/** A {@link Stepped} child running `command` with `args`: its JSON lines answer the parent in order. */
export const steppedCommand = (name: string, command: string, args: ReadonlyArray<string>): Stepped => {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })
  const waiting: Array<{ resolve: (line: unknown) => void; reject: (error: Error) => void }> = []
  let failure: Error | undefined
  const exited = new Promise<void>((resolve) =>
    child.on("close", (code, signal) => {
      failure ??= new Error(`${name}: child exited with ${code ?? signal}`)
      for (const w of waiting.splice(0)) w.reject(failure)
      resolve()
    })
  )
  child.on("error", (error) => {
    failure = error
    for (const w of waiting.splice(0)) w.reject(error)
  })
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    if (line.startsWith("{")) waiting.shift()?.resolve(JSON.parse(line))
    else if (tracing) console.error(`${name}| ${line}`)
  })
  const next = () =>
    new Promise<unknown>((resolve, reject) => {
      if (failure !== undefined) reject(failure)
      else waiting.push({ resolve, reject })
    })
  return {
    ready: next().then(() => undefined),
    pass: (arg = "") => {
      const answer = next()
      child.stdin.write(`${arg}\n`)
      return answer
    },
    close: () => {
      child.stdin.end()
      return exited
    }
  }
}

/** Our `method` as a {@link Stepped} child of `script`. */
export const stepped = (script: string, method: string, args: ReadonlyArray<string>): Stepped =>
  steppedCommand(method, process.execPath, [...childNodeArgs(script, method, args), steppedFlag])

/** Whether this child was started by {@link stepped}. */
export const isStepped = (): boolean => process.argv.includes(steppedFlag)

/**
 * A stepped child's side, after its warm-up: says it is ready, then runs `pass` for each line on stdin
 * (its argument) and reports it, until stdin closes.
 */
export const serveSteps = async (pass: (arg: string) => Promise<Sample>): Promise<void> => {
  console.log(JSON.stringify({ ready: true }))
  // oxlint-disable-next-line no-await-in-loop -- one pass at a time, as the parent asks
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (tracing) console.log(`STEP start ${performance.now().toFixed(0)}`)
    const loop = performance.eventLoopUtilization()
    const sample = await pass(line)
    if (tracing) {
      const busy = performance.eventLoopUtilization(loop).utilization
      console.log(
        `STEP end ${performance.now().toFixed(0)} ${sample.cpuNsPerRow.toFixed(0)} loop busy ${busy.toFixed(2)}`
      )
    }
    report(sample)
  }
}

/**
 * Starts `first`, then `second` (neither warms up beside the other), runs an untimed pass of each (the
 * one started first has sat idle through the other's warm-up), then `steps` timed passes of each in
 * ABBA order, `second` leading: what each answered, in order. Closes both, whatever happens.
 */
export const alternate = async (
  first: () => Stepped,
  second: () => Stepped,
  steps: number
): Promise<{ readonly first: Array<unknown>; readonly second: Array<unknown> }> => {
  const started: Array<Stepped> = []
  const start = async (make: () => Stepped) => {
    const child = make()
    started.push(child)
    await child.ready
    return child
  }
  try {
    const a = await start(first)
    const b = await start(second)
    await a.pass()
    await b.pass()
    const answers = { first: [] as Array<unknown>, second: [] as Array<unknown> }
    for (let step = 0; step < steps; step++) {
      const order = step % 4 === 0 || step % 4 === 3 ? [b, a] : [a, b]
      for (const child of order) {
        // oxlint-disable-next-line no-await-in-loop -- one pass at a time on the machine
        const answer = await child.pass()
        ;(child === a ? answers.first : answers.second).push(answer)
      }
    }
    return answers
  } finally {
    await Promise.all(started.map((child) => child.close()))
  }
}
