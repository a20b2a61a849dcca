/**
 * The simulator's kernel: virtual time, a seeded scheduler, and processes that can crash or pause.
 *
 * Every fiber of a simulated process runs on that process's `Scheduler` and `Clock` (Effect's own
 * references, provided at the root of the process): the scheduler puts each task the runtime
 * schedules in the world's one queue, the clock puts each sleep in the world's timer heap. The driver
 * ({@link World.run}) runs queued tasks one at a time, the next one chosen by the seed among the
 * runnable, and when none is runnable moves virtual time to the earliest timer. Nothing else is
 * asynchronous (the simulated services answer through the same timers), so one seed decides the
 * whole run. The one exception is a Promise the code under test awaits (the REST clients' shape):
 * the driver drains the microtask queue before it moves time, and microtasks run in a deterministic
 * order.
 *
 * A crash marks a process dead: its queued tasks and timers are dropped and nothing is delivered to
 * it again, so its fibers never resume and no finalizer of it runs (its memory is gone). A pause
 * holds its tasks, timers and deliveries until it resumes (a zombie).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Random from "effect/Random"
import * as References from "effect/References"
import * as Scheduler from "effect/Scheduler"
import type { Rng } from "./random.ts"

export type ProcessState = "running" | "paused" | "dead"

export interface Process {
  readonly id: number
  readonly name: string
  state: ProcessState
}

interface Task {
  readonly proc: Process
  readonly run: () => void
  readonly priority: number
}

interface Timer {
  readonly at: number
  readonly seq: number
  readonly proc: Process | undefined
  readonly fire: () => void
  cancelled: boolean
}

export type Outcome = "done" | "quiescent" | "timeLimit" | "stepLimit" | "spin"

export interface RunLimits {
  /** Virtual milliseconds; past them the run is a hang. */
  readonly maxTime: number
  readonly maxSteps: number
}

/** A min-heap of timers by (time, sequence). */
class TimerHeap {
  private readonly items: Array<Timer> = []
  get size(): number {
    return this.items.length
  }
  push(t: Timer): void {
    const a = this.items
    a.push(t)
    let i = a.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!before(a[i] as Timer, a[p] as Timer)) break
      ;[a[i], a[p]] = [a[p] as Timer, a[i] as Timer]
      i = p
    }
  }
  peek(): Timer | undefined {
    return this.items[0]
  }
  pop(): Timer | undefined {
    const a = this.items
    const top = a[0]
    const last = a.pop()
    if (a.length > 0 && last !== undefined) {
      a[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < a.length && before(a[l] as Timer, a[m] as Timer)) m = l
        if (r < a.length && before(a[r] as Timer, a[m] as Timer)) m = r
        if (m === i) break
        ;[a[i], a[m]] = [a[m] as Timer, a[i] as Timer]
        i = m
      }
    }
    return top
  }
}

const before = (a: Timer, b: Timer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq)

export interface WorldOptions {
  readonly rng: Rng
  /** Probability that the next task is drawn at random among the runnable instead of the oldest. */
  readonly shuffle?: number
  /** Receives each trace line (`--seed N`); none by default. */
  readonly trace?: ((line: string) => void) | undefined
}

export class World {
  now = 0
  steps = 0
  private seq = 0
  private nextProcessId = 0
  private readonly tasks: Array<Task> = []
  private readonly timers = new TimerHeap()
  /** Timers and deliveries of paused processes, released on resume. */
  private readonly held = new Map<Process, Array<() => void>>()
  /** Run at each crash, before the process's tasks are dropped (a file system loses what it had not synced). */
  private readonly crashHooks: Array<(proc: Process, machine: boolean) => void> = []
  /** Every process started, for a machine crash. */
  private readonly processes: Array<Process> = []
  readonly rng: Rng
  private readonly shuffle: number
  private readonly traceLine: ((line: string) => void) | undefined

  constructor(options: WorldOptions) {
    this.rng = options.rng
    this.shuffle = options.shuffle ?? 0.3
    this.traceLine = options.trace
  }

  get tracing(): boolean {
    return this.traceLine !== undefined
  }

  trace(line: () => string): void {
    if (this.traceLine !== undefined) this.traceLine(`${this.now.toFixed(3).padStart(13)} ms  ${line()}`)
  }

