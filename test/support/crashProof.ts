/**
 * The SIGKILL crash proof of DESIGN section 6: runs a child Node process (a `.ts` script, run by
 * `process.execPath` with Node 22's type stripping, as `bench/` and `examples/` scripts are), kills it
 * with SIGKILL at seeded random points, restarts it, and repeats until it reports completion, within a
 * time bound. The caller then checks the destination (COUNT = COUNT DISTINCT = N, exact SUM).
 *
 * **Kill points.** The whole plan (one point per kill, the points taken in rounds so each is used: the
 * first in the order given, the later ones shuffled) is drawn from `seed` before the first start, so a
 * run is replayable: its figures carry the plan.
 * - `AfterStep`: when the child reports the `nth` (drawn from a range) occurrence of `step` (see
 *   `crashChild.ts`: `STEP <name> <json>` lines on stdout), after `delayMillis` (drawn from a range).
 *   With `hold`, the child is told (env) to sleep right after reporting that occurrence, so the kill
 *   lands exactly there: after a save and before its commit, or between two commits of one checkpoint.
 * - `AtTime`: `millis` (drawn from a range) after the start, wherever the child is.
 *
 * **Every planned kill is delivered**, however fast the child is: a start with a kill planned cannot
 * complete (`crashChild.ts`). It holds, alternately from kill to kill, at the end of its input (its
 * source reports `drained` and does not end: a kill before the final checkpoint) or in place of `done`
 * (it reports `finished`: the final checkpoint ran, so points planned inside it still fire, and the kill
 * lands after the last commit). The harness kills a held child at once, counted under `at end of input`
 * or `after the last checkpoint` instead of the planned point. A start that completes with a kill still
 * planned fails the proof (`KillNotDelivered`: a child that does not hold). A child that exits on its own
 * without completing, or exits non-zero, fails the proof with its stderr tail, unless it exits with
 * `fencedExitCode` and the caller allows it (two-process runs).
 *
 * `runConcurrently` starts several children at once (a zombie and its replacement sharing a writer id),
 * the later ones after a step of the first, and reports how each ended.
 */
