/**
 * A private PostgreSQL server per test run, started like the emulators (test/support/emulatorProcess.ts): the
 * binaries from scripts/postgres/install.sh (which installs Debian's `postgresql` when they are missing), `initdb`
 * into a fresh folder under the git-ignored `.tmp/postgres/`, a free loopback port, a readiness probe
 * (`pg_isready`), and a teardown that stops the server by PID and removes its folder.
 *
 * PostgreSQL refuses to run as root: when the tests run as root, `initdb` and `postgres` run as the `postgres`
 * user (through `setpriv`, which execs, so the PID the harness kills is the postmaster itself). The server trusts
 * every loopback connection (`--auth=trust`), listens on 127.0.0.1 only, has no Unix socket, and runs with
 * `fsync=off`: its data is thrown away at the end. It sets neither `idle_session_timeout` nor
 * `idle_in_transaction_session_timeout` (both off, as PostgreSQL ships): `effect/cluster`'s `SqlRunnerStorage`
 * sets `idle_session_timeout` to the shard lock expiry on each runner's lock session itself, which is how a
 * frozen runner's advisory locks go (docs/cluster.md).
 */
import { Context, Data, Effect, Layer, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { repoRoot } from "./emulatorInstall.ts"
import * as EmulatorProcess from "./emulatorProcess.ts"

export class PostgresError extends Data.TaggedError("PostgresError")<{
  readonly message: string
}> {}

export interface PostgresEndpoint {
  readonly host: string
  readonly port: number
  readonly database: string
  readonly username: string
  readonly pid: number
  readonly logFile: string
  readonly startupMillis: number
  readonly dataDir: string
}

const LOOPBACK = "127.0.0.1"
const DATABASE = "postgres"
const USER = "postgres"

interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const run = (command: string, args: ReadonlyArray<string>): Effect.Effect<Ran> =>
  Effect.callback<Ran>((resume) => {
    const child = spawn(command, [...args], { cwd: repoRoot(), stdio: ["ignore", "pipe", "pipe"] })
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    child.once("error", (cause) => resume(Effect.succeed({ code: 127, stdout: "", stderr: String(cause) })))
    child.once("close", (code) =>
      resume(Effect.succeed({
        code: code ?? 1,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8")
      })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const isRoot = (): boolean => process.getuid?.() === 0

/** `command args` as the `postgres` user when this process is root (PostgreSQL refuses root), else as is. */
const asServerUser = (command: string, args: ReadonlyArray<string>): [string, Array<string>] =>
  isRoot()
    ? ["setpriv", ["--reuid", USER, "--regid", USER, "--init-groups", "--", command, ...args]]
    : [command, [...args]]

/** The folder of `initdb` and `postgres`, installing Debian's package first when they are missing. */
export const binDir: Effect.Effect<string, PostgresError> = Effect.gen(function*() {
  const result = yield* run("bash", [path.join(repoRoot(), "scripts", "postgres", "install.sh")])
  const dir = result.stdout.trim().split("\n").at(-1) ?? ""
  if (result.code !== 0 || dir === "" || !fs.existsSync(path.join(dir, "postgres"))) {
    return yield* new PostgresError({
      message: `scripts/postgres/install.sh failed (exit ${result.code}):\n${result.stderr}${result.stdout}`
    })
  }
  return dir
})

const runDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const parent = path.join(repoRoot(), ".tmp", "postgres")
    fs.mkdirSync(parent, { recursive: true })
    const dir = fs.mkdtempSync(path.join(parent, `run-${process.pid}-`))
    return dir
  }),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const chownToServerUser = (dir: string): Effect.Effect<void, PostgresError> =>
  isRoot()
    ? run("chown", ["-R", `${USER}:${USER}`, dir]).pipe(
      Effect.flatMap((r) =>
        r.code === 0 ? Effect.void : Effect.fail(new PostgresError({ message: `chown ${dir}: ${r.stderr}` }))
      )
    )
    : Effect.void

/** Starts a private server; it is stopped (SIGTERM, then SIGKILL) and its folder removed when the scope closes. */
export const start: Effect.Effect<PostgresEndpoint, PostgresError | EmulatorProcess.EmulatorError, Scope.Scope> = Effect
  .gen(function*() {
    const bin = yield* binDir
    const dir = yield* runDir
    const dataDir = path.join(dir, "data")
    yield* chownToServerUser(dir)
    const [initdb, initArgs] = asServerUser(path.join(bin, "initdb"), [
      "-D",
      dataDir,
      "-U",
      USER,
      "--auth=trust",
      "--encoding=UTF8",
      "--no-sync",
      "--no-instructions"
    ])
    const init = yield* run(initdb, initArgs)
    if (init.code !== 0) {
      return yield* new PostgresError({ message: `initdb failed (exit ${init.code}):\n${init.stderr}` })
    }
    const running = yield* EmulatorProcess.start({
      name: "postgres",
      ports: 1,
      stopGrace: "3 seconds",
      build: ([port]) => {
        const [command, args] = asServerUser(path.join(bin, "postgres"), [
          "-D",
          dataDir,
          "-p",
          String(port),
          "-c",
          `listen_addresses=${LOOPBACK}`,
          "-c",
          "unix_socket_directories=",
          "-c",
          "fsync=off",
          "-c",
          "synchronous_commit=off",
          "-c",
          "full_page_writes=off",
          "-c",
          "max_connections=200"
        ])
        return {
          command,
          args,
          probe: run(path.join(bin, "pg_isready"), ["-q", "-h", LOOPBACK, "-p", String(port), "-d", DATABASE])
            .pipe(Effect.map((r) => r.code === 0))
        }
      }
    })
    return {
      host: LOOPBACK,
      port: running.ports[0] ?? 0,
      database: DATABASE,
      username: USER,
      pid: running.pid,
      logFile: running.logFile,
      startupMillis: running.startupMillis,
      dataDir
    }
  })

/** A private PostgreSQL server for the tests of one layer. */
export class PostgresServer extends Context.Service<PostgresServer, PostgresEndpoint>()("test/PostgresServer") {
  static readonly layer: Layer.Layer<PostgresServer, PostgresError | EmulatorProcess.EmulatorError> = Layer.effect(
    PostgresServer,
    start
  )
}
