/**
 * Runs one emulator as a child process on loopback: free ports, a log file, a readiness probe, and a teardown
 * that kills the whole process group by PID (SIGTERM, then SIGKILL after a grace period).
 *
 * Each child is the leader of its own process group (`detached: true`), so `kill(-pid)` reaches anything it
 * spawned. Its stdout and stderr go straight to `.emulators/logs/<name>-<pid>.log` (a file descriptor, not a
 * pipe, so a busy test process never blocks the child); the tail of that log is put in the error when the
 * emulator exits early or is not ready in time. A pidfile per child lets the next run reap emulators left
 * behind by a test process that was itself killed with SIGKILL.
 */
import { Clock, Data, Deferred, Duration, Effect, Option, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { emulatorsDir } from "./emulatorInstall.ts"

export class EmulatorError extends Data.TaggedError("EmulatorError")<{
  readonly emulator: string
  readonly reason: "Spawn" | "Exited" | "Timeout"
  readonly message: string
  readonly logFile?: string | undefined
  readonly cause?: unknown
}> {}

/** How to run one emulator once its ports are known. */
export interface EmulatorCommand {
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** Merged over `process.env`. */
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cwd?: string | undefined
  /** One readiness attempt; succeeds with `true` once the emulator serves requests. Must not fail. */
  readonly probe: Effect.Effect<boolean>
}

export interface EmulatorOptions {
  readonly name: string
  /** How many loopback ports to reserve for `build`. */
  readonly ports: number
  readonly build: (ports: ReadonlyArray<number>) => EmulatorCommand
  /** Default: `EMULATOR_START_TIMEOUT_MS` or 60 seconds. */
  readonly startTimeout?: Duration.Input | undefined
  /** Time between SIGTERM and SIGKILL at teardown. Default 5 seconds. */
  readonly stopGrace?: Duration.Input | undefined
}

export interface RunningEmulator {
  readonly name: string
  readonly pid: number
  readonly ports: ReadonlyArray<number>
  readonly logFile: string
  /** From spawn to the first successful probe. */
  readonly startupMillis: number
}

/**
 * Waits and timeouts here are real time even inside `it.effect`, whose TestClock only moves when a test adjusts
 * it (a layer built in a test, such as `BigtableEmulator.layerIsolated`, would otherwise wait forever).
 */
const liveClock = Clock.Clock.defaultValue()
const withLiveClock = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, Clock.Clock, liveClock)

const logsDir = (): string => path.join(emulatorsDir(), "logs")
const pidsDir = (): string => path.join(emulatorsDir(), "pids")

/** A port that was free on 127.0.0.1 a moment ago (bind to port 0, read it, close). */
export const freePort: Effect.Effect<number, EmulatorError> = Effect.callback<number, EmulatorError>((resume) => {
  const server = net.createServer()
  server.unref()
  server.once(
    "error",
    (cause) =>
      resume(Effect.fail(new EmulatorError({ emulator: "-", reason: "Spawn", message: "no free port", cause })))
  )
  server.listen({ host: "127.0.0.1", port: 0, exclusive: true }, () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Succeeds with `true` when a TCP connection to 127.0.0.1:port opens within a second. */
export const tcpProbe = (port: number): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    const done = (ok: boolean) => {
      socket.removeAllListeners()
      socket.destroy()
      resume(Effect.succeed(ok))
    }
    socket.setTimeout(1000)
    socket.once("connect", () => done(true))
    socket.once("timeout", () => done(false))
    socket.once("error", () => done(false))
    return Effect.sync(() => socket.destroy())
  })

/** Succeeds with `true` when `GET url` answers 200 within two seconds. */
export const httpProbe = (url: string): Effect.Effect<boolean> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(2000)]) })
      await response.arrayBuffer()
      return response.status === 200
    },
    catch: () => false
  }).pipe(Effect.catch(() => Effect.succeed(false)))

/** The last `maxLines` lines of a log file, or a note that it cannot be read. */
export const logTail = (file: string, maxLines = 60): string => {
  try {
    const size = fs.statSync(file).size
    const length = Math.min(size, 64 * 1024)
    const buffer = Buffer.alloc(length)
    const fd = fs.openSync(file, "r")
    try {
      fs.readSync(fd, buffer, 0, length, size - length)
    } finally {
      fs.closeSync(fd)
    }
    const lines = buffer.toString("utf8").split("\n")
    return lines.slice(-maxLines).join("\n")
  } catch (cause) {
    return `<cannot read ${file}: ${String(cause)}>`
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Process groups: kill, exit hook, stale pidfiles

/** Running children of this process: pid -> pidfile. */
const live = new Map<number, string>()
let exitHookInstalled = false
let spawnCount = 0

const killGroup = (pid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pid, signal)
  } catch {
    // ESRCH: the group is gone
  }
}

