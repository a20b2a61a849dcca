/**
 * Timing one pass of a benchmark method in the current process, as every benchmark script does it:
 * on a collected heap (a method does not pay for the garbage of the one before it), wall time and
 * this process's CPU time (user + system, all threads).
 */
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
  const cpu = process.cpuUsage()
  const start = performance.now()
  await method()
  const seconds = (performance.now() - start) / 1000
  const used = process.cpuUsage(cpu)
  return { seconds, cpuSeconds: (used.user + used.system) / 1e6 }
}

/** The median (the upper one of an even count); there is none of no samples (`--passes 0`). */
export const median = (xs: ReadonlyArray<number>): number => {
  const middle = xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)]
  if (middle === undefined) throw new Error("no samples to take a median of: run at least one pass")
  return middle
}
