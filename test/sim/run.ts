/**
 * One simulated run: a method (a write method of a backend) under one seed, its invariants checked
 * after the run. `runSeed` is what the CI test, `npm run sim` and the regression seeds call.
 */
import type { WriteSummary } from "../../src/Sink.ts"
import type { World } from "./kernel.ts"
import type { LifeResult } from "./life.ts"
import type { SourcePlan } from "./source.ts"

export interface RunOptions {
  /** Receives the readable trace of the run (`--seed N`). */
  readonly trace?: ((line: string) => void) | undefined
  /** `false`: no service faults (the latency and memory runs). */
  readonly faults?: boolean
  /** `false`: no crashes, no zombie and no handover. */
  readonly life?: boolean
  /** `false`: no handover (the regression seeds keep the lives they were found with). */
  readonly handovers?: boolean
  /**
   * `false`: none of the inputs drawn since issue 36 (bad and poison records, row errors before the
   * offset check, lost tables, caller schedules, ...), which draw from an rng of their own: the
   * regression seeds found before them keep their runs.
   */
  readonly widen?: boolean
  /**
   * `false`: the checkpoint store is drawn among the memory, GCS and file stores only, as before the
   * SQL store (whose draw comes from an rng of its own): the regression seeds found before it keep
   * their stores.
   */
  readonly sqlStore?: boolean
  readonly source?: SourcePlan
  readonly maxTime?: number
  /** How long a delay spike holds an answer (past the sink's deadline, by default). */
  readonly spikeMillis?: number
  /**
   * Swarm mode: the writer's tuning (batch and request sizes, in-flight limits, `every`, deadlines,
   * retry budgets) is drawn from the seed too; otherwise the library's defaults, checkpointing every
   * 10 records.
   */
  readonly swarm?: boolean
  /** A slow source without faults: a few records seconds apart, each checked against the latency bound. */
  readonly lowRate?: boolean
}

/** An invariant: the violations it found. */
export type Check = () => ReadonlyArray<string>

export type MethodRun = (
  seed: number,
  options: RunOptions
) => Promise<{ readonly world: World; readonly result: LifeResult; readonly checks: ReadonlyArray<Check> }>

export interface SeedReport {
  readonly method: string
  readonly seed: number
  readonly swarm: boolean
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  readonly virtualMillis: number
  readonly steps: number
  readonly restarts: number
  readonly errors: ReadonlyArray<string>
}

export const runWith = async (
  method: string,
  run: MethodRun,
  seed: number,
  options: RunOptions = {}
): Promise<SeedReport> => {
  const { checks, result, world } = await run(seed, options)
  const violations = [...result.violations]
  // a run that did not finish has no final state to check
  if (violations.length === 0) { for (const check of checks) violations.push(...check()) }
  return {
    method,
    seed,
    swarm: options.swarm === true,
    ok: violations.length === 0,
    violations,
    virtualMillis: world.now,
    steps: world.steps,
    restarts: result.restarts,
    errors: result.errors
  }
}

/**
 * `runWith` for a run of many seeds (the CI budget, `npm run sim`): the seed runs with
 * `Error.stackTraceLimit` 0, which Effect reads as "no traces", so no error, `Effect.fn` call or
 * span captures a stack. Stacks decide no draw and no invariant, and they were 3-6% of a seed's
 * CPU in profiles (the library's errors and retry markers, spans, the services' statuses). A seed that fails
 * runs again with stacks, the same run, so that its violations (a defect's cause) read as
 * `--seed N` prints them.
 */
export const runSeed = async (
  method: string,
  run: MethodRun,
  seed: number,
  options: RunOptions = {}
): Promise<SeedReport> => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  let report: SeedReport
  try {
    report = await runWith(method, run, seed, options)
  } finally {
    Error.stackTraceLimit = limit
  }
  return report.ok ? report : runWith(method, run, seed, options)
}

const counts = (ids: ReadonlyArray<number>): Map<number, number> => {
  const m = new Map<number, number>()
  for (const id of ids) m.set(id, (m.get(id) ?? 0) + 1)
  return m
}

const firstFew = (items: ReadonlyArray<string>, label: string): ReadonlyArray<string> =>
  items.length === 0
    ? []
    : [`${label}: ${items.slice(0, 5).join(", ")}${items.length > 5 ? ` (${items.length} in all)` : ""}`]

/**
 * The ids of `0..total-1` never visible nor routed, and those visible more than once that
 * `doubleAllowed` does not excuse.
 */
const tally = (
  o: { readonly total: number; readonly visible: ReadonlyArray<number>; readonly routed: ReadonlyArray<number> },
  doubleAllowed: (id: number) => boolean
) => {
  const seen = counts(o.visible)
  const routed = new Set(o.routed)
  const lost: Array<string> = []
  const doubled: Array<string> = []
  for (let id = 0; id < o.total; id++) {
    const n = seen.get(id) ?? 0
    if (n === 0 && !routed.has(id)) lost.push(String(id))
    if (n > 1 && !doubleAllowed(id)) doubled.push(`${id}×${n}`)
  }
  const foreign = [...seen.keys()].filter((id) => id < 0 || id >= o.total).map(String)
  return { lost, doubled, foreign }
}

/** Every id `0..total-1` visible exactly once, or (not visible and) routed; nothing else visible. */
export const checkExactlyOnce = (o: {
  readonly total: number
  readonly visible: ReadonlyArray<number>
  readonly routed: ReadonlyArray<number>
}): Check =>
() => {
  const { doubled, foreign, lost } = tally(o, () => false)
  return [
    ...firstFew(lost, "exactly once: lost"),
    ...firstFew(doubled, "exactly once: duplicated"),
    ...firstFew(foreign, "exactly once: not from the source")
  ]
}

