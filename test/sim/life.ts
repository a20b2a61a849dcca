/**
 * The life of one writer across processes: a process runs the writer program; a planned crash
 * kills it (memory gone) and a new process starts after a delay, restoring from the store and
 * replaying the source from the stored position; a planned zombie pauses the running process,
 * starts its replacement at once, and resumes the old one later; a process that ends in a typed
 * error is replaced as well (the restart that must repair it). After `calmAfter` restarts the
 * services' faults are turned off, so the last process can finish; past `maxRestarts` the run is a
 * restart loop.
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Outcome, Process, World } from "./kernel.ts"
import type { Rng } from "./random.ts"

export type SimProcess = Process & { readonly context: Context.Context<never> }

export interface LifePlan {
  /** Virtual times of the crashes (each kills the process running then, if any). */
  readonly crashes: ReadonlyArray<number>
  /** A zombie: at `at` the running process is paused and replaced; it resumes `after` ms later. */
  readonly zombie: { readonly at: number; readonly after: number } | undefined
  readonly restartDelay: readonly [number, number]
  readonly calmAfter: number
  readonly maxRestarts: number
}

/** Crashes and a zombie drawn within `horizon` virtual milliseconds. */
export const drawPlan = (rng: Rng, horizon: number, options: { readonly zombies: boolean }): LifePlan => {
  const crashCount = horizon <= 0 ? 0 : rng.pick([0, 0, 1, 1, 2, 3])
  const crashes = Array.from({ length: crashCount }, () => rng.int(horizon)).toSorted((a, b) => a - b)
  const zombie = options.zombies && horizon > 0 && rng.chance(0.25)
    ? { at: rng.int(horizon), after: rng.between(1, horizon) }
    : undefined
  return { crashes, zombie, restartDelay: [1, 200], calmAfter: 6, maxRestarts: 20 }
}

export interface LifeResult {
  readonly outcome: Outcome
  readonly violations: Array<string>
  readonly restarts: number
  /** The typed errors processes ended with (`_tag`s), in order. */
  readonly errors: ReadonlyArray<string>
  /** The value the process that finished returned. */
  readonly value: unknown
  /** The processes whose root fiber ended (not killed): their resources must all be released. */
  readonly exited: ReadonlyArray<SimProcess>
}

const tagOf = (e: unknown): string =>
  typeof e === "object" && e !== null && "_tag" in e && typeof e._tag === "string"
    ? e._tag + ("reason" in e && typeof e.reason === "object" && e.reason !== null && "_tag" in e.reason
      ? `(${String(e.reason._tag)})`
      : "")
    : String(e)

export const live = async (
  world: World,
  plan: LifePlan,
  program: (proc: SimProcess, generation: number) => Effect.Effect<unknown, unknown>,
  calm: () => void,
  limits: { readonly maxTime: number; readonly maxSteps: number }
): Promise<LifeResult> => {
  const violations: Array<string> = []
  const errors: Array<string> = []
  const running = new Set<SimProcess>()
  let current: SimProcess | undefined
  let generation = 0
  let restarts = 0
  let finished = false
  let value: unknown
  const exited: Array<SimProcess> = []

  const restart = () => {
    restarts++
    if (restarts === plan.calmAfter) {
      world.trace(() => "the storm passes: faults off")
      calm()
    }
    if (restarts > plan.maxRestarts) {
      violations.push(`restart loop: ${restarts} restarts (errors: ${errors.slice(-5).join(", ")})`)
      return
    }
    world.at(world.rng.between(plan.restartDelay[0], plan.restartDelay[1]), undefined, start)
  }

  const start = () => {
    const proc = world.process(`p${generation}`) as SimProcess
    const g = generation++
    current = proc
    running.add(proc)
    const fiber = world.fork(proc, program(proc, g))
    fiber.addObserver((exit) => {
      running.delete(proc)
      if (proc.state === "dead") return
      exited.push(proc)
      if (Exit.isSuccess(exit)) {
        world.trace(() => `${proc.name} finished`)
        if (proc === current) {
          finished = true
          value = exit.value
        }
        return
      }
      if (Cause.hasDies(exit.cause)) {
        violations.push(`defect in ${proc.name}: ${Cause.pretty(exit.cause)}`)
        return
      }
      const error = Cause.findErrorOption(exit.cause)
      const tag = error._tag === "Some" ? tagOf(error.value) : "interrupted"
      world.trace(() => `${proc.name} failed: ${tag}${error._tag === "Some" ? ` ${String(error.value)}` : ""}`)
      errors.push(tag)
      // a configuration the simulator drew wrong is its own bug, not a fault to restart from
      if (tag.startsWith("SinkConfigError")) {
        violations.push(`${proc.name}: ${String(error._tag === "Some" ? error.value : tag)}`)
        return
      }
      // nothing interrupts a live process's writer (a crash kills it): an interruption is the sink's own
      if (error._tag === "None") {
        violations.push(`${proc.name} ended interrupted, not by a crash: ${Cause.pretty(exit.cause)}`)
        return
      }
      if (proc !== current) return
      // fenced by a process of the same writer that is still running (a zombie that saved first):
      // that one is the writer now, as it would be in production; nothing restarts
      const other = tag === "CheckpointConflict" ? [...running].find((p) => p.state !== "dead") : undefined
      if (other !== undefined) {
        world.trace(() => `${other.name} keeps the writer`)
        current = other
        return
      }
      restart()
    })
  }

  for (const at of plan.crashes) {
    world.at(at, undefined, () => {
      if (current === undefined || current.state !== "running" || finished) return
      world.crash(current)
      running.delete(current)
      restart()
    })
  }
  if (plan.zombie !== undefined) {
    const { after, at } = plan.zombie
    world.at(at, undefined, () => {
      const zombie = current
      if (zombie === undefined || zombie.state !== "running" || finished) return
      world.pause(zombie)
      start()
      world.at(after, undefined, () => world.resume(zombie))
    })
  }
  start()
  const outcome = await world.run(
    () => (finished && running.size === 0) || violations.length > 0,
    limits
  )
  if (outcome === "quiescent") violations.push("hang: nothing left to run and the writer did not finish")
  if (outcome === "timeLimit") violations.push(`hang: virtual time past ${limits.maxTime} ms`)
  if (outcome === "stepLimit") violations.push(`hang: more than ${limits.maxSteps} steps`)
  if (outcome === "spin") violations.push("hang: a busy loop (20,000 steps without virtual time moving)")
  // let the ended processes' last calls close (a half-closed stream ends after its answers)
  if (violations.length === 0) {
    await world.run(() => false, { maxTime: world.now + 120_000, maxSteps: world.steps + 200_000 })
  }
  return { outcome, violations, restarts, errors, value, exited }
}