import { Data, Deferred, Duration, Effect, Fiber, Queue, Random, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import { drainedStep, fencedExitCode, finishedStep } from "./crashChild.ts"

export type KillPoint =
  | {
    readonly _tag: "AfterStep"
    readonly step: string
    /** The occurrence of `step` in this start, drawn uniformly from [min, max]. */
    readonly nth: readonly [number, number]
    /** Extra wait after it, drawn uniformly from [min, max] ms; default none. */
    readonly delayMillis?: readonly [number, number]
    /** Tell the child to hold still after that occurrence, so that the kill lands right there. */
    readonly hold?: boolean
  }
  | {
    readonly _tag: "AtTime"
    /** Milliseconds after the start, drawn uniformly from [min, max]. */
    readonly millis: readonly [number, number]
  }

/** One drawn kill: where, and the label figures count it under. */
export interface PlannedKill {
  readonly label: string
  readonly step: string | undefined
  readonly nth: number
  readonly delayMillis: number
  readonly hold: boolean
  /** Where the start holds if the planned point has not come when its work is done (kills alternate). */
  readonly fallback: "input" | "done"
}

export interface StepEvent {
  readonly name: string
  readonly data: unknown
  readonly atMillis: number
}

export interface CrashProofOptions {
  /** The child script (`.ts`), run with `process.execPath`. */
  readonly script: string
  readonly args?: ReadonlyArray<string>
  /** Added to the parent's environment. */
  readonly env?: Readonly<Record<string, string>>
  readonly seed: number
  /** How many SIGKILLs to deliver. */
  readonly kills: number
  /** Drawn from uniformly for each kill. */
  readonly points: ReadonlyArray<KillPoint>
  /** The bound on the whole proof, restarts included. */
  readonly timeout: Duration.Input
  /** How long a holding child sleeps; default 10 s (the kill comes within milliseconds). */
  readonly holdMillis?: number
}

export interface StartFigures {
  readonly start: number
  readonly plan: PlannedKill | undefined
  readonly killed: boolean
  /** Where the kill landed: the plan's label, or `at end of input` when the source drained first. */
  readonly killedAt: string | undefined
  readonly exitCode: number | null
  readonly signal: string | null
  readonly millis: number
  readonly steps: Readonly<Record<string, number>>
}

/** The starts whose kill landed where it was aimed (not where a start that ran out of input held). */
export const aimedKills = (history: ReadonlyArray<StartFigures>): ReadonlyArray<StartFigures> =>
  history.filter((s) => s.killed && s.plan !== undefined && s.killedAt === s.plan.label)

export interface CrashProofFigures {
  readonly seed: number
  readonly kills: number
  readonly restarts: number
  readonly starts: number
  readonly durationMillis: number
  /** Kills per point label (`after saved (hold)`, `at time`, `at end of input`, ...). */
  readonly killsByPoint: Readonly<Record<string, number>>
  /** Step occurrences over all starts. */
  readonly steps: Readonly<Record<string, number>>
  /** The data of the completion step. */
  readonly completion: unknown
  readonly history: ReadonlyArray<StartFigures>
}

export class CrashProofError extends Data.TaggedError("CrashProofError")<{
  readonly reason: "Timeout" | "ChildFailed" | "NoCompletion" | "KillNotDelivered"
  readonly message: string
  readonly history: ReadonlyArray<StartFigures>
  readonly stderr: string
}> {}

// ---------------------------------------------------------------------------------------------
// One child process

export interface Child {
  readonly pid: number
  /** Every step the child reported, in order. */
  readonly events: Queue.Dequeue<StepEvent>
  readonly steps: Map<string, number>
  /** The data of the last occurrence of each step. */
  readonly lastData: Map<string, unknown>
  /** Resolves with the exit code and signal. */
  readonly exited: Deferred.Deferred<{ readonly code: number | null; readonly signal: string | null }>
  readonly kill: Effect.Effect<void>
  readonly stderrTail: () => string
}

const parseStep = (line: string, atMillis: number): StepEvent | undefined => {
  const match = /^STEP (\S+) (.*)$/.exec(line)
  if (match?.[1] === undefined) return undefined
  let data: unknown = null
  try {
    data = JSON.parse(match[2] ?? "null")
  } catch {
    data = match[2]
  }
  return { name: match[1], data, atMillis }
}

/** Starts the child; it is SIGKILLed when the scope closes if still running. */
export const startChild = (options: {
  readonly script: string
  readonly args?: ReadonlyArray<string> | undefined
  readonly env: Readonly<Record<string, string>>
}): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const events = yield* Queue.unbounded<StepEvent>()
      const exited = yield* Deferred.make<{ readonly code: number | null; readonly signal: string | null }>()
      const started = performance.now()
      const child = spawn(process.execPath, [options.script, ...(options.args ?? [])], {
        env: { ...process.env, ...options.env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      const steps = new Map<string, number>()
      const lastData = new Map<string, unknown>()
      const stderr: Array<string> = []
      readline.createInterface({ input: child.stdout }).on("line", (line) => {
        const event = parseStep(line, performance.now() - started)
        if (event === undefined) return
        steps.set(event.name, (steps.get(event.name) ?? 0) + 1)
        lastData.set(event.name, event.data)
        Queue.offerUnsafe(events, event)
      })
      readline.createInterface({ input: child.stderr }).on("line", (line) => {
        stderr.push(line)
        if (stderr.length > 40) stderr.shift()
      })
      child.once("error", (error) => {
        stderr.push(`spawn failed: ${String(error)}`)
        Deferred.doneUnsafe(exited, Effect.succeed({ code: -1, signal: null }))
      })
      // "close", not "exit": every stdout line has been read by then
      child.once("close", (code, signal) => {
        Deferred.doneUnsafe(exited, Effect.succeed({ code, signal }))
      })
      const child_: Child = {
        pid: child.pid ?? -1,
        events,
        steps,
        lastData,
        exited,
        kill: Effect.sync(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
        }),
        stderrTail: () => stderr.join("\n")
      }
      return child_
    }),
    (child) => Effect.andThen(child.kill, Deferred.await(child.exited).pipe(Effect.timeoutOption("5 seconds")))
  )

/** The step that means the child finished its work. */
const completionStep = "done"

/** The label of a kill delivered because the child's source drained before the planned point. */
export const endOfInputLabel = "at end of input"