  /** Runs `fire` at `now + delay` (world-owned when `proc` is undefined); returns its cancel. */
  at(delay: number, proc: Process | undefined, fire: () => void): () => void {
    const timer: Timer = { at: this.now + Math.max(0, delay), seq: this.seq++, proc, fire, cancelled: false }
    this.timers.push(timer)
    return () => {
      timer.cancelled = true
    }
  }

  /** Runs `f` for `proc` now if it runs, later if paused, never if dead. */
  deliver(proc: Process, f: () => void): void {
    if (proc.state === "dead") return
    if (proc.state === "paused") {
      this.heldOf(proc).push(f)
      return
    }
    f()
  }

  private heldOf(proc: Process): Array<() => void> {
    let list = this.held.get(proc)
    if (list === undefined) this.held.set(proc, list = [])
    return list
  }

  /** A new process; `start` runs its root effect with the process's scheduler and clock. */
  process(name: string): Process & { readonly context: Context.Context<never> } {
    const proc: Process = { id: this.nextProcessId++, name, state: "running" }
    this.processes.push(proc)
    const scheduler = this.schedulerOf(proc)
    const clock = this.clockOf(proc)
    // the library's warnings go to the trace (`--seed N`), not to the console of 10,000 runs
    const logger = Logger.make((o) => this.trace(() => `${name}#${proc.id} ${o.logLevel}: ${String(o.message)}`))
    const context = Context.make(Scheduler.Scheduler, scheduler).pipe(
      Context.add(Clock.Clock, clock),
      Context.add(References.CurrentLoggers, new Set([logger])),
      Context.add(References.TracerEnabled, false),
      Context.add(Random.Random, this.effectRandom())
    )
    this.trace(() => `spawn ${name}#${proc.id}`)
    return Object.assign(proc, { context: context as Context.Context<never> })
  }

  /** Starts `effect` as the root fiber of `proc`. */
  fork<A, E>(
    proc: Process & { readonly context: Context.Context<never> },
    effect: Effect.Effect<A, E>
  ): Fiber.Fiber<A, E> {
    return Effect.runForkWith(proc.context)(effect)
  }

  /**
   * Calls `hook` with each process that crashes, at the moment it crashes; `machine`: the machine
   * went down with it (a power loss: what no process had made durable may be lost).
   */
  onCrash(hook: (proc: Process, machine: boolean) => void): void {
    this.crashHooks.push(hook)
  }

  crash(proc: Process, machine = false): void {
    if (proc.state === "dead") return
    this.trace(() => `crash ${proc.name}#${proc.id}${machine ? " (the machine goes down)" : ""}`)
    proc.state = "dead"
    for (const hook of this.crashHooks) hook(proc, machine)
    this.held.delete(proc)
    for (let i = this.tasks.length - 1; i >= 0; i--) if (this.tasks[i]?.proc === proc) this.tasks.splice(i, 1)
  }

  /**
   * The machine goes down (a power loss): every process still alive (running or paused) dies, the
   * crash hooks told once that the machine went down. The processes killed.
   */
  crashMachine(): Array<Process> {
    const alive = this.processes.filter((p) => p.state !== "dead")
    const [first, ...rest] = alive
    if (first !== undefined) this.crash(first, true)
    for (const p of rest) this.crash(p)
    return alive
  }

  pause(proc: Process): void {
    if (proc.state !== "running") return
    this.trace(() => `pause ${proc.name}#${proc.id}`)
    proc.state = "paused"
  }

  resume(proc: Process): void {
    if (proc.state !== "paused") return
    this.trace(() => `resume ${proc.name}#${proc.id}`)
    proc.state = "running"
    const held = this.held.get(proc) ?? []
    this.held.delete(proc)
    for (const f of held) this.at(0, proc, f)
  }

  /** Effect's `Random` (retry jitter) drawn from the seed. */
  private effectRandom(): Random.Random {
    const rng = this.rng.fork()
    return {
      nextDoubleUnsafe: rng.next,
      nextIntUnsafe: () => rng.int(Number.MAX_SAFE_INTEGER)
    }
  }

