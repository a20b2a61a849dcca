/**
 * Timing one pass of a benchmark method in the current process, as every benchmark script does it:
 * on a collected heap (a method does not pay for the garbage of the one before it), wall time and
 * this process's CPU time (user + system, all threads).
 */
import * as v8 from "node:v8"
import * as vm from "node:vm"

v8.setFlagsFromString("--expose-gc")
/** A full collection. */
export const collect = vm.runInNewContext("gc") as () => void

/** One timed pass. */
export interface Timed {
  readonly seconds: number
  readonly cpuSeconds: number
}

/** Runs `method` once on a collected heap and times it. */
export const timePass = async (method: () => Promise<unknown>): Promise<Timed> => {
  collect()
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