/** The label of a kill delivered because the child finished its work before the planned point. */
export const afterLastCheckpointLabel = "after the last checkpoint"

/**
 * Waits for a planned kill's trigger: the `nth` occurrence of its step (an `AtTime` kill: its time), or
 * the child holding first (its work done); `exited` if the child exits before either.
 */
const awaitTrigger = (child: Child, kill: PlannedKill): Effect.Effect<"planned" | "held" | "exited"> => {
  const events = untilEvent(
    child,
    (event) => event.name === drainedStep || event.name === finishedStep ? "held" : undefined,
    kill.step,
    kill.nth
  )
  const trigger = kill.step === undefined
    ? Effect.raceFirst(events, Effect.as(Effect.sleep(Duration.millis(kill.delayMillis)), "planned" as const))
    : events
  return Effect.raceFirst(trigger, Effect.as(Deferred.await(child.exited), "exited" as const))
}

/** Waits for the `nth` occurrence of `step` (or for the child to exit first: `false`). */
const awaitStep = (child: Child, step: string, nth: number): Effect.Effect<boolean> =>
  Effect.raceFirst(
    Effect.as(untilEvent(child, () => undefined, step, nth), true),
    Effect.as(Deferred.await(child.exited), false)
  )

/**
 * Takes the child's events until `stop` answers one (its answer) or `step` has come `nth` times
 * (`"planned"`; never without a step).
 */
const untilEvent = <S extends string>(
  child: Child,
  stop: (event: StepEvent) => S | undefined,
  step: string | undefined,
  nth: number
): Effect.Effect<S | "planned"> =>
  Effect.gen(function*() {
    let count = 0
    while (true) {
      const event = yield* Queue.take(child.events)
      const stopped = stop(event)
      if (stopped !== undefined) return stopped
      if (event.name === step && ++count >= nth) return "planned" as const
    }
  })

// ---------------------------------------------------------------------------------------------
// Plans

const drawInt = (range: readonly [number, number]) => Random.nextIntBetween(range[0], range[1])

const draw = (point: KillPoint, fallback: PlannedKill["fallback"]): Effect.Effect<PlannedKill> =>
  Effect.gen(function*() {
    if (point._tag === "AtTime") {
      const delayMillis = yield* drawInt(point.millis)
      return { label: "at time", step: undefined, nth: 0, delayMillis, hold: false, fallback }
    }
    const nth = yield* drawInt(point.nth)
    const delayMillis = point.delayMillis === undefined ? 0 : yield* drawInt(point.delayMillis)
    const hold = point.hold ?? false
    const label = `after ${point.step}${hold ? " (hold)" : ""}`
    return { label, step: point.step, nth, delayMillis, hold, fallback }
  })

/**
 * The kill plan of a proof, from `seed` alone: the points are taken in rounds, so every point is used
 * once `kills` reaches their number, and evenly after; each has its own drawn occurrence and delay.
 * The first round takes the points in the order given, the later ones in a seeded shuffle. Each start
 * goes on from where the last one saved, and on a fast machine a start killed late (`AtTime`) can
 * finish the input: every later point then lands at the end of the input instead. Taken first, each
 * point is tried while the input is fresh, whatever the machine's speed.
 */
export const plan = (options: Pick<CrashProofOptions, "seed" | "kills" | "points">) =>
  Effect.gen(function*() {
    const kills: Array<PlannedKill> = []
    // popped from the end: the first round is the points in order
    let round: Array<KillPoint> = options.points.toReversed()
    for (let i = 0; i < options.kills && options.points.length > 0; i++) {
      if (round.length === 0) round = yield* Random.shuffle(options.points)
      const point = round.pop()
      if (point !== undefined) kills.push(yield* draw(point, i % 2 === 0 ? "input" : "done"))
    }
    return kills
  }).pipe(Random.withSeed(options.seed))

// ---------------------------------------------------------------------------------------------
// The proof

const holdEnv = (kill: PlannedKill | undefined, holdMillis: number): Record<string, string> =>
  kill?.hold === true && kill.step !== undefined
    ? { CRASH_PROOF_HOLD: kill.step, CRASH_PROOF_HOLD_NTH: String(kill.nth), CRASH_PROOF_HOLD_MS: String(holdMillis) }
    : { CRASH_PROOF_HOLD: "" }

