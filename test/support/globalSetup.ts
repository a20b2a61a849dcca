/**
 * vitest globalSetup: installs the emulators when needed, starts Bigtable, GCS and BigQuery emulators once for
 * the whole run on free loopback ports, hands their endpoints to the tests (`inject("bigtableEmulator")`, ...,
 * or the `BigtableEmulator`/`GcsEmulator`/`BigQueryEmulator` layers), and stops them by PID at the end.
 *
 * An emulator that cannot start fails the run with the tail of its log, in CI and locally alike; nothing is
 * skipped. `EMULATORS=off` starts none (for a quick unit-test loop): the emulator layers then fail with a message.
 *
 * Environment: EMULATOR_START_TIMEOUT_MS (default 60000), EMULATORS_AUTO_INSTALL=0 (fail instead of installing),
 * EMULATORS_KEEP_DATA=1 (keep `.emulators/runs/run-*` after the run), EMULATORS_DIR (see install.sh).
 */
import { Cause, Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { emulatorsDir, ensureInstalled } from "./emulatorInstall.ts"
import { reapStale } from "./emulatorProcess.ts"
import { type AllEndpoints, startAll } from "./emulators.ts"

const say = (line: string): void => {
  process.stderr.write(`[emulators] ${line}\n`)
}

const LOG_RETENTION_MS = 3 * 24 * 60 * 60 * 1000

const pruneOldLogs = Effect.sync(() => {
  const dir = path.join(emulatorsDir(), "logs")
  let names: Array<string> = []
  try {
    names = fs.readdirSync(dir)
  } catch {
    return
  }
  const cutoff = performance.timeOrigin + performance.now() - LOG_RETENTION_MS
  for (const name of names) {
    const file = path.join(dir, name)
    try {
      if (fs.statSync(file).mtimeMs < cutoff) fs.rmSync(file, { force: true })
    } catch {
      // raced with another run
    }
  }
})

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Removes `runs/run-<pid>-*` folders of test processes that are gone (killed before their teardown). */
const pruneOrphanRuns = (runs: string) =>
  Effect.sync(() => {
    let names: Array<string> = []
    try {
      names = fs.readdirSync(runs)
    } catch {
      return
    }
    for (const name of names) {
      const owner = Number(/^run-(\d+)-/.exec(name)?.[1])
      if (Number.isInteger(owner) && owner !== process.pid && !isAlive(owner)) {
        fs.rmSync(path.join(runs, name), { recursive: true, force: true })
      }
    }
  })

const describe = (endpoints: AllEndpoints): string =>
  [
    `bigtable ${endpoints.bigtable.emulatorHost} (pid ${endpoints.bigtable.pid}, ready in ${endpoints.bigtable.startupMillis} ms)`,
    `gcs ${endpoints.gcs.url} (pid ${endpoints.gcs.pid}, ready in ${endpoints.gcs.startupMillis} ms)`,
    `bigquery rest ${endpoints.bigquery.restUrl} grpc ${endpoints.bigquery.grpcHost}:${endpoints.bigquery.grpcPort} ` +
    `(pid ${endpoints.bigquery.pid}, ready in ${endpoints.bigquery.startupMillis} ms)`
  ].join("; ")

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The Google clients in the test workers must never probe the GCE metadata server (workers inherit this).
  process.env.METADATA_SERVER_DETECTION ??= "none"

  if (process.env.EMULATORS === "off") {
    say("EMULATORS=off: no emulator started; integration tests will fail")
    return async () => {}
  }

  const scope = await Effect.runPromise(Scope.make())
  let runDir: string | undefined
  const teardown = async (): Promise<void> => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (runDir !== undefined && process.env.EMULATORS_KEEP_DATA !== "1") {
      fs.rmSync(runDir, { recursive: true, force: true })
    }
  }

  const program = Effect.gen(function*() {
    const reaped = yield* reapStale
    if (reaped.length > 0) say(`killed emulators left by an earlier run: ${reaped.join(", ")}`)
    yield* pruneOldLogs
    const manifest = yield* ensureInstalled
    const runs = path.join(emulatorsDir(), "runs")
    yield* pruneOrphanRuns(runs)
    fs.mkdirSync(runs, { recursive: true })
    runDir = fs.mkdtempSync(path.join(runs, `run-${process.pid}-`))
    return yield* startAll(manifest, runDir).pipe(Scope.provide(scope))
  })

  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    await teardown()
    const error = Cause.squash(exit.cause)
    const message = error instanceof Error ? error.message : String(error)
    const where = process.env.CI === "true" ? "CI" : "local run"
    throw new Error(`[emulators] cannot start the emulators (${where}); no test was run.\n${message}`)
  }
  const endpoints = exit.value
  say(`started: ${describe(endpoints)}; logs in ${path.join(emulatorsDir(), "logs")}`)

  project.provide("bigtableEmulator", endpoints.bigtable)
  project.provide("gcsEmulator", endpoints.gcs)
  project.provide("bigQueryEmulator", endpoints.bigquery)

  return async () => {
    await teardown()
    say("stopped all emulators")
  }
}