/**
 * Every id visible or routed; an id visible twice only when a fault left an append of it ambiguous
 * or a restart replayed the source.
 */
export const checkAtLeastOnce = (o: {
  readonly total: number
  readonly visible: ReadonlyArray<number>
  readonly routed: ReadonlyArray<number>
  readonly ambiguous: ReadonlySet<number>
  readonly restarts: number
}): Check =>
() => {
  const { doubled, foreign, lost } = tally(o, (id) => o.restarts > 0 || o.ambiguous.has(id))
  return [
    ...firstFew(lost, "at least once: lost"),
    ...firstFew(doubled, "at least once: duplicated without an ambiguous outcome"),
    ...firstFew(foreign, "at least once: not from the source")
  ]
}

/**
 * The summary of the process that finished an exactly-once run, exact: it wrote the source from
 * `from`, so each id of `from..total-1` is counted once, written (visible) or failed (routed), and
 * `bytesWritten` is the sum of the written records' serialized sizes (`sizeOf`).
 */
export const checkSummary = (o: {
  readonly total: number
  readonly visible: ReadonlyArray<number>
  readonly finished: unknown
  readonly sizeOf: (id: number) => number
}): Check =>
() => {
  const f = o.finished as { readonly from?: number; readonly summary?: WriteSummary } | undefined
  if (f?.from === undefined || f.summary === undefined) return ["summary: the finished process returned none"]
  const { from, summary } = f
  const written = new Set(o.visible.filter((id) => id >= from && id < o.total))
  let bytes = 0
  for (const id of written) bytes += o.sizeOf(id)
  const expected = { recordsWritten: written.size, recordsFailed: o.total - from - written.size, bytesWritten: bytes }
  const wrong = (Object.keys(expected) as Array<keyof typeof expected>)
    .filter((k) => summary[k] !== expected[k])
    .map((k) => `${k} ${summary[k]} where ids ${from}..${o.total - 1} make ${expected[k]}`)
  return wrong.length === 0 ? [] : [`summary: ${wrong.join("; ")}`]
}

/**
 * At a low rate no record waits longer than `bound` between leaving the source and being applied
 * by the service (the documented "sent within about one round trip, under a second").
 */
export const checkLatency = (o: {
  readonly emitted: ReadonlyMap<number, number>
  readonly applied: ReadonlyMap<number, number>
  readonly bound: number
  /** What must happen within the bound: `applied` unless said. */
  readonly what?: string
}): Check =>
() => {
  const late: Array<string> = []
  for (const [id, at] of o.emitted) {
    const landed = o.applied.get(id)
    if (landed !== undefined && landed - at > o.bound) late.push(`${id} after ${(landed - at).toFixed(0)} ms`)
  }
  return firstFew(late, `latency: ${o.what ?? "applied"} more than ${o.bound} ms after the source gave it`)
}

/** A record routed to the failure handler, or refused by the service, in a process. */
export interface ByProcess {
  readonly proc: string
  readonly id: number
}

const countBy = (items: ReadonlyArray<ByProcess>): Map<string, number> => {
  const m = new Map<string, number>()
  for (const { id, proc } of items) m.set(`${proc}|${id}`, (m.get(`${proc}|${id}`) ?? 0) + 1)
  return m
}

/**
 * Routing by identity (README's "one bad record ... routed to the FailureHandler while the rest of
 * the batch proceeds"): a process routes a record only as many times as the service refused it to
 * that process, or once when the sink refuses it itself (a poison record: its serializer, resolver
 * or `fingerprint` threw; routed before admission); and the process that finished routed every
 * record of its range that is refused on every attempt (a bad or poison record). A sink that routes
 * too much (a survivor of a row-error split, a batch fanned a rejection) or too little fails it.
 */
export const checkRouting = (o: {
  readonly routed: ReadonlyArray<ByProcess>
  readonly refused: ReadonlyArray<ByProcess>
  /** Refused by the sink itself in that process (poison; user code that failed there). */
  readonly poison: (id: number, proc: string) => boolean
  /** Refused on every attempt, by the service or the sink. */
  readonly alwaysRefused: (id: number) => boolean
  readonly total: number
  /** The process that finished and the position it started at. */
  readonly finished: { readonly proc: string; readonly from: number } | undefined
}): Check =>
() => {
  const refusals = countBy(o.refused)
  const over: Array<string> = []
  for (const [key, n] of countBy(o.routed)) {
    const [proc = "", id = ""] = key.split("|")
    const allowed = (refusals.get(key) ?? 0) + (o.poison(Number(id), proc) ? 1 : 0)
    if (n > allowed) over.push(`${proc} routed ${id}${n > 1 ? ` ×${n}` : ""}, refused ×${allowed}`)
  }
  const missed: Array<string> = []
  const f = o.finished
  if (f !== undefined) {
    const routed = new Set(o.routed.filter((r) => r.proc === f.proc).map((r) => r.id))
    for (let id = f.from; id < o.total; id++) if (o.alwaysRefused(id) && !routed.has(id)) missed.push(String(id))
  }
  return [
    ...firstFew(over, "routing: routed what was not refused"),
    ...firstFew(missed, `routing: ${f?.proc ?? ""} finished without routing records refused on every attempt`)
  ]
}

/** Checks `holds`, reporting `message` when it does not. */
export const checkThat = (holds: () => boolean, message: () => string): Check => () => (holds() ? [] : [message()])

/** The first virtual time each id was applied, fed by a service's `onApplied` hook. */
export const firstApplied = (): {
  readonly times: Map<number, number>
  readonly record: (id: number, at: number) => void
} => {
  const times = new Map<number, number>()
  return { times, record: (id, at) => void (times.has(id) || times.set(id, at)) }
}