/** Runs one start: the child, its planned kill, and how it ended. */
const runStart = (options: CrashProofOptions, start: number, kill: PlannedKill | undefined) =>
  Effect.scoped(Effect.gen(function*() {
    const begun = performance.now()
    const child = yield* startChild({
      script: options.script,
      args: options.args,
      env: {
        ...options.env,
        ...holdEnv(kill, options.holdMillis ?? 10_000),
        CRASH_PROOF_START: String(start),
        CRASH_PROOF_KILL_PENDING: kill === undefined ? "" : kill.fallback
      }
    })
    let killedAt: string | undefined
    const killer = kill === undefined
      ? Effect.never
      : Effect.gen(function*() {
        const trigger = yield* awaitTrigger(child, kill)
        if (trigger === "exited") return yield* Effect.never
        if (trigger === "planned" && kill.step !== undefined && kill.delayMillis > 0) {
          yield* Effect.sleep(Duration.millis(kill.delayMillis))
        }
        killedAt = trigger === "planned"
          ? kill.label
          : kill.fallback === "input"
          ? endOfInputLabel
          : afterLastCheckpointLabel
        yield* child.kill
      })
    const killerFiber = yield* Effect.forkScoped(killer)
    const exit = yield* Deferred.await(child.exited)
    yield* Fiber.interrupt(killerFiber)
    const killed = exit.signal === "SIGKILL"
    const completed = child.lastData.has(completionStep) ? { data: child.lastData.get(completionStep) } : undefined
    const figures: StartFigures = {
      start,
      plan: kill,
      killed,
      killedAt: killed ? killedAt : undefined,
      exitCode: exit.code,
      signal: exit.signal,
      millis: Math.round(performance.now() - begun),
      steps: Object.fromEntries(child.steps)
    }
    return { figures, completed, stderr: child.stderrTail() }
  }))

const count = (into: Record<string, number>, key: string, n = 1) => {
  into[key] = (into[key] ?? 0) + n
}

/**
 * Runs the proof: starts the child, kills it per the plan, restarts it until it completes. Fails with
 * `CrashProofError` on timeout, on a child that fails on its own, or when it exits 0 without completing.
 */
export const run = (options: CrashProofOptions): Effect.Effect<CrashProofFigures, CrashProofError> =>
  Effect.gen(function*() {
    const kills = yield* plan(options)
    const history: Array<StartFigures> = []
    const killsByPoint: Record<string, number> = {}
    const steps: Record<string, number> = {}
    const begun = performance.now()
    let delivered = 0
    let lastStderr = ""
    const loop = Effect.gen(function*() {
      for (let start = 0;; start++) {
        const kill = kills[delivered]
        const outcome = yield* runStart(options, start, kill)
        history.push(outcome.figures)
        lastStderr = outcome.stderr
        yield* Effect.logDebug(
          `crash proof: start ${start} ${
            outcome.figures.killed ? `killed ${outcome.figures.killedAt ?? ""}` : "ended"
          } ` +
            `(code ${outcome.figures.exitCode}) after ${outcome.figures.millis} ms, steps ${
              JSON.stringify(outcome.figures.steps)
            }`
        )
        for (const [name, n] of Object.entries(outcome.figures.steps)) count(steps, name, n)
        if (outcome.figures.killed && kill !== undefined) {
          delivered++
          count(killsByPoint, outcome.figures.killedAt ?? kill.label)
          continue
        }
        if (outcome.completed !== undefined && outcome.figures.exitCode === 0) {
          if (kill === undefined) return outcome.completed.data
          return yield* new CrashProofError({
            reason: "KillNotDelivered",
            message: `start ${start} of ${options.script} completed with its kill (${kill.label}) still planned: ` +
              `the child does not hold (crashChild.ts replayableSource, step)`,
            history,
            stderr: outcome.stderr
          })
        }
        return yield* new CrashProofError({
          reason: outcome.figures.exitCode === 0 ? "NoCompletion" : "ChildFailed",
          message: `start ${start} of ${options.script} ended with code ${outcome.figures.exitCode} signal ` +
            `${outcome.figures.signal} without completing`,
          history,
          stderr: outcome.stderr
        })
      }
    })
    const completion = yield* loop.pipe(
      Effect.timeoutOrElse({
        duration: options.timeout,
        orElse: () =>
          Effect.fail(
            new CrashProofError({
              reason: "Timeout",
              message: `the crash proof of ${options.script} did not complete within ${
                Duration.format(Duration.fromInputUnsafe(options.timeout))
              } (${history.length} starts, ${delivered} kills)`,
              history,
              stderr: lastStderr
            })
          )
      })
    )
    const figures: CrashProofFigures = {
      seed: options.seed,
      kills: delivered,
      restarts: history.length - 1,
      starts: history.length,
      durationMillis: Math.round(performance.now() - begun),
      killsByPoint,
      steps,
      completion,
      history
    }
    return figures
  })