const killAll = (): void => {
  for (const [pid, pidFile] of live) {
    killGroup(pid, "SIGKILL")
    fs.rmSync(pidFile, { force: true })
  }
  live.clear()
}

const installExitHook = (): void => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // Last resort when the test process exits without running teardown (process.exit, uncaught error).
  process.once("exit", killAll)
  // The children are in their own process groups, so a Ctrl-C or a CI timeout does not reach them.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      killAll()
      // re-raise when nobody else handles it, so the default action (exit) still happens
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
    })
  }
}

interface PidFile {
  readonly pid: number
  readonly owner: number
  readonly name: string
  /** The command line, as /proc/<pid>/cmdline shows it with spaces for NULs. */
  readonly cmdline: string
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const cmdline = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim()
  } catch {
    return ""
  }
}

/**
 * Kills emulators whose owning test process died without tearing them down (for instance after SIGKILL).
 * Only a process whose command line is still the recorded one is killed, so a recycled PID is safe.
 */
export const reapStale: Effect.Effect<ReadonlyArray<string>> = Effect.sync(() => {
  const reaped: Array<string> = []
  let entries: Array<string> = []
  try {
    entries = fs.readdirSync(pidsDir())
  } catch {
    return reaped
  }
  for (const entry of entries) {
    const file = path.join(pidsDir(), entry)
    try {
      const record = JSON.parse(fs.readFileSync(file, "utf8")) as PidFile
      if (isAlive(record.owner)) continue
      if (isAlive(record.pid) && cmdline(record.pid) === record.cmdline) {
        killGroup(record.pid, "SIGKILL")
        reaped.push(`${record.name} (pid ${record.pid})`)
      }
      fs.rmSync(file, { force: true })
    } catch {
      fs.rmSync(file, { force: true })
    }
  }
  return reaped
})

// ---------------------------------------------------------------------------------------------------------------
// Start and stop

interface Spawned {
  readonly child: ChildProcess
  readonly pid: number
  readonly logFile: string
  readonly pidFile: string
  readonly exited: Deferred.Deferred<string>
  readonly startedAt: number
}

const spawnChild = (name: string, cmd: EmulatorCommand): Effect.Effect<Spawned, EmulatorError> =>
  Effect.suspend(() => {
    fs.mkdirSync(logsDir(), { recursive: true })
    fs.mkdirSync(pidsDir(), { recursive: true })
    const pendingLog = path.join(logsDir(), `${name}-pending-${process.pid}-${++spawnCount}.log`)
    const fd = fs.openSync(pendingLog, "a")
    fs.writeSync(fd, `# harness: ${cmd.command} ${cmd.args.join(" ")}\n`)
    let child: ChildProcess
    try {
      child = spawn(cmd.command, [...cmd.args], {
        cwd: cmd.cwd,
        env: { ...process.env, ...cmd.env },
        detached: true,
        stdio: ["ignore", fd, fd]
      })
    } catch (cause) {
      fs.closeSync(fd)
      return Effect.fail(
        new EmulatorError({
          emulator: name,
          reason: "Spawn",
          message: `cannot spawn ${cmd.command}: ${String(cause)}`,
          logFile: pendingLog,
          cause
        })
      )
    }
    fs.closeSync(fd) // the child holds its own copy
    const exited = Deferred.makeUnsafe<string>()
    child.once("exit", (code, signal) => Deferred.doneUnsafe(exited, Effect.succeed(`code=${code} signal=${signal}`)))
    return Effect.callback<Spawned, EmulatorError>((resume) => {
      const onSpawn = () => {
        child.off("error", onError)
        const pid = child.pid as number
        const logFile = path.join(logsDir(), `${name}-${pid}.log`)
        fs.renameSync(pendingLog, logFile)
        const pidFile = path.join(pidsDir(), `${name}-${pid}.json`)
        const record: PidFile = { pid, owner: process.pid, name, cmdline: [cmd.command, ...cmd.args].join(" ") }
        fs.writeFileSync(pidFile, JSON.stringify(record))
        live.set(pid, pidFile)
        installExitHook()
        child.unref()
        resume(Effect.succeed({ child, pid, logFile, pidFile, exited, startedAt: performance.now() }))
      }
      const onError = (cause: Error) => {
        child.off("spawn", onSpawn)
        resume(Effect.fail(
          new EmulatorError({
            emulator: name,
            reason: "Spawn",
            message: `cannot spawn ${cmd.command}: ${cause.message}`,
            logFile: pendingLog,
            cause
          })
        ))
      }
      child.once("spawn", onSpawn)
      child.once("error", onError)
    })
  })

