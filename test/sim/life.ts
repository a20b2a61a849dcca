/**
 * The life of one writer across processes: a process runs the writer program; a planned crash
 * kills it (memory gone) and a new process starts after a delay, restoring from the store and
 * replaying the source from the stored position; a planned zombie pauses the running process,
 * starts its replacement at once, and resumes the old one later; a planned handover moves the
 * writer to a new process as a cluster moves a partition between runners (`effect-gcp-sinks/Cluster`):
 * the old process's input is ended (its final checkpoint), and the new one starts before that (a
 * lock that expired under a live owner: both run, and the store fences the old one, since ownership passes
 * to the newcomer when it resumes) or after; a process that ends in a typed error is replaced as well
 * (the restart that must repair it). After `calmAfter` restarts the services' faults are turned off,
 * so the last process can finish.
 *
 * Liveness is a bound on time without progress, not a count of restarts: with a {@link Watch}
 * (a probe that grows when the writer moves forward: checkpoints saved), a restart after `maxStall`
 * virtual milliseconds without progress is a restart loop; without one (writers with no store),
 * `maxRestarts` restarts are. The watch's own violations (the store's ownership rule) are the run's.
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Outcome, Process, World } from "./kernel.ts"
import type { Rng } from "./random.ts"

export type SimProcess = Process & {
  readonly context: Context.Context<never>
  /** Completes when the writer is handed over to another process: its input ends (a final checkpoint). */
  readonly handedOver: Effect.Effect<void>
}

export interface LifePlan {
  /** Virtual times of the crashes (each kills the process running then, if any). */
  readonly crashes: ReadonlyArray<number>
  /** A zombie: at `at` the running process is paused and replaced; it resumes `after` ms later. */
  readonly zombie: { readonly at: number; readonly after: number } | undefined
  /**
   * A handover: at `at` a new process starts; the running one's input is ended `lead` ms later
   * (negative: before the new one starts, the graceful move; positive: both run meanwhile); the old
   * one is killed `crash` ms after its input ended, if set (a runner dying as its shard moves).
   */
  readonly handover: { readonly at: number; readonly lead: number; readonly crash: number | undefined } | undefined
  readonly restartDelay: readonly [number, number]
  readonly calmAfter: number
  /** Restarts in a row that make a loop, for a run without a progress probe. */
  readonly maxRestarts: number
  /** Virtual milliseconds without progress after which a restart is a loop (a run with a probe). */
  readonly maxStall: number
  /** Each crash takes the machine down (a power loss): every process dies, zombies included. */
  readonly machine?: boolean
}

/**
 * What watches a run from its checkpoint store: `progress()` grows whenever the writer moves forward
 * (a checkpoint saved), and a restart that finds it unchanged for `maxStall` ms is a restart loop;
 * `violations()` are what the store saw break (ownership), reported with the run's.
 */
export interface Watch {
  readonly progress: () => number
  readonly violations: () => ReadonlyArray<string>
}

/**
 * Twenty minutes without progress make a restart loop: longer than a writer may legitimately stall before
 * it fails and is restarted. The longest is an append no server answers: its attempt fails after
 * `responseTimeout` (5 minutes by default), retries go on until the retry's `maxDuration` (5 minutes) has
 * passed since that first failure, and the last may start just before then and wait its own 5 minutes:
 * about 15 minutes (the simulated server ends a cancelled call at once). Ten minutes was below that: two
 * hung AppendRows calls in a row failed a writer after 601.5 s, as designed, and were reported as a loop
 * (`bigquery.exactlyOnce` seed 203213, swarm).
 */
const maxStall = 20 * 60_000

/**
 * Crashes, a zombie and a handover drawn within `horizon` virtual milliseconds; the handover from
 * an rng of its own (`handovers`), so the other draws stay what they were for every seed.
 */