  private schedulerOf(proc: Process): Scheduler.Scheduler {
    const tasks = this.tasks
    const dispatcher: Scheduler.SchedulerDispatcher = {
      scheduleTask: (run, priority) => {
        if (proc.state !== "dead") tasks.push({ proc, run, priority })
      },
      flush: () => {
        for (let t = this.takeTask(proc); t !== undefined; t = this.takeTask(proc)) t.run()
      }
    }
    return {
      executionMode: "async",
      shouldYield: (fiber: Fiber.Fiber<unknown, unknown>) => fiber.currentOpCount >= fiber.cache.maxOpsBeforeYield,
      makeDispatcher: () => dispatcher
    }
  }

  private clockOf(proc: Process): Clock.Clock {
    const sleep = (millis: number): Effect.Effect<void> =>
      millis <= 0 ? Effect.yieldNow : !Number.isFinite(millis) ? Effect.never : Effect.callback<void>((resume) => {
        const cancel = this.at(millis, proc, () => resume(Effect.void))
        return Effect.sync(cancel)
      })
    const nanos = (): bigint => BigInt(Math.round(this.now * 1_000_000))
    return {
      currentTimeMillisUnsafe: () => this.now,
      currentTimeMillis: Effect.sync(() => this.now),
      currentTimeNanosUnsafe: nanos,
      currentTimeNanos: Effect.sync(nanos),
      monotonicTimeNanosUnsafe: nanos,
      monotonicTimeNanos: Effect.sync(nanos),
      sleep: (duration) => Effect.suspend(() => sleep(Duration.toMillis(duration)))
    }
  }

  /** The next runnable task (of `only` when given): the oldest, or one drawn by the seed. */
  private takeTask(only?: Process): Task | undefined {
    const tasks = this.tasks
    let count = 0
    let min = Infinity
    for (const t of tasks) {
      if (t.proc.state !== "running" || (only !== undefined && t.proc !== only)) continue
      if (t.priority < min) {
        min = t.priority
        count = 1
      } else if (t.priority === min) count++
    }
    if (count === 0) return undefined
    let nth = count > 1 && this.rng.chance(this.shuffle) ? this.rng.int(count) : 0
    for (let i = 0; i < tasks.length; i++) {
      const t = tasks[i] as Task
      if (t.proc.state !== "running" || t.priority !== min || (only !== undefined && t.proc !== only)) continue
      if (nth-- === 0) {
        tasks.splice(i, 1)
        return t
      }
    }
    return undefined
  }

  /**
   * Runs until `done()` holds (checked after every step), nothing is left to run (`quiescent`), or a
   * limit is reached.
   */
  async run(done: () => boolean, limits: RunLimits): Promise<Outcome> {
    let still = 0
    for (;;) {
      if (done()) return "done"
      if (this.steps >= limits.maxSteps) return "stepLimit"
      const task = this.takeTask()
      if (task !== undefined) {
        this.steps++
        // a fiber that never sleeps nor waits keeps every step at one instant: each step may be
        // thousands of its operations, so it would take hours to reach maxSteps
        if (++still > spinSteps) return "spin"
        task.run()
        continue
      }
      // a fiber may wait on a Promise (a REST client's answer): let its microtasks run first
      // oxlint-disable-next-line no-await-in-loop -- the driver is sequential by design: one step at a time
      await drainMicrotasks()
      if (this.tasks.some((t) => t.proc.state === "running")) continue
      const timer = this.nextTimer()
      if (timer === undefined) return done() ? "done" : "quiescent"
      if (timer.at > limits.maxTime) return "timeLimit"
      if (timer.at > this.now) still = 0
      this.now = Math.max(this.now, timer.at)
      this.steps++
      timer.fire()
    }
  }

  private nextTimer(): Timer | undefined {
    for (;;) {
      const t = this.timers.pop()
      if (t === undefined) return undefined
      if (t.cancelled || t.proc?.state === "dead") continue
      if (t.proc?.state === "paused") {
        this.heldOf(t.proc).push(t.fire)
        continue
      }
      return t
    }
  }
}

/** Steps at one virtual instant past which a run is a busy loop (runs take a few hundred at most). */
const spinSteps = 20_000

const drainMicrotasks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
