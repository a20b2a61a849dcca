/**
 * `--pin`: the process that is timed on one core and the server it talks to on the other (`taskset`).
 * Unpinned, the scheduler moves the client, its garbage collector's threads and the fake or emulator
 * between the two cores as they wake, and a pass's CPU per item moved by a third from one run to the
 * next (Go's as much as ours). Pinned, the timed process has a core of its own, as in a one-CPU
 * container: Go then runs with `GOMAXPROCS=1` (it reads the affinity at start), Node's helper threads
 * share the same core. Children inherit the affinity, so pinning this process to the client's core pins
 * every timed process it starts; a server it starts is moved to the other core by {@link pinServer}.
 */
import { spawnSync } from "node:child_process"
import { flag } from "./args.ts"

/** Whether `--pin` was given (then passed on to the children that time a pass). */
export const pinning = flag("pin")

const clientCpu = 0
const serverCpu = 1

const pin = (pid: number, cpu: number): void => {
  if (!pinning) return
  const pinned = spawnSync("taskset", ["-a", "-c", "-p", String(cpu), String(pid)], { stdio: "ignore" })
  if (pinned.status !== 0) {
    throw new Error(`--pin: taskset could not move process ${pid} to CPU ${cpu} (it needs util-linux and two CPUs)`)
  }
}

/** Pins this process (and what it starts from now on) to the client's core. */
export const pinClient = (): void => pin(process.pid, clientCpu)

/** Moves a server this process started (the fake, the emulator) to the other core. */
export const pinServer = (pid: number | undefined): void => {
  if (!pinning) return
  if (pid === undefined) throw new Error("--pin: the server's process id is unknown")
  pin(pid, serverCpu)
}