// ---------------------------------------------------------------------------------------------
// Several processes at once (a zombie and its replacement)

export interface ConcurrentOutcome {
  readonly index: number
  readonly exitCode: number | null
  readonly signal: string | null
  readonly fenced: boolean
  readonly completed: boolean
  readonly steps: Readonly<Record<string, number>>
  readonly stderr: string
}

/**
 * Starts `processes` children with the same script and environment (plus `CRASH_PROOF_INDEX`): the
 * first at once, each later one when the first has reported `startAfter.step` `startAfter.nth` times.
 * Waits for all to exit (each may complete, or be fenced with `fencedExitCode`), within `timeout`.
 */
/** A directory of this run's, removed with its scope. */
const tempDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "crash-proof-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

export const runConcurrently = (options: {
  readonly script: string
  readonly env?: Readonly<Record<string, string>>
  readonly processes: number
  readonly startAfter: { readonly step: string; readonly nth: number }
  /** The step a later child reports once it restored the shared record; default `"restored"`. */
  readonly restoredStep?: string
  readonly timeout: Duration.Input
}): Effect.Effect<ReadonlyArray<ConcurrentOutcome>, CrashProofError> =>
  Effect.scoped(Effect.gen(function*() {
    // the first child waits after `startAfter` until every later one restored: on a loaded machine a
    // replacement's start-up can otherwise outlast the zombie's whole run, and nothing overlaps
    const gate = path.join(yield* tempDirectory, "gate")
    const spawnOne = (index: number, env: Readonly<Record<string, string>>) =>
      startChild({
        script: options.script,
        env: {
          ...options.env,
          ...env,
          CRASH_PROOF_HOLD: "",
          CRASH_PROOF_KILL_PENDING: "",
          CRASH_PROOF_INDEX: String(index)
        }
      })
    const first = yield* spawnOne(0, {
      CRASH_PROOF_GATE: options.startAfter.step,
      CRASH_PROOF_GATE_NTH: String(options.startAfter.nth),
      CRASH_PROOF_GATE_FILE: gate
    })
    const children = [first]
    if (options.processes > 1) {
      yield* awaitStep(first, options.startAfter.step, options.startAfter.nth)
      for (let i = 1; i < options.processes; i++) children.push(yield* spawnOne(i, {}))
      yield* Effect.forEach(children.slice(1), (child) => awaitStep(child, options.restoredStep ?? "restored", 1))
    }
    yield* Effect.sync(() => fs.writeFileSync(gate, ""))
    const exits = yield* Effect.forEach(children, (child) => Deferred.await(child.exited), {
      concurrency: "unbounded"
    })
    return children.map((child, index): ConcurrentOutcome => {
      const exit = exits[index] ?? { code: null, signal: null }
      return {
        index,
        exitCode: exit.code,
        signal: exit.signal,
        fenced: exit.code === fencedExitCode,
        completed: exit.code === 0 && (child.steps.get(completionStep) ?? 0) > 0,
        steps: Object.fromEntries(child.steps),
        stderr: child.stderrTail()
      }
    })
  })).pipe(
    Effect.timeoutOrElse({
      duration: options.timeout,
      orElse: () =>
        Effect.fail(
          new CrashProofError({
            reason: "Timeout",
            message: `the concurrent run of ${options.script} did not end in time`,
            history: [],
            stderr: ""
          })
        )
    })
  )
