/**
 * Timing one pass of a benchmark method in the current process, as every benchmark script does it:
 * on a collected heap (a method does not pay for the garbage of the one before it), wall time and
 * this process's CPU time (user + system, all threads).
 */
import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { childMethod } from "./isolated.ts"

v8.setFlagsFromString("--expose-gc")
/** A full collection. */
export const collect = vm.runInNewContext("gc") as () => void

/** One timed pass. */
export interface Timed {
  readonly seconds: number
  readonly cpuSeconds: number
  /**
   * Of `cpuSeconds`, what threads other than the main one spent: V8's compiler and collector helpers
   * (and libuv's pool). A pass that still compiles (the JIT's ramp) shows here; a steady one does not.
   * Absent where Node cannot time its main thread alone.
   */
  readonly helperCpuSeconds?: number
  /** Full (mark-compact) collections that ended during the pass: each marks the whole live heap. */
  readonly majorCollections: number
}

/** Counts the full collections that end from now until `stop` (Node's `gc` performance entries). */
const countMajorCollections = (): { readonly stop: () => number } => {
  let major = 0
  const count = (entries: ReadonlyArray<PerformanceEntry>) => {
    for (const entry of entries) {
      if (
        (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ===
          constants.NODE_PERFORMANCE_GC_MAJOR
      ) major++
    }
  }
  const observer = new PerformanceObserver((list) => count(list.getEntries()))
  observer.observe({ entryTypes: ["gc"] })
  return {
    stop: () => {
      count(observer.takeRecords())
      observer.disconnect()
      return major
    }
  }
}

/** The main thread's CPU time in microseconds (`process.threadCpuUsage`, where Node has it). */
const mainThreadMicros = (): number | undefined => {
  const usage = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.()
  return usage === undefined ? undefined : usage.user + usage.system
}

/**
 * Runs `method` once and times it, on a collected heap unless `collect` is false: by default only in a
 * process shared with other methods, never in an isolated child (bench/isolated.ts). A forced collection
 * (`gc()`) is not one V8 runs on its own: it also drops optimized code that holds objects it frees
 * ("weak objects" deoptimizations), so the pass after it re-optimizes. A fresh process timed after its
 * own warm-up has no earlier method's garbage to free, and should not pay for that (issue 38: the
 * Bigtable sink cost 6.2 µs a record in passes after a `gc()`, 2.9 without; ADR 0049).
 */
export const timePass = async (
  method: () => Promise<unknown>,
  { collect: collecting = childMethod() === undefined }: { readonly collect?: boolean } = {}
): Promise<Timed> => {
  if (collecting) collect()
  const collections = countMajorCollections()
  const cpu = process.cpuUsage()
  const main = mainThreadMicros()
  const start = performance.now()
  await method()
  const seconds = (performance.now() - start) / 1000
  const used = process.cpuUsage(cpu)
  const cpuSeconds = (used.user + used.system) / 1e6
  const mainAfter = mainThreadMicros()
  const majorCollections = collections.stop()
  return main === undefined || mainAfter === undefined
    ? { seconds, cpuSeconds, majorCollections }
    : { seconds, cpuSeconds, majorCollections, helperCpuSeconds: Math.max(0, cpuSeconds - (mainAfter - main) / 1e6) }
}

/** The median (the upper one of an even count); there is none of no samples (`--passes 0`). */
export const median = (xs: ReadonlyArray<number>): number => {
  const middle = xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)]
  if (middle === undefined) throw new Error("no samples to take a median of: run at least one pass")
  return middle
}