export const drawPlan = (
  rng: Rng,
  horizon: number,
  options: { readonly zombies: boolean; readonly handovers?: Rng | undefined }
): LifePlan => {
  const crashCount = horizon <= 0 ? 0 : rng.pick([0, 0, 1, 1, 2, 3])
  const crashes = Array.from({ length: crashCount }, () => rng.int(horizon)).toSorted((a, b) => a - b)
  const zombie = options.zombies && horizon > 0 && rng.chance(0.25)
    ? { at: rng.int(horizon), after: rng.between(1, horizon) }
    : undefined
  const h = options.handovers
  const handover = h !== undefined && horizon > 0 && h.chance(0.25)
    ? {
      at: h.int(horizon),
      lead: h.pick([-1, 1]) * h.between(0, Math.max(1, Math.floor(horizon / 4))),
      crash: h.chance(0.5) ? h.between(0, Math.max(1, Math.floor(horizon / 8))) : undefined
    }
    : undefined
  return { crashes, zombie, handover, restartDelay: [1, 200], calmAfter: 6, maxRestarts: 20, maxStall }
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
  limits: { readonly maxTime: number; readonly maxSteps: number },
  watch?: Watch | undefined
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

  // the last progress seen: the probe's value, when, and the restarts since
  let progressed = { value: watch?.progress(), at: world.now, restarts: 0 }
  const stalled = (): string | undefined => {
    if (watch === undefined) {
      return restarts > plan.maxRestarts ? `${restarts} restarts, and no store tells progress` : undefined
    }
    const measured = watch.progress()
    if (measured !== progressed.value) progressed = { value: measured, at: world.now, restarts: 0 }
    progressed.restarts++
    const since = world.now - progressed.at
    return since > plan.maxStall
      ? `${progressed.restarts} restarts in ${(since / 1000).toFixed(1)} s without progress`
      : undefined
  }

  const restart = () => {
    restarts++
    if (restarts === plan.calmAfter) {
      world.trace(() => "the storm passes: faults off")
      calm()
    }
    const loop = stalled()
    if (loop !== undefined) {
      violations.push(`restart loop: ${loop} (errors: ${errors.slice(-5).join(", ")})`)
      return
    }
    world.at(world.rng.between(plan.restartDelay[0], plan.restartDelay[1]), undefined, start)
  }

  const handovers = new Map<SimProcess, Deferred.Deferred<void>>()
  /** Processes whose writer was handed over: they never become the writer again. */
  const movedAway = new Set<SimProcess>()
  const start = () => {
    const handedOver = Deferred.makeUnsafe<void>()
    const proc: SimProcess = Object.assign(world.process(`p${generation}`), {
      handedOver: Deferred.await(handedOver)
    })
    handovers.set(proc, handedOver)
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
        // a process whose partition moved away ended its input early: the writer goes on elsewhere
        if (proc === current && !movedAway.has(proc)) {
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
      // that one is the writer now, as it would be in production; nothing restarts. Not one whose
      // partition moved away: it is stopping, and the new owner restarts its writer (as the cluster
      // runner does after a fence)
      const other = tag === "CheckpointConflict"
        ? [...running].find((p) => p.state !== "dead" && !movedAway.has(p))
        : undefined
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
      if (plan.machine === true) { for (const p of world.crashMachine()) running.delete(p as SimProcess) }
      else world.crash(current)
      running.delete(current)
      restart()
    })
  }
  if (plan.handover !== undefined) {
    const { at, crash, lead } = plan.handover
    const handOver = (old: SimProcess) => () => {
      if (old.state !== "running") return
      world.trace(() => `${old.name}: its partition moves away (input ended)`)
      const done = handovers.get(old)
      if (done !== undefined) Deferred.doneUnsafe(done, Exit.void)
      if (crash === undefined) return
      world.at(crash, undefined, () => {
        if (old.state === "dead") return
        world.trace(() => `${old.name} dies while its partition moves away`)
        world.crash(old)
        running.delete(old)
      })
    }
    world.at(at, undefined, () => {
      const old = current
      if (old === undefined || old.state !== "running" || finished) return
      world.trace(() => `handover: ${old.name}'s writer moves to a new process (lead ${lead} ms)`)
      movedAway.add(old)
      if (lead <= 0) {
        handOver(old)()
        world.at(-lead, undefined, start)
      } else {
        start()
        world.at(lead, old, handOver(old))
      }
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
  if (watch !== undefined) violations.push(...watch.violations())
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