const stopChild = (spawned: Spawned, grace: Duration.Input): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (!Deferred.isDoneUnsafe(spawned.exited)) {
      killGroup(spawned.pid, "SIGTERM")
      const stopped = yield* Deferred.await(spawned.exited).pipe(Effect.timeoutOption(grace))
      if (Option.isNone(stopped)) {
        const after = Duration.format(Duration.fromInputUnsafe(grace))
        fs.appendFileSync(spawned.logFile, `\n# harness: still running ${after} after SIGTERM, sending SIGKILL\n`)
      }
      // Also when the leader is gone: processes it started may still run in its group.
      killGroup(spawned.pid, "SIGKILL")
      yield* Deferred.await(spawned.exited).pipe(Effect.timeoutOption("5 seconds"))
    }
    live.delete(spawned.pid)
    fs.rmSync(spawned.pidFile, { force: true })
  })

const describeFailure = (name: string, spawned: Spawned, what: string): string =>
  `${name}: ${what}\n--- last lines of ${spawned.logFile} ---\n${logTail(spawned.logFile)}\n--- end of log ---`

const defaultTimeout = (): Duration.Input => {
  const ms = Number(process.env.EMULATOR_START_TIMEOUT_MS)
  return Number.isFinite(ms) && ms > 0 ? Duration.millis(ms) : Duration.seconds(60)
}

const PORT_IN_USE = /address already in use|EADDRINUSE|Errno 98/i

const startOnce = (options: EmulatorOptions): Effect.Effect<RunningEmulator, EmulatorError, Scope.Scope> =>
  Effect.gen(function*() {
    const ports: Array<number> = []
    for (let i = 0; i < options.ports; i++) {
      let port = yield* freePort
      while (ports.includes(port)) port = yield* freePort
      ports.push(port)
    }
    const cmd = options.build(ports)
    const grace = options.stopGrace ?? Duration.seconds(5)
    const spawned = yield* Effect.acquireRelease(
      spawnChild(options.name, cmd),
      (s) => withLiveClock(stopChild(s, grace))
    )
    const timeout = options.startTimeout ?? defaultTimeout()

    const waitReady = Effect.gen(function*() {
      while (true) {
        if (Deferred.isDoneUnsafe(spawned.exited)) {
          const status = yield* Deferred.await(spawned.exited)
          killGroup(spawned.pid, "SIGKILL") // whatever it left in its group
          return yield* new EmulatorError({
            emulator: options.name,
            reason: "Exited",
            message: describeFailure(options.name, spawned, `exited before it was ready (${status})`),
            logFile: spawned.logFile
          })
        }
        if (yield* cmd.probe) return
        yield* Effect.sleep("100 millis")
      }
    })
    yield* waitReady.pipe(
      withLiveClock,
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () =>
          Effect.fail(
            new EmulatorError({
              emulator: options.name,
              reason: "Timeout",
              message: describeFailure(
                options.name,
                spawned,
                `not ready after ${Duration.format(Duration.fromInputUnsafe(timeout))} (ports ${ports.join(", ")})`
              ),
              logFile: spawned.logFile
            })
          )
      }),
      withLiveClock
    )
    return {
      name: options.name,
      pid: spawned.pid,
      ports,
      logFile: spawned.logFile,
      startupMillis: Math.round(performance.now() - spawned.startedAt)
    }
  })

/**
 * Starts an emulator on free loopback ports and waits until its probe succeeds. The process is stopped when the
 * scope closes. A start that dies because a port was taken in between is retried twice with new ports.
 */
export const start = (options: EmulatorOptions): Effect.Effect<RunningEmulator, EmulatorError, Scope.Scope> => {
  const attempt = (left: number): Effect.Effect<RunningEmulator, EmulatorError, Scope.Scope> =>
    startOnce(options).pipe(
      Effect.catchTag("EmulatorError", (error) =>
        left > 0 && error.reason === "Exited" && PORT_IN_USE.test(error.message)
          ? attempt(left - 1)
          : Effect.fail(error))
    )
  return attempt(2)
}
